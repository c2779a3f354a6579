"""rebuilt-layer: a layer the model's forward builds anew at every call (`head = nn.Linear(512, 10)`
then `head(h)` in forward), no part of the model (probes/stray_modules.py). Its weights start from
fresh random values each step and are dropped after it, so they never train (the optimizer, built
from the model's parameters, holds none of them), and every step pays their initialisation and
their gradients. Said whatever else bounds the run: the training does not learn what the script
means. Measured on this VM (an nn.Linear(1024, 1024) built in forward): 10.0 ms a step, 5.1 ms with
it built once in __init__ and trained (tests/check_fixes)."""

from __future__ import annotations

from gpubottle import vocabulary as v
from gpubottle.evidence import Evidence, UntrainedGrads
from gpubottle.report import Fact, Finding, Fix


def rebuilt_fix(u: UntrainedGrads) -> Fix:
    at = u.site or "a line not known"
    made = f"built at {u.built_at}, " if u.built_at else ""
    # `head = nn.Linear(1024, 10)` in forward -> `self.head = nn.Linear(1024, 10)` in __init__
    name, eq, value = (u.built_code or "").partition("=")
    name = name.strip()
    once = (f"self.{name} = {value.strip()}" if eq and name.isidentifier() and not value.startswith("=")
            else f"self.{u.name.lower()} = {u.name}(...)")
    return Fix(text=(f"build it once, in the model's __init__ ({once}), and call that in forward; "
                     "build the optimizer after the model, so that it holds its weights (it then "
                     f"updates them too: time it). Now {made}called at {at}"),
               where=u.built_at or u.site)


def rebuilt_layers(ev: Evidence) -> list[Finding]:
    calls = ev.model_calls
    out = []
    for u in calls.untrained if calls is not None else ():
        if not u.built:
            continue
        summary = (f"the forward builds a new {u.name} at every call ({u.built_at or u.site}): its "
                   f"{u.elements:,} weights start from fresh random values each step and never train")
        facts = [Fact(f"{u.name} called at {u.site or 'a line not known'} is no part of the model and no "
                      f"optimizer holds its {u.elements:,} weights (the optimizers train {u.trained:,}); "
                      "it was built during the counted step and gone at its end",
                      "rebuilt_layer_elements", u.elements)]
        out.append(Finding(v.REBUILT_LAYER, "warning", None, summary, facts, [rebuilt_fix(u)]))
    return out
