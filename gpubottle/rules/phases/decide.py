"""The run outside its training step, from the run's account: saves that stop the loop (how often to
save instead), the script's own start-up work (what to cache or import later), and evaluation
passes (the input rules' decision on their own evidence, said for the run)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from gpubottle import vocabulary as v
from gpubottle.analysis.work_kinds import CHILDREN_WAIT, COMPILING, SPAWNING, function_and_kind, remedy
from gpubottle.evidence import Evidence, LoaderInfo, PhaseEvidence, Recompiled
from gpubottle.evidence.account import (
    CHECKPOINT,
    EVAL,
    PREPASS,
    SAMPLES_READ,
    STARTUP,
    TRAIN,
)
from gpubottle.rules import thresholds as th
from gpubottle.rules.common import entry, untimed_model_share


# Parts of start-up no change to the script removes: Python, torch (and the modules torch imports
# on first use), gpubottle's own; and what no stack sample named ("other": nothing to advise on).
def _fixed(part: str) -> bool:
    """Start-up the script's own code cannot cache or defer: Python, torch's imports, the GPU's
    context, the first batch (its workers' start is the input rules'), a wait for processes it
    started (their work)."""
    return (part in ("Python and gpubottle starting", "gpubottle installing its probes", "other",
                     CHILDREN_WAIT)  # (their work, not the script's: no cache removes it)
            or part == "import torch"
            or part.startswith(("import torch.", "first batch", "CUDA initialisation",
                                "the first steps")))


def wall(ev: Evidence) -> float | None:
    total = sum(a.seconds for a in ev.account)
    return total if total > 0 else None


def kind_of(what: str | None) -> str | None:
    """The library kind of work in an account entry's `what` ("<function>: <kind>" or "<kind>"),
    where one was told (analysis/gaps.py: spent_on)."""
    if what is None:
        return None
    kind = function_and_kind(what)[1]
    return kind if remedy(kind) else None


def nice(n: float) -> int:
    """A round interval at least n: 10, 20, 25, 50, 100, 200, 250, 500, 1000..."""
    step = 10 ** max(0, math.floor(math.log10(max(n, 1))))
    for m in (1, 2, 2.5, 5, 10):
        if m * step >= n and float(m * step).is_integer():
            return int(m * step)
    return int(10 * step)


@dataclass
class SaveLess:
    """Save every `new_every` steps instead of `every`: the saves would cost `kept_s`."""

    every: float
    new_every: int
    kept_s: float
    run_s: float  # the run's wall time then


@dataclass
class Checkpoints:
    total_s: float  # the run's wall time
    seconds: float  # spent saving
    count: int
    what: str | None  # torch.save, safetensors ...
    where: str | None  # the call site that saved the most
    bytes: int | None  # a save's size (median)
    every: float | None  # a save every this many training steps
    others: list[tuple[str, float]] = field(default_factory=list)  # other call sites, their seconds
    save_less: SaveLess | None = None
    big_state: bool = False  # 64 MiB or more a save beyond what resuming needs (or not known)
    state_bytes: int | None = None  # of a save, the model's weights and the optimizers' state

    @property
    def share(self) -> float:
        return self.seconds / self.total_s

    @property
    def per_save_s(self) -> float:
        return self.seconds / self.count


def decide_checkpoints(ev: Evidence) -> Checkpoints | None:
    total = wall(ev)
    e = entry(ev, CHECKPOINT)
    if total is None or e is None or not e.count:
        return None
    if e.seconds / total < th.CHECKPOINT_MIN_SHARE or e.seconds < th.CHECKPOINT_FLOOR_S:
        return None
    every = (int(e.every_steps) if e.every_steps and float(e.every_steps).is_integer()
             else e.every_steps)
    others = sorted(e.parts.items(), key=lambda kv: -kv[1])[1:3]
    # A large save is said to hold more than resuming needs where it does: the file beyond the
    # model's weights and the optimizers' state the probes saw in it (all of it where unknown).
    extra = e.bytes - e.state_bytes if e.bytes and e.state_bytes is not None else e.bytes
    d = Checkpoints(total, e.seconds, e.count, e.what, e.where, e.bytes, every or None, others,
                    big_state=bool(extra and extra >= th.CHECKPOINT_BIG_BYTES),
                    state_bytes=e.state_bytes)
    if every:
        target = th.CHECKPOINT_TARGET_SHARE * (total - e.seconds)
        factor = max(2, math.ceil(e.seconds / max(target, 1e-9)))
        new_every = nice(every * factor)
        kept = e.seconds * every / new_every
        d.save_less = SaveLess(every, new_every, kept, total - e.seconds + kept)
    return d


@dataclass
class StartUp:
    total_s: float
    seconds: float  # start-up, launch to the first batch
    parts: dict[str, float]  # what start-up spent, by part
    own_s: float  # of it, the script's own work (what a change to the script removes)
    top: str  # the largest part of that own work
    top_s: float
    site: str | None  # where the script does it
    loader: LoaderInfo | None = None  # the DataLoader whose workers were starting, if that is it
    worker_bytes: int | None = None  # ...and what each of them holds beyond a bare spawned worker
    compiled_at: str | None = None  # the line that called torch.compile, where the probes saw it
    train_s: float | None = None  # the training steps' time after start-up, and how many
    train_steps: int | None = None
    recompiled: list[Recompiled] = field(default_factory=list)  # functions compiled again

    @property
    def is_compiling(self) -> bool:
        return self.top == COMPILING

    @property
    def is_import(self) -> bool:
        return self.top.startswith("import ")

    @property
    def is_spawning(self) -> bool:
        return self.top == SPAWNING

    @property
    def is_prepass(self) -> bool:
        return self.top.startswith((PREPASS, SAMPLES_READ))

    @property
    def own_share(self) -> float:
        return self.own_s / self.total_s


def decide_startup(ev: Evidence) -> StartUp | None:
    total = wall(ev)
    e = entry(ev, STARTUP)
    if total is None or e is None:
        return None
    if untimed_model_share(ev) is not None:  # its "start-up" is the model's computation (untimed.py)
        return None
    own = {k: s for k, s in e.parts.items() if not _fixed(k)}
    own_s = sum(own.values())
    if own_s / total < th.STARTUP_MIN_SHARE or own_s < th.STARTUP_FLOOR_S:
        return None
    name, top = max(own.items(), key=lambda kv: kv[1])
    spawned = [lo for lo in ev.loaders if lo.num_workers and lo.start_method in ("spawn", "forkserver")]
    loader = max(spawned, key=lambda lo: lo.batches, default=None) if name == SPAWNING else None
    own_worker = ev.memory.per_worker_private_peak_bytes if ev.memory is not None else None
    copy = own_worker - th.SPAWNED_WORKER_BASE_BYTES if loader is not None and own_worker else None
    train = entry(ev, TRAIN)
    return StartUp(total, e.seconds, dict(e.parts), own_s, name, top, e.part_sites.get(name), loader,
                   copy if copy and copy > 0 else None,
                   next((m.site for m in ev.math_in_use if m.kind == v.MATH_COMPILE), None),
                   train.seconds if train is not None else None, train.count if train is not None else None,
                   list(ev.recompiled))


@dataclass
class EvalContext:
    """An evaluation loader's passes, which its input finding is said for."""

    phase: PhaseEvidence
    loader: LoaderInfo  # the evaluation's DataLoader
    total_s: float  # the run's wall time
    waited_s: float  # of the passes, waiting for batches

    @property
    def run_share(self) -> float:
        return self.waited_s / self.total_s

    @property
    def share(self) -> float:
        return self.phase.seconds / self.total_s

    @property
    def per_pass_s(self) -> float:
        return self.phase.seconds / max(1, self.phase.passes)

    @property
    def restarts_workers(self) -> bool:
        """Workers that do not persist start again for every one of several passes."""
        return not self.loader.persistent_workers and self.phase.passes > 1

    def run_s(self, eval_step_s: float) -> tuple[float, float]:
        """(the passes' time, the run's) with each evaluation batch taking `eval_step_s`."""
        new_eval = len(self.phase.steps.durations_s) * eval_step_s
        return new_eval, self.total_s - self.phase.seconds + new_eval


