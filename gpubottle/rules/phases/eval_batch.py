"""An evaluation DataLoader of tiny batches (batch_size=1): each pass calls the model once a sample,
and each call pays every layer's fixed cost (Python, dispatch, a kernel launch each on a GPU) for
one sample. Measured on this VM, an MLP evaluated on 2,048 samples every 64 steps: 4 passes 0.84 s
at batch_size=1 (19% of the run, more than the training's 0.31 s), 0.03 s at 128. The fix changes
the evaluation only (its predictions are the same, batched) and promises no number: a try."""

from __future__ import annotations

import statistics

from gpubottle import vocabulary as v
from gpubottle.evidence import Evidence
from gpubottle.report import Fact, Finding, Fix
from gpubottle.rules import thresholds as th
from gpubottle.rules.common import main_loader
from gpubottle.rules.phases.decide import EvalContext, eval_contexts
from gpubottle.units import ms, pct, seconds


def _target(train_batch: int | None) -> int:
    """The training's batch size where it is larger (evaluation keeps no gradients: what a training
    step held fits), else SMALL_BATCH_TO."""
    return max(th.SMALL_BATCH_TO, train_batch or 0)


def _reads(c: EvalContext) -> bool:
    """The passes mostly wait for batches with the loading thread off the CPU (a read a sample, on
    storage or the network): larger batches would wait for the same reads."""
    st = c.phase.steps
    wait = sum(st.input_wait_s)
    cpu = sum(x for x in st.input_wait_cpu_s if x is not None) if st.input_wait_cpu_s else None
    return (c.phase.loader is not None and not c.phase.loader.num_workers and cpu is not None
            and wait >= th.EVAL_READS_WAIT_SHARE * c.phase.seconds and cpu < th.EVAL_READS_CPU_SHARE * wait)


def eval_small_batches(ev: Evidence) -> list[Finding]:
    train = main_loader(ev)
    out = []
    for c in eval_contexts(ev):
        lo, durations = c.loader, c.phase.steps.durations_s
        if (not lo.batch_size or lo.batch_size > th.SMALL_BATCH_MAX or not durations
                or (train is not None and train.id == lo.id)):
            continue
        per = statistics.median(durations)
        if per > th.SMALL_BATCH_STEP_S or _reads(c):
            continue  # a batch whose own work is long: its size is not what sets the pace
        bs, to = lo.batch_size, _target(train.batch_size if train is not None else None)
        ph = c.phase
        where = f"the DataLoader at {lo.site}" if lo.site else "its DataLoader"
        calls = len(durations) / max(1, ph.passes)
        passes = f"{ph.passes} pass{'es' if ph.passes != 1 else ''}"
        summary = (f"evaluation takes {pct(c.share)} of the run ({passes} of {where}) in "
                   f"batches of {bs}: {calls:,.0f} model calls a pass of {ms(per)} each, every one "
                   f"paying the model's per-call cost for {bs} sample{'s' if bs != 1 else ''}")
        facts = [Fact(f"evaluation: {passes}, {seconds(ph.seconds)} of the run's "
                      f"{seconds(c.total_s)}; {len(durations):,} batches of {bs}, {ms(per)} each (median)",
                      "eval_share", round(c.share, 4))]
        of = ("the training's batch size" if train is not None and train.batch_size == to
              else "a batch the model handles as easily")
        fix = Fix(text=(f"evaluate in larger batches: batch_size={bs} -> {to} on the evaluation's "
                        f"DataLoader ({of}; under torch.no_grad() it keeps nothing for a backward, "
                        "so what a training step held fits): the same predictions from "
                        f"{to // bs}x fewer calls. Where samples differ in shape (sequences of "
                        "different lengths), pad each batch in a collate_fn. Measured on a test "
                        "machine, an MLP evaluated on 2,048 samples: 4 passes 0.84 s at "
                        "batch_size=1, 0.03 s at 128; try it and time it"),
                  where=lo.site, change={"batch_size": [bs, to]})
        out.append(Finding(v.EVAL_BOUND, th.severity_for_run_share(round(c.share, 4)), None, summary,
                           facts, [fix], phase="eval", run_share=round(c.share, 4)))
    return out
