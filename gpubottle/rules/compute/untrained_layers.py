"""untrained-layer: a layer the model's forward calls that is no part of the model
(probes/stray_modules.py), so the optimizer, built from the model's parameters, never holds its
weights and they never train:

- built anew at every call (`head = nn.Linear(512, 10)` then `head(h)` in forward): its weights
  start from fresh random values each step, and every step pays their initialisation and their
  gradients. Measured on this VM (an nn.Linear(1024, 1024)): 10.0 ms a step, 5.1 ms built once in
  __init__ and trained (tests/check_fixes).
- kept where nn.Module does not register it (`self.hidden = [nn.Linear(256, 256) for _ in
  range(3)]`, a plain list): the same layers every step, random as built, their gradients computed
  for nothing. nn.ModuleList registers them.

Said whatever else bounds the run: the training does not learn what the script means. (Freezing
them, as for a teacher network, would keep them random: not offered.)"""

from __future__ import annotations

from gpubottle import vocabulary as v
from gpubottle.evidence import Evidence, UntrainedGrads
from gpubottle.report import Fact, Finding, Fix


def _once(u: UntrainedGrads) -> str:
    """`head = nn.Linear(1024, 10)` in forward -> `self.head = nn.Linear(1024, 10)` in __init__."""
    name, eq, value = (u.built_code or "").partition("=")
    name = name.strip()
    if eq and name.isidentifier() and not value.startswith("="):
        return f"self.{name} = {value.strip()}"
    return f"self.{u.name.lower()} = {u.name}(...)"


def _rebuilt(u: UntrainedGrads) -> Finding:
    at = u.site or "a line not known"
    made = f"built at {u.built_at}, " if u.built_at else ""
    summary = (f"the forward builds a new {u.name} at every call ({u.built_at or u.site}): its "
               f"{u.elements:,} weights start from fresh random values each step and never train")
    facts = [Fact(f"{u.name} called at {at} is no part of the model and no optimizer holds its "
                  f"{u.elements:,} weights (the optimizers train {u.trained:,}); it was built during "
                  "the counted step and gone at its end", "untrained_layer_elements", u.elements)]
    fix = Fix(text=(f"build it once, in the model's __init__ ({_once(u)}), and call that in forward; "
                    "build the optimizer after the model, so that it holds its weights (it then "
                    f"updates them too: time it). Now {made}called at {at}"),
              where=u.built_at or u.site)
    return Finding(v.UNTRAINED_LAYER, "warning", None, summary, facts, [fix])


def _unregistered(u: UntrainedGrads) -> Finding:
    at = u.site or "a line not known"
    layers = f"{u.modules} {u.name} layers" if u.modules > 1 else f"a {u.name}"
    kept = f" kept in {u.holder}" if u.holder else ""
    summary = (f"{layers}{kept}, called at {at}, are no part of the model: no optimizer holds "
               f"their {u.elements:,} weights, so they never train" if u.modules > 1 else
               f"{layers}{kept}, called at {at}, is no part of the model: no optimizer holds its "
               f"{u.elements:,} weights, so they never train")
    facts = [Fact(f"the forward calls {layers}{kept} that the model does not register (not in "
                  f"model.parameters(), which the optimizers' {u.trained:,} elements came from); "
                  "each step's backward computes their gradients for nothing",
                  "untrained_layer_elements", u.elements)]
    attr = (u.holder or "").split(" ", 1)[0].rsplit(".", 1)[-1]
    container = "nn.ModuleDict" if "plain dict" in (u.holder or "") else "nn.ModuleList"
    how = (f"self.{attr} = {container}(...) around what it holds" if attr else
           "an attribute of the model (self.name = ...), or an nn.ModuleList holding them")
    fix = Fix(text=(f"register them in the model: {how}, so that model.parameters() (and so the "
                    "optimizer, built after the model) and state_dict() include them; they then "
                    "train, and the optimizer's step updates them too, so a step can end slower: "
                    "what changes is that the training learns them. Where they are meant to stay "
                    "fixed, register them all the same and call requires_grad_(False) on them"),
              where=u.held_at or u.site)
    return Finding(v.UNTRAINED_LAYER, "warning", None, summary, facts, [fix])


def untrained_layers(ev: Evidence) -> list[Finding]:
    calls = ev.model_calls
    return [_rebuilt(u) if u.built else _unregistered(u)
            for u in (calls.untrained if calls is not None else ()) if u.built or u.unregistered]
