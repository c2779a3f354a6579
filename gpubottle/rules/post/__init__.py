"""What runs over all the findings once every concern has spoken: in the user's terms (a
framework's knobs, a command-line option or config key), the fixes `--try-fixes` timed, and the
report's notes."""
