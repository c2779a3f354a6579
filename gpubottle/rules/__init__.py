"""Pure rules from evidence to findings; `diagnose` picks the primary verdict."""

from gpubottle.rules.engine import diagnose

__all__ = ["diagnose"]
