"""One thin module per command: parse, call the parts, render."""
