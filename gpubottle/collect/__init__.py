"""Collectors that run in the supervisor (the gpubottle process), outside the script."""
