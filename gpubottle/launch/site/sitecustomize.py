"""Run by every Python started below a `gpubottle run` (this folder is put first on PYTHONPATH).

It does nothing unless the process is a rank that torchrun (or another launcher) started straight
from the script's process: then gpubottle.launch.ranks re-executes it through the bootstrap, with
that rank's probes. Then the sitecustomize this one shadows, if any, runs as it would have.
Everything fails open: a rank that cannot be instrumented runs as it is.
"""

import os
import sys


def _gpubottle_rank() -> None:
    if "GPUBOTTLE_RANKS" not in os.environ or "GPUBOTTLE_CHILD" in os.environ:
        return
    if os.environ.get("RANK") is None or "--multiprocessing-fork" in sys.orig_argv:
        return
    from gpubottle.launch.ranks import exec_rank  # only here: nothing else pays for the import

    exec_rank()


def _shadowed() -> None:
    """Run the next sitecustomize on sys.path (a distribution's, a virtualenv's)."""
    import importlib.machinery
    import importlib.util

    here = os.path.dirname(os.path.abspath(__file__))
    path = [p for p in sys.path if os.path.abspath(p or ".") != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", path)
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    sys.modules["sitecustomize"] = module
    spec.loader.exec_module(module)


try:
    _gpubottle_rank()
except Exception as exc:  # fail open: the rank runs uninstrumented, and says why
    print(f"gpubottle: rank {os.environ.get('RANK')} runs without probes: {exc!r}", file=sys.stderr)
_shadowed()
