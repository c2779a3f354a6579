"""Modules the model's forward calls that are no part of the model (model_calls.py's counted step,
whose module hooks see inner calls too): a layer built inside forward (`head = nn.Linear(1024, 10)`
then `head(h)`), or kept where nn.Module does not register it (`self.hidden = [nn.Linear(...) for
...]`, a plain list). Their parameters are in no optimizer (it took the model's when it was built),
so backward fills gradients nothing applies and they never train; one built inside forward also
starts from fresh random weights at every call and pays its initialisation each step. Measured
here: an nn.Linear(1024, 1024) built in forward, 10.0-11.3 ms a step; built once in __init__ (and
then trained), 5.1-7.3 ms.

A stray is told by its module not being among the outermost modules' own (their .modules()), and
built in the step by its weak reference being dead when the counted step ends (nothing kept it);
one that lives is looked for in the model's plain lists, tuples and dicts (its holder)."""

from __future__ import annotations

import weakref
from typing import Any

from gpubottle.probes.optimizer_info import held_params
from gpubottle.probes.sites import caller_site

STRAY_MIN = 1024  # parameter elements requiring grad outside the optimizers, recorded from


def _holder(outers: list[Any], module: Any) -> str | None:
    """'Net.hidden (a plain list)' where one of the model's modules keeps `module` in a plain list,
    tuple or dict attribute (which nn.Module does not register)."""
    for outer in outers:
        for m in outer.modules():
            for name, value in vars(m).items():
                items = value.values() if isinstance(value, dict) else value if isinstance(
                    value, (list, tuple)) else ()
                if any(x is module for x in items):
                    return f"{type(m).__name__}.{name} (a plain {type(value).__name__})"
    return None


class StrayModules:
    def __init__(self, optimizers: Any) -> None:
        self.optimizers = optimizers
        self.known: set[int] = set()  # the outermost modules' own modules, and strays seen
        self.outers: list[Any] = []
        self.held: set[int] | None = None  # the optimizers' parameters, read once
        self.trained = 0  # their elements
        # line -> [class, elements, trained, input_grad, weak references, holder]
        self.found: dict[str | None, list[Any]] = {}

    def outer(self, module: Any) -> None:
        """An outermost module's first call: its modules are the model's."""
        self.outers.append(module)
        self.known.update(id(m) for m in module.modules())

    def pre(self, module: Any, args: Any, grad_on: bool) -> None:
        if id(module) in self.known or not grad_on:
            return
        self.known.update(id(m) for m in module.modules())  # (its own layers: counted with it)
        if self.held is None:
            params = held_params(self.optimizers)
            self.held = {id(p) for p in params}
            self.trained = sum(p.numel() for p in params)
        if not self.held:
            return  # no optimizer: a hand-written update may read any gradient
        free = sum(p.numel() for p in module.parameters() if p.requires_grad and id(p) not in self.held)
        if free < STRAY_MIN:
            return
        site = caller_site()
        entry = self.found.get(site)
        if entry is None:  # (one line calling several: the layers of a list, each its own)
            first = next((a for a in args if hasattr(a, "requires_grad")), None)
            entry = self.found[site] = [type(module).__name__, 0, self.trained,
                                        bool(getattr(first, "requires_grad", False)), [],
                                        _holder(self.outers, module)]
        entry[1] += free
        entry[4].append(weakref.ref(module))

    def rows(self) -> list[list[Any]]:
        """The untrained rows of model_calls' record: [class, line, elements, trained, whole,
        input_grad, built in the step, no part of the model, modules, holder]."""
        return [[name, site, free, trained, 1, int(input_grad), int(all(r() is None for r in refs)), 1,
                 len(refs), holder]
                for site, (name, free, trained, input_grad, refs, holder) in self.found.items()]
