"""Probes that run inside the script's process. Each fails open: a probe that breaks is recorded as
missing evidence and the script goes on exactly as it would without gpubottle."""
