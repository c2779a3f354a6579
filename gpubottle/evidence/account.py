"""Evidence about the whole run, launch to exit: where its wall time went, and the phases outside the
training step that can be diagnosed like it (an evaluation loader that starves)."""

from __future__ import annotations

from dataclasses import dataclass, field

from gpubottle.evidence.host import CpuEvidence, LoaderInfo, StackEvidence, StepEvidence
from gpubottle.serialisable import Serialisable

# The phases of a run's account, in the order a run goes through them.
STARTUP = "startup"  # launch to the loop's first batch or backward: imports, datasets, workers
TRAIN = "train"  # the training steps, less what is accounted below
EVAL = "eval"  # evaluation passes: a loader's epochs with no backward, under no_grad
CHECKPOINT = "checkpoint"  # torch.save, safetensors, torch.distributed.checkpoint
BETWEEN_STEPS = "between-steps"  # long gaps inside the loop that none of the above explains
TEARDOWN = "teardown"  # after the last step to the process's exit
OWN = "gpubottle"  # gpubottle's own cost: its heavier probes, hooks and samplers
HOOKS_PART = "hooks in the script"  # of OWN: the probes' calls, as they timed themselves
# Of STARTUP: batches drawn before the training's first, no backward after them (class weights,
# the inputs' statistics computed through the loader); said with their count in parentheses.
PREPASS = "a pass over the DataLoader before training"
# ...or over the dataset itself, indexed sample by sample (`[ds[i][1] for i in range(len(ds))]` for
# class weights): every sample loaded once more than the training does, not through a loader.
SAMPLES_READ = "the dataset's samples read one by one before training"
PHASES = (STARTUP, TRAIN, EVAL, CHECKPOINT, BETWEEN_STEPS, TEARDOWN, OWN)
# The TRAIN entry's `what` where the loop never trains (no backward, no optimizer): inference.
INFERENCE = "inference"


@dataclass
class AccountEntry(Serialisable):
    """One phase's share of the run's wall time (a phase may have one entry per loader)."""

    phase: str
    seconds: float
    share: float  # of the run's wall time
    where: str | None = None  # file:line of the code that spends it
    what: str | None = None  # what it is: "DataLoader at val.py:40", "torch.save", "log_metrics"
    count: int | None = None  # steps, evaluation passes, saves
    every_steps: float | None = None  # training steps between two passes or saves
    bytes: int | None = None  # checkpoints: bytes written per save (where the file could be seen)
    # Its split, seconds by part: train {input, forward, backward, optimizer, other, ...};
    # startup {interpreter, import torch, <function>, ...}; checkpoint {file:line of each call}.
    parts: dict[str, float] = field(default_factory=dict)
    # Where the parts' time goes in code (a part -> file:line), when stacks could tell.
    part_sites: dict[str, str] = field(default_factory=dict)
    # An evaluation the script runs without a DataLoader (model.eval() ... model.train()): the
    # function that ran it, and `where` is the loop's call of that function.
    function: str | None = None
    # Checkpoints: of `bytes`, the model's parameters and buffers and the optimizers' state (what
    # resuming needs; None where the probes could not tell).
    state_bytes: int | None = None
    # Between-steps: the main thread's stack samples in the gaps, and the share the work they name
    # (`what`) has of the steps' own samples: theirs alone where that is small (a sort at each
    # epoch's start), the steps' usual work where not (steps preempted beside busy programs).
    samples: int | None = None
    in_steps_share: float | None = None
    called_at: str | None = None  # between-steps: the loop's line that calls the function `what` names
    # An evaluation without a DataLoader: its first pass's calls of the module put in eval(), and
    # the rows they took (probes/modes.py; None where not counted: a compiled model, older runs).
    model_calls: int | None = None
    model_rows: int | None = None
    model_site: str | None = None  # the line that calls it
    model_calls_capped: bool | None = None  # counting stopped before the pass ended: more calls
    # The call takes what a later line of its loop made from its output (an agent acting in eval()
    # mode): its calls cannot be one call on a batch (analysis/loop_source.feeds_back).
    model_feeds_back: bool | None = None
    # Between-steps: the Python loop over a tensor's rows, one at a time, most of the gaps' samples
    # are in (analysis/row_loops.py): its file:line, its header and that share.
    row_loop: str | None = None
    row_loop_text: str | None = None
    row_loop_share: float | None = None


@dataclass
class PhaseEvidence(Serialisable):
    """A phase outside the training step with a loop of its own (an evaluation loader's passes),
    measured like the training loop so the same rules diagnose it: its batches are its steps."""

    phase: str
    seconds: float  # wall time of the phase in the run
    passes: int
    steps: StepEvidence  # its batches as steps, fetch to fetch
    loader: LoaderInfo | None = None
    cpu: CpuEvidence | None = None  # over the phase's spans only
    stacks: StackEvidence | None = None
    every_steps: float | None = None  # training steps between two passes
    start_up_s: float = 0.0  # of `seconds`, what was workers starting for each pass


@dataclass
class EvalModeTraining(Serialisable):
    """Training steps taken in eval mode: after an eval() of a module that holds dropout or batch
    norm and whose parameters an optimizer updates, with no train() before them (probes/modes.py;
    analysis/eval_mode.py). Named by the eval() that left the most such steps."""

    steps: int  # optimizer steps taken in eval mode
    of_steps: int  # the optimizer steps recorded
    site: str | None  # the user's eval() call (model.eval())
    function: str | None  # the user function that made it (evaluate)
    called_at: str | None  # the user's line that called that function (the loop's call)


@dataclass
class GradsDiscarded(Serialisable):
    """Backward passes whose gradients a zero_grad() cleared before any optimizer step used them,
    over a few steps (probes/zero_grads.py; analysis/zero_grads.py)."""

    backwards: int  # backward passes in the window
    discarded: int  # of them, cleared before a step
    steps: int  # optimizer steps in the window
    site: str | None  # the zero_grad() call that cleared most
    # Nothing cleared the gradients between two steps: the window's first backward added to the
    # gradient the step before it had used (probes/zero_grads.py), at `backward_site`.
    kept: bool = False
    backward_site: str | None = None


@dataclass
class GradsForAnother(Serialisable):
    """A backward whose gradients for one optimizer's parameters that optimizer's zero_grad()
    cleared before its step used them, where another optimizer stepped on that backward (a GAN's
    discriminator loss backpropagated through the generator, whose output went in undetached:
    probes/zero_grads.py's watched parameters, analysis/zero_grads.grads_for_another)."""

    optimizer_site: str | None  # where the optimizer whose gradients were cleared was built
    backward_site: str | None  # the backward that filled them
    zero_site: str | None  # the zero_grad() that cleared them
    cleared: int  # such passes in the window
    passes: int  # backward passes that filled that optimizer's gradients in it
    steps: int  # that optimizer's steps in it
    # Its parameters' gradients came after the other optimizer's in those passes: its network is
    # upstream (fed the other's), so that backward's whole pass through it was for nothing
    upstream: bool = False