def eval_contexts(ev: Evidence) -> list[EvalContext]:
    """The evaluation phases large enough to diagnose, each with a loader."""
    total = wall(ev)
    if total is None:
        return []
    return [EvalContext(ph, ph.loader, total, sum(ph.steps.input_wait_s)) for ph in ev.phases
            if ph.seconds / total >= th.PHASE_MIN_SHARE and ph.loader is not None]


@dataclass
class ModelEval:
    """An evaluation without a DataLoader (evidence/account.py's entry with a function)."""

    total_s: float
    seconds: float
    count: int
    function: str
    what: str | None
    where: str | None  # the loop's call of the function
    every: float | None  # training steps between passes
    new_every: int | None = None  # evaluate this often instead...
    kept_s: float | None = None  # ...and the passes would take this long
    run_s: float | None = None  # ...and the run this long
    calls: int | None = None  # the model's calls in a pass, one sample at a time (else None)...
    rows: int | None = None  # ...and the rows they took
    site: str | None = None  # the line that calls the model
    capped: bool = False  # `calls` is where counting stopped: more in the pass

    @property
    def share(self) -> float:
        return self.seconds / self.total_s

    @property
    def per_pass_s(self) -> float:
        return self.seconds / max(1, self.count)


def decide_model_evals(ev: Evidence) -> list[ModelEval]:
    """Evaluations without a DataLoader that take PHASE_MIN_SHARE of the run or more; with the
    interval that brings them to EVAL_TARGET_SHARE of the rest (their time scales with the passes)."""
    total = wall(ev)
    if total is None:
        return []
    out = []
    for e in ev.account:
        if e.phase != EVAL or e.function is None or not e.count or e.seconds / total < th.PHASE_MIN_SHARE:
            continue
        every = int(e.every_steps) if e.every_steps and float(e.every_steps).is_integer() else e.every_steps
        d = ModelEval(total, e.seconds, e.count, e.function, e.what, e.where, every)
        if (e.model_calls and e.model_rows is not None and e.model_calls >= th.EVAL_MANY_CALLS
                and e.model_rows / e.model_calls <= th.EVAL_FEW_ROWS and not e.model_feeds_back):
            d.calls, d.rows, d.site = e.model_calls, e.model_rows, e.model_site
            d.capped = bool(e.model_calls_capped)
        if every and e.count > 1:
            factor = max(2, math.ceil(e.seconds / max(th.EVAL_TARGET_SHARE * (total - e.seconds), 1e-9)))
            # At least two passes left in a run as long as this one (a short run is still a sample).
            fits = [n for n in (nice(every * f) for f in range(factor, 1, -1)) if n * 2 <= every * e.count]
            if fits:
                new_every = fits[0]
                d.new_every = new_every
                d.kept_s = e.seconds * every / new_every
                d.run_s = total - e.seconds + d.kept_s
        out.append(d)
    return out
