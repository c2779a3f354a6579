"""subnormal-math: the steps slowed once the values a CPU run computes on turned subnormal, or the
model's weights are subnormal (an inference loop's, a checkpoint's).

An x86 CPU takes a slow path for each operation on a subnormal float (below 1.2e-38 in float32);
Adam's first moment of a weight whose gradient stays zero, a dead ReLU unit's, decays into that
range and stays there (probes/subnormals.py). Said where a look at the optimizers' tensors found
them after one that did not, and the steps after it are slower than the steps before it by a share
that matters; torch.set_flush_denormal(True) computes them as zeros. How much of the slowdown it
gives back is a try: the steps' first pace is the bound, not a promise (the model's other work may
have changed too)."""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from gpubottle import vocabulary as v
from gpubottle.evidence import Evidence, SubnormalLook
from gpubottle.report import Fact, Finding, Fix
from gpubottle.rules import thresholds as th
from gpubottle.units import ms, pct


@dataclass
class Subnormal:
    clean: SubnormalLook  # the last look that found (next to) none
    found: SubnormalLook  # the first look after it that found them
    peak: SubnormalLook  # the look with the largest share
    before_s: float  # median step before `clean`
    after_s: float  # median step after `found`
    extra_s: float  # the steps from `clean` on: their time beyond before_s, summed
    share: float  # of the measured steps' time
    site: str | None  # the script's `import torch` (else the optimizer's line)


def _share(look: SubnormalLook) -> float:
    return look.subnormal / look.sampled if look.sampled else 0.0


def decide_subnormal(ev: Evidence) -> Subnormal | None:
    looks = sorted((x for x in ev.subnormals if not x.backward), key=lambda x: x.step)
    if _flushing(ev) or not _costly(ev):
        # The script flushes them already (or its CPU cannot), or this CPU computes on them at
        # full speed (timed by the probe): steps that slowed beside them slowed for another
        # reason (a VAE on an AMD EPYC, 0.98x: 1.8 -> 2.8 ms read as subnormal math).
        return None
    found = next((x for x in looks if _share(x) >= th.SUBNORMAL_MIN_SHARE_SAMPLED), None)
    if found is None:
        return None
    clean = next((x for x in reversed(looks) if x.step < found.step
                  and _share(x) < th.SUBNORMAL_CLEAN_SHARE), None)
    durations = ev.steps.net_durations()
    keep = ev.steps.measured_indices()  # in order
    if clean is None or not keep:
        return None
    # A look follows step N (from 1): durations[N - 1] is that step's.
    before = [durations[i] for i in keep if i < clean.step]
    after = [durations[i] for i in keep if i >= found.step]
    if len(before) < th.SUBNORMAL_MIN_STEPS or len(after) < th.SUBNORMAL_MIN_STEPS:
        return None
    b, a = statistics.median(before), statistics.median(after)
    total = sum(durations[i] for i in keep)
    # From the clean look on: the values turned somewhere between the two looks, and the steps
    # slowed with them (a run of 5-ms steps: its looks at 512 and 768, slower from ~700).
    extra = max(0.0, sum(durations[i] - b for i in keep if i >= clean.step))
    share = extra / total if total > 0 else 0.0
    if a < th.SUBNORMAL_SLOWDOWN * b or share < th.SUBNORMAL_MIN_SHARE:
        return None
    outside = ev.cpu.outside_cores if ev.cpu is not None else None
    if (outside or 0.0) >= th.OUTSIDE_CORES_WARNING:
        return None  # other programs took the cores: cpu-contention says so
    peak = max((x for x in looks if x.step >= found.step), key=_share)
    return Subnormal(clean, found, peak, b, a, extra, share, _site(ev))


def _flushing(ev: Evidence) -> bool:
    return any(m.kind == v.MATH_FLUSH_DENORMAL and m.detail != "off" for m in ev.math_in_use)


def subnormal_weights(ev: Evidence) -> SubnormalLook | None:
    """The look with the largest share of subnormal weights, where it reaches
    SUBNORMAL_WEIGHTS_SHARE: every forward and backward multiplies them, slowly, from the first
    step (a checkpoint whose weights decayed there: no clean look to hold the steps against)."""
    if _flushing(ev) or not _costly(ev):
        return None
    top = max(ev.subnormals, key=lambda x: x.weights_share, default=None)
    return top if top is not None and top.weights_share >= th.SUBNORMAL_WEIGHTS_SHARE else None


def subnormal_backward(ev: Evidence) -> SubnormalLook | None:
    """The backward look with the largest subnormal share of its ops' outputs, where it reaches
    SUBNORMAL_BACKWARD_SHARE: gradients that shrank into that range through the graph (a
    recurrent network's through its time steps), none of them in the tensors the optimizer holds."""
    if _flushing(ev) or not _costly(ev):
        return None
    top = max((x for x in ev.subnormals if x.backward), key=_share, default=None)
    return top if top is not None and _share(top) >= th.SUBNORMAL_BACKWARD_SHARE else None


def _costly(ev: Evidence) -> bool:
    """This CPU computes on subnormal values slowly, as the probe timed it (untimed: assumed so)."""
    timed = [x.penalty for x in ev.subnormals if x.penalty is not None]
    return not timed or max(timed) >= th.SUBNORMAL_PENALTY_MIN


def _site(ev: Evidence) -> str | None:
    return ev.torch_import_site or (ev.optimizer_work.site if ev.optimizer_work is not None else None)


