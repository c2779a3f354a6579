"""gpubottle: why is this PyTorch training run slow, and what should change.

From Python: `with gpubottle.profile(): ...` (gpubottle/api.py); in IPython and Jupyter:
`%load_ext gpubottle`, then `%%gpubottle` around a cell (gpubottle/ipython.py). Both are imported
on first use: `import gpubottle` stays cheap for the command line.
"""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"


def profile(*args: Any, **kwargs: Any) -> Any:
    """Profile a `with` block (or each call of a decorated function) in this process; see
    gpubottle.api.profile for the options."""
    from gpubottle.api import profile as _profile

    return _profile(*args, **kwargs)


def load_ipython_extension(shell: Any) -> None:
    """`%load_ext gpubottle`: registers the `%%gpubottle` cell magic."""
    from gpubottle.ipython import load_ipython_extension as _load

    _load(shell)
