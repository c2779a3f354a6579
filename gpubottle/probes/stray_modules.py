"""Modules the model's forward calls that are no part of the model (model_calls.py's counted step,
whose module hooks see inner calls too): a layer built inside forward (`head = nn.Linear(1024, 10)`
then `head(h)`) or kept outside it, not assigned to the model. Their parameters are in no
optimizer (it took the model's when it was built), so backward fills gradients nothing applies and
they never train; one built inside forward also starts from fresh random weights at every call and
pays its initialisation each step. Measured here: an nn.Linear(1024, 1024) built in forward,
10.0-11.3 ms a step; built once in __init__ (and then trained), 5.1-7.3 ms.

A stray is told by its module not being among the outermost modules' own (their .modules()), and
built in the step by its weak reference being dead when the counted step ends (nothing kept it)."""

from __future__ import annotations

import weakref
from typing import Any

from gpubottle.probes.sites import caller_site

STRAY_MIN = 1024  # parameter elements requiring grad outside the optimizers, recorded from


class StrayModules:
    def __init__(self, optimizers: Any) -> None:
        self.optimizers = optimizers
        self.known: set[int] = set()  # the outermost modules' own modules, and strays seen
        self.held: set[int] | None = None  # the optimizers' parameters, read once
        self.trained = 0  # their elements
        self.found: list[list[Any]] = []  # [class, line, elements, trained, input_grad, weakref]

    def outer(self, module: Any) -> None:
        """An outermost module's first call: its modules are the model's."""
        self.known.update(id(m) for m in module.modules())

    def pre(self, module: Any, args: Any, grad_on: bool) -> None:
        if id(module) in self.known or not grad_on:
            return
        self.known.update(id(m) for m in module.modules())  # (its own layers: counted with it)
        if self.held is None:
            params = [p for o in list(self.optimizers or ()) for g in o.param_groups for p in g["params"]]
            self.held = {id(p) for p in params}
            self.trained = sum(p.numel() for p in params)
        if not self.held:
            return  # no optimizer: a hand-written update may read any gradient
        free = sum(p.numel() for p in module.parameters() if p.requires_grad and id(p) not in self.held)
        if free < STRAY_MIN:
            return
        first = next((a for a in args if hasattr(a, "requires_grad")), None)
        self.found.append([type(module).__name__, caller_site(), free, self.trained,
                           bool(getattr(first, "requires_grad", False)), weakref.ref(module)])

    def rows(self) -> list[list[Any]]:
        """The untrained rows of model_calls' record: [class, line, elements, trained, whole,
        input_grad, built in the step]."""
        return [[name, site, free, trained, 1, int(input_grad), int(ref() is None)]
                for name, site, free, trained, input_grad, ref in self.found]
