"""Which frame built a DataLoader when a library (a decorator's closure, the HF Trainer) did: the
user's call site, never the library's or a decorator's."""

from __future__ import annotations

from pathlib import Path


def test_library_builder_skips_decorator_closures(tmp_path: Path):
    import functools
    import sys

    from gpubottle.probes.sites import library_builder

    lib = tmp_path / "site-packages"
    lib.mkdir()
    (lib / "pl_like.py").write_text(
        "def decorate(f):\n"
        "    def wrapper(*a, **k):\n"
        "        return f(*a, **k)\n"
        "    return wrapper\n\n"
        "def build(f):\n"
        "    return f()\n")
    sys.path.insert(0, str(lib))
    try:
        import pl_like

        via_closure = pl_like.decorate(functools.partial(library_builder))()
        via_library = pl_like.build(functools.partial(library_builder))
    finally:
        sys.path.remove(str(lib))
        sys.modules.pop("pl_like", None)
    assert via_closure is None  # Lightning's wrapper around DataLoader.__init__: the user built it
    assert via_library == "pl_like.build"

