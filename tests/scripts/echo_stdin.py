"""Reads its standard input to the end and prints it back, upper-cased."""
import sys

print(sys.stdin.read().upper(), end="")
