"""Fixes said where the user makes the change: the command-line option, config key, variable or
environment variable that holds a setting, not only the line where DataLoader() receives it.

The rules speak of settings (`num_workers: 0 -> 13`); the probes recorded where each value came
from (probes/knobs.py). This turns a fix's change into the user's own terms, after the rules ran:
`run with --workers 13 (or -j 13)`, `override data.num_workers=13`, `set NUM_WORKERS=13`.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from gpubottle.evidence import Evidence, LoaderInfo
from gpubottle.report import Finding, Fix

THREADS = "torch.set_num_threads"


def _loaders(ev: Evidence) -> list[LoaderInfo]:
    return list(ev.loaders) + [p.loader for p in ev.phases if p.loader is not None]


def _source(ev: Evidence, fix: Fix, key: str) -> dict[str, Any] | None:
    if key == THREADS:
        return ev.cpu.threads_source if ev.cpu is not None else None
    loaders = _loaders(ev)
    lo = next((x for x in loaders if fix.where and x.site == fix.where), None)
    if lo is None and len({x.site for x in loaders if x.batches or x.eval_batches}) == 1:
        lo = next(x for x in loaders if x.batches or x.eval_batches)
    return lo.sources.get(key) if lo is not None else None


def say(key: str, new: Any, src: dict[str, Any]) -> tuple[str, str | None]:
    """(how the user makes `key` = `new`, and the file:line where the value lives)."""
    kind, site = src.get("kind"), src.get("site")
    value = "True" if new is True else "False" if new is False else str(new)
    if kind == "option" and src.get("flag") is not None:  # store_true and the like: no value
        if new == src["flag"]:
            return f"run with {src['option']}", src.get("site")
        return f"run without {src['option']}", src.get("site")
    if kind == "option":
        aliases = src.get("aliases") or []
        also = f" (or {aliases[0]} {value})" if aliases else ""
        default = f"; or change its default ({src.get('default')!r}) at {site}" if site else ""
        return f"run with {src['option']} {value}{also}{default}", site
    if kind == "global":
        at = f", or change it at {site}" if site else ""
        return (f"run with {src['override']}={value} (the script's configurator overrides its "
                f"globals){at}", site)
    if kind == "config":
        if src.get("hydra") or src.get("cli"):  # Hydra, or OmegaConf.from_cli: key=value overrides
            return f"override {src['key']}={value} on the command line (or in the config file)", None
        return f"set {src['key']} to {value} in the config the script reads", None
    if kind == "dataclass":
        at = f" ({site})" if site else ""
        return f"set {src['field']}={value} in {src['class']}{at}", site
    if kind == "env":
        return f"set {src['name']}={value} in the environment (read at {site})", site
    if kind == "variable":
        return f"at {site}: {src['name']} = {value}", site
    if kind == "key":  # a dict written in the script (a config a helper builds the loader from)
        return f"at {site}: set {src['key']!r} to {value} in the dict written there", site
    if kind == "argument":  # passed to a helper that builds the loader
        return f"at {site}: pass {src['name']}={value} (the helper's call)", site
    if kind == "parameter":  # a helper's default, not passed by its caller
        return (f"at {site}: make {src['name']}'s default {value} (or pass {src['name']}={value} "
                "where the helper is called)", site)
    if kind == "default":
        return f"at {site}: add {key}={value} to the call (not passed: torch's default now)", site
    if kind == "expression":  # (the fix keeps pointing at the call: the value is made there)
        return f"at {site}: {key} comes from `{src['text']}`: make it {value}", None
    return f"at {site}: {key}={value}", site


def _said(fix: Fix, ev: Evidence) -> Fix:
    """The fix with each changed setting said where the user changes it (a new Fix: the rule's own
    stays as it was built)."""
    if not fix.change or fix.how is not None:
        return fix
    said, sources = [], {}
    for key, (_old, new) in fix.change.items():
        src = _source(ev, fix, key)
        if src is None or src.get("kind") == "literal":
            continue  # the line the fix points at holds the value: as it is
        sources[key] = src
        said.append(say(key, new, src))
    if not said:
        return fix
    return dataclasses.replace(fix, source=sources, how="; ".join(text for text, _site in said),
                               where=next((site for _text, site in said if site), fix.where))


def in_user_terms(findings: list[Finding], ev: Evidence) -> list[Finding]:
    return [dataclasses.replace(f, fixes=[_said(x, ev) for x in f.fixes]) for f in findings]
