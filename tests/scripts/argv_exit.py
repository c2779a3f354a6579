"""Prints what it was given, then exits with a chosen status."""
import sys

print("name=" + __name__)
print("argv=" + "|".join(sys.argv[1:]))
print("argv0=" + sys.argv[0])
print("to-stderr", file=sys.stderr)
sys.exit(int(sys.argv[1]) if len(sys.argv) > 1 and sys.argv[1].isdigit() else 0)