def _what(look: SubnormalLook) -> str:
    kind = look.kind or "the optimizer's tensors"
    return {"parameters": "the parameters", "gradients": "the gradients"}.get(
        kind, f"the optimizer's {kind}" if look.kind else kind)


# The mode is each thread's own: torch's worker threads take it from the thread that starts them,
# so it must be set before the first parallel op starts them. Measured: a Linear(1024, 1024) with
# subnormal weights, 1.2 ms a call on one thread, 186 ms as they are, 1.2 ms flushed; on two
# threads set after the pool started, 94 ms; set before, 0.68 ms.
def _flush(computes: str, small: str, then: str) -> str:
    """The flush, said the same way for each of the three findings: what the CPU then computes as
    zeros, what those values are too small for, and what follows (the bound, or none)."""
    return ("call torch.set_flush_denormal(True) right after `import torch`, before anything computes: "
            f"the CPU then {computes} as zeros, at full speed (they are under 1.2e-38 in float32, far "
            f"too small {small}); it is each thread's own mode, and torch's threads take it only when "
            f"they start after it. {then}")


_FIX = _flush("computes subnormal values", "to matter to the training",
              "The steps before them took {before}, the bound of what it gives back: try it and time it")


def subnormal_fix(d: Subnormal) -> Fix:
    return Fix(text=_FIX.format(before=ms(d.before_s)), where=d.site)


_WEIGHTS_FIX = _flush("multiplies subnormal weights", "to change an output",
                      "How much of each step it gives back is not measured here: try it and time it")


def _weights_finding(ev: Evidence, look: SubnormalLook) -> Finding:
    share = look.weights_share
    return Finding(
        v.SUBNORMAL_MATH, "warning", None,
        f"{pct(share) if share >= 0.01 else f'{share:.2%}'} of the model's weights are subnormal "
        "(below 1.2e-38): an x86 CPU multiplies each of them many times slower, in every forward "
        "and backward",
        [Fact(f"at step {look.step}, {share:.2%} of the parameters' sampled values were subnormal; "
              "a Linear(1024, 1024) on a test machine took 1.24 ms a call, 4.3 ms with 0.1% of its "
              "weights subnormal and 28.7 ms with 1%", "subnormal_weights_share", round(share, 6))],
        [Fix(text=_WEIGHTS_FIX, where=_site(ev))])


_BACKWARD_FIX = _flush("computes subnormal values", "to change a gradient that matters",
                       "A GRU's backward over 200 time steps on a test machine, 13% of its values "
                       "subnormal: 0.92 s, 0.11 s so. Try it and time it")


def _backward_finding(ev: Evidence, look: SubnormalLook) -> Finding:
    share = _share(look)
    return Finding(
        v.SUBNORMAL_MATH, "warning", None,
        f"{pct(share) if share >= 0.01 else f'{share:.2%}'} of the values the backward computes are "
        "subnormal (below 1.2e-38): an x86 CPU computes on each many times slower; gradients that "
        "shrink through many steps of the graph (a recurrent network's time steps) reach that range",
        [Fact(f"in the backward after step {look.step}, {share:.2%} of its ops' sampled output "
              "values were subnormal (none of the optimizers' tensors need be)",
              "subnormal_backward_share", round(share, 6))],
        [Fix(text=_BACKWARD_FIX, where=_site(ev))])


def subnormal_math(ev: Evidence) -> list[Finding]:
    weights = subnormal_weights(ev)
    if weights is not None:
        return [_weights_finding(ev, weights)]
    backward = subnormal_backward(ev)
    if backward is not None:
        return [_backward_finding(ev, backward)]
    d = decide_subnormal(ev)
    if d is None:
        return []
    peak = d.peak
    facts = [
        Fact(f"at step {d.found.step}, {pct(_share(d.found))} of the optimizers' sampled CPU values "
             f"were subnormal (none at step {d.clean.step}); at most {pct(peak.kind_share)} of "
             f"{_what(peak)} (step {peak.step})", "subnormal_share", round(_share(peak), 4)),
        Fact(f"steps took {ms(d.before_s)} before and {ms(d.after_s)} after (medians): "
             f"{d.extra_s:.1f} s more, {pct(d.share)} of the steps' time", "subnormal_slowdown",
             round(d.after_s / d.before_s, 3) if d.before_s > 0 else None),
    ]
    run_s = ev.run.duration_s
    summary = (f"steps slowed from {ms(d.before_s)} to {ms(d.after_s)} once {_what(peak)} turned "
               "subnormal (below 1.2e-38), values an x86 CPU computes on many times slower; a "
               "weight whose gradient stays zero (a dead ReLU unit) decays into that range under "
               "Adam or momentum, and stays")
    return [Finding(v.SUBNORMAL_MATH, th.severity_for_share(d.share), round(d.share, 4), summary, facts,
                    [subnormal_fix(d)], run_share=round(d.extra_s / run_s, 4) if run_s else None)]


def subnormal_first(ev: Evidence) -> list[Fix]:
    """For compute-bound's fixes: before faster math, the values that slow the math now."""
    if subnormal_weights(ev) is None and subnormal_backward(ev) is None and decide_subnormal(ev) is None:
        return []
    return [Fix(text="first let the CPU flush subnormal values: torch.set_flush_denormal(True) right "
                "after `import torch` (subnormal-math, below)", where=_site(ev))]
