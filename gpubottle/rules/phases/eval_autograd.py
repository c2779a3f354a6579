"""eval-autograd: an evaluation whose forward autograd recorded. Nothing runs backward through those
graphs: recording them costs each forward time (on this VM an MLP's evaluation pass took 0.90-0.97 s
with autograd on, 0.59-0.75 s under no_grad), and each graph lives as long as an output of it, so an
evaluation that keeps its outputs for a metric keeps every batch's activations (917 MB peak against
398 MB). What it costs a given model is not predicted: the fix is a try, without a number."""

from __future__ import annotations

from gpubottle import vocabulary as v
from gpubottle.evidence import EvalAutograd, Evidence
from gpubottle.evidence.account import EVAL
from gpubottle.report import Fact, Finding, Fix
from gpubottle.rules import thresholds as th
from gpubottle.units import gib, pct, seconds


def _said(e: EvalAutograd) -> bool:
    return e.share >= th.EVAL_AUTOGRAD_MIN_SHARE or (e.rise_bytes or 0) >= th.EVAL_AUTOGRAD_RISE_BYTES


def _name(e: EvalAutograd) -> str:
    return f"{e.function}()" if e.function and e.function != "<module>" else "the evaluation"


def _finding(e: EvalAutograd) -> Finding:
    passes = f"{e.passes} evaluation{'s' if e.passes != 1 else ''}"
    first = ("the first forward after model.eval()" if e.eval_called else
             "the first forward of the DataLoader's evaluation pass (the script never calls "
             "model.eval())")
    facts = [Fact(f"{first} ran with autograd on in {passes} ({e.site or 'line unknown'}): "
                  f"{seconds(e.seconds)}, {pct(e.share)} of the run", "eval_autograd_share", e.share)]
    if e.rise_bytes is not None and e.rise_bytes >= th.EVAL_AUTOGRAD_RISE_BYTES:
        # (not said to be the graphs': small outputs kept a batch apart fragment the heap as much,
        # with autograd on or off: an inference loop keeping argmax results rose ~270 MiB either way)
        facts.append(Fact(f"the process's memory rose {gib(e.rise_bytes)} within a pass: outputs kept "
                          "with their graphs (for a metric at the end) would hold their batches' "
                          "activations, which torch.no_grad() ends", "eval_autograd_rise_bytes",
                          float(e.rise_bytes)))
    severity = "warning" if th.severity_for_run_share(e.share) != "info" or \
        (e.rise_bytes or 0) >= th.EVAL_AUTOGRAD_RISE_BYTES else "info"
    return Finding(
        v.EVAL_AUTOGRAD, severity, None,
        f"{_name(e)} runs the model with autograd on: each forward records a graph for a backward "
        f"that never runs ({passes}, {pct(e.share)} of the run)",
        facts,
        [Fix(text=f"run {_name(e)} under torch.no_grad(): decorate it with @torch.no_grad(), or wrap its "
                  "loop in `with torch.no_grad():` (torch.inference_mode() where its outputs never "
                  "reach training); no graph is recorded and kept outputs no longer hold activations; "
                  "try it and time it" + ("" if e.eval_called else
                                          "; and call model.eval() before it (model.train() "
                                          "after): dropout and batch norm otherwise evaluate as "
                                          "they train, and batch norm's running statistics learn "
                                          "from the evaluation data"), where=e.site)],
        phase=EVAL)  # no run share: the part of the evaluation's time the fix wins is not known


def eval_autograd(ev: Evidence) -> list[Finding]:
    return [_finding(e) for e in ev.eval_autograd if _said(e)]
