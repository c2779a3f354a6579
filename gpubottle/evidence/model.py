"""Evidence about the model and its optimizers as the script drives them: optimizers rebuilt and
how they step, one counted step's module calls (a per-sample loop, a repeated forward, dense
embedding tables, gradients no optimizer uses), and the faster math already in use."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from gpubottle.serialisable import Serialisable


@dataclass
class OptimizerRebuilt(Serialisable):
    """One line of the script built an optimizer again and again while the steps ran: each new one
    starts with empty state (Adam's moment estimates, SGD's momentum buffers)."""

    cls: str | None  # torch.optim.adam.Adam
    site: str | None  # the user's line that built them
    builds: int  # optimizers built there
    steps: int  # the run's steps (the clock's)
    same_params: int = 0  # of them, built over the parameters the one before there updated


@dataclass
class OptimizerWork(Serialisable):
    """The training's optimizer step: its time in the measured steps and how torch runs it
    (probes/optimizer_info.py): a per-tensor loop, multi-tensor (foreach) or fused kernels."""

    cls: str | None  # torch.optim.adamw.AdamW
    site: str | None  # the user's line that built it
    tensors: int | None  # parameter tensors it updates
    impl: str | None  # for-loop | foreach | fused; None: its own step (LBFGS, third-party)
    can_fuse: bool  # fused=True would run here (a fused step, parameters on a device that has it)
    step_s: float  # a measured step's time in step() calls: their sum, the median over steps
    calls: int = 1  # step() calls a training step (a GAN's two optimizers: 2)
    groups: int | None = None  # its parameter groups (foreach and fused batch within one only)


@dataclass
class DenseTable(Serialisable):
    """An nn.Embedding (or EmbeddingBag) the counted step looked rows up in, with a dense gradient:
    its backward fills, and its optimizer updates, every row however few the batch touched."""

    name: str  # the user's name for it (Rec.emb)
    rows: int
    dim: int
    touched: int  # distinct rows the counted step's lookups read
    share: float  # of its optimizer's parameters (elements); 0 where no optimizer updates it
    optimizer: str | None  # that optimizer's class (Adam)


@dataclass
class Scripted(Serialisable):
    """The module the step calls is TorchScript (torch.jit.script or torch.jit.trace made it):
    torch.compile refuses such a module and compiles the eager one it was made from
    (analysis/scripted.py)."""

    how: str  # torch.jit.script | torch.jit.trace | TorchScript (its line not found)
    site: str | None  # the user's line that made it
    eager: str | None  # what that line made it from, as written there (`Net()`, `model`)
    name: str | None  # the name that line gives the result (`model`, `self.net`)


@dataclass
class CallSite(Serialisable):
    """A line of the script calling a module outermost in the counted step (probes/model_calls.py):
    its calls, the most rows one of them took, autograd's mode, and the seconds in them."""

    site: str | None
    module: str | None  # the user's name for it (`enc`), else its class
    calls: int
    rows: int
    grad: bool  # autograd was on at every call
    seconds: float


@dataclass
class ModelCallCount(Serialisable):
    """One counted training step's outermost calls of the module called most (probes/model_calls.py)."""

    module: str | None  # its class
    site: str | None  # the user's line that called it
    calls: int  # in the step
    rows: int | None  # the median leading dimension of their first tensor argument
    called: list[str] = field(default_factory=list)  # the user's names for the modules with
    # parameters the step called outermost (`net`, `self.encoder`), in the order first called
    # Called again on the tensor an earlier call took: [that call's line, the repeat's line].
    repeat: list[str | None] | None = None
    repeat_grad: bool | None = None  # autograd recorded the repeat
    tables: list[DenseTable] = field(default_factory=list)
    untrained: list[UntrainedGrads] = field(default_factory=list)
    again: BackwardAgain | None = None
    cells: list[CellLoop] = field(default_factory=list)
    per_sample_inner: list[InnerPerSample] = field(default_factory=list)
    penalty: ParamPenalty | None = None  # ops on the parameters one by one, feeding the loss
    scripted: Scripted | None = None  # it is TorchScript
    # Its input comes back from its own output through the loop (an agent's state after acting on
    # the policy's sample: analysis/loop_source.feeds_back): its calls cannot be merged into one.
    feeds_back: bool = False
    # The loop around its call takes gradients in its body too (`torch.autograd.grad` a sample:
    # per-sample gradients, clipped one by one as DP-SGD does): analysis/loop_source.grads_per_call
    grads_per_call: bool = False
    sites: list[CallSite] = field(default_factory=list)  # each line's outermost calls, most time first
    counted_s: float | None = None  # the counted step's seconds (its hooks' cost in them)
    repeat_updated: bool | None = None  # its weights changed between the repeat's two calls
    siblings: list[SiblingModules] = field(default_factory=list)
    sparse: list[SparseInput] = field(default_factory=list)  # arguments almost all zeros
    bags: list[BagLookups] = field(default_factory=list)  # embedding lookups reduced one sample at a time
    slice_loss: SliceLoss | None = None  # a loss over the output's slices one by one, summed
    # What the repeat's line computes flows into backward() (analysis/loop_source.flows_into): its
    # graph is used. With its weights updated in between, a forward of its own (a GAN's generator
    # step through the discriminator its own step just changed), not a repeat.
    repeat_backward: bool = False


@dataclass
class BackwardAgain(Serialisable):
    """The counted step ran backward more than once through one forward of the module (losses
    backpropagated one by one, `retain_graph=True` on all but the last: probes/model_calls.py)."""

    name: str  # the user's name for it (`trunk`), else its class
    site: str | None  # the line that called it
    calls: int  # its forward calls in the step
    passes: int  # backward passes that accumulated into its parameters
    elements: int  # its trainable parameter elements
    pass_sites: list[str | None] = field(default_factory=list)  # each pass's backward() line
    backward_share: float | None = None  # backward calls' time, of the measured steps' (None: unknown)


@dataclass
class CellLoop(Serialisable):
    """An RNN cell the counted step called many times, a Python loop over time steps
    (probes/inner_calls.py, analysis/forward_loops.py)."""

    cell: str  # its class (LSTMCell)
    name: str | None  # the user's name for it (`self.cell`)
    site: str | None  # the line that calls it
    calls: int  # in the counted step
    input_size: int
    hidden_size: int
    forward_share: float | None  # its forwards' time, of the counted step's (backward not seen)
    # The sequence each call takes the next position of (`e` for `self.cell(e[:, t], (h, c))`), read
    # from the line's source; None where the input may come from the loop's own work (a decoder).
    sequence: str | None = None
    axis: int | None = None  # the sequence's axis the loop walks (None: not known)


@dataclass
class InnerPerSample(Serialisable):
    """A module the model's forward calls once per sample of its batch, from a Python loop
    (`for i in range(x.size(0)): feats.append(self.enc(x[i]))`: probes/inner_calls.py)."""

    module: str  # its class
    name: str  # the user's name for it (`self.enc`)
    site: str | None  # the line that calls it
    calls: int  # in the counted step
    sample_shape: list[int]  # each call's input (one sample of the batch)
    batch_shape: list[int]  # the outermost call's input


@dataclass
class SiblingModules(Serialisable):
    """Many modules of one class the forward calls one by one from one line (a depthwise
    convolution as a list of Conv1d(1, 1, k), heads on the same features: probes/inner_calls.py)."""

    module: str  # their class
    name: str  # the user's name for them on that line (`conv`)
    site: str | None  # the line
    modules: int  # how many
    calls: int  # their calls in the counted step
    input_shape: list[int] | None  # the first one's input
    same_input: bool  # all took the very same tensor
    alike: bool  # their parameters' shapes are all alike
    config: dict[str, Any] = field(default_factory=dict)  # the first one's (in_channels, groups...)
    share: float | None = None  # the main thread's samples at that line (None: not sampled)
    one_storage: bool = False  # all inputs lay in one tensor's storage (slices of it, or it)


@dataclass
class SliceLoss(Serialisable):
    """A loss taken slice by slice of the model's output in a Python loop and summed for backward()
    (`for t in range(T): loss = loss + crit(logits[:, t, :], y[:, t])`: analysis/slice_losses.py):
    each slice's backward writes a gradient as large as the whole output."""

    site: str  # the loop's `for`
    header: str  # as written
    tensor: str  # the name sliced (`logits`)
    index: str  # the slice as written (`logits[:, t, :]`)
    dim: int  # the dimension the loop's index takes
    function: str | None = None  # the function of the script it sits in, where not the loop's own
    out_shape: list[int] | None = None  # the model's output's shape (the counted step's first call)
    call: str | None = None  # the function each slice is passed to (`crit`)
    target: str | None = None  # the other name it takes a slice of (`y` of `y[:, t]`)


@dataclass
class BagLookups(Serialisable):
    """An nn.Embedding the forward calls once per sample from one line, each lookup then reduced
    (`self.emb(torch.tensor(ids)).mean(0)` for each sample's ids: analysis/forward_loops.py)."""

    name: str  # the user's name for it (`self.emb`)
    site: str | None  # the line
    calls: int  # in the counted step
    mode: str  # "mean" or "sum"


@dataclass
class SparseInput(Serialisable):
    """A large 2-D argument of the model's call that is almost all zeros (probes/sparse_args.py), and
    where its forward multiplies it (analysis/sparse_inputs.py)."""

    module: str  # the called module's class
    site: str | None  # the call's line
    position: int  # the argument's position
    shape: list[int]
    density: float  # its share of nonzeros
    argument: str | None = None  # its text at the call (`A_hat`)
    multiplied_at: str | None = None  # the forward's line that multiplies it (file:line)


@dataclass
class UntrainedGrads(Serialisable):
    """A module the counted step called with autograd on, whose parameters (some or all) no
    optimizer holds, yet the step's backward computed their gradients (probes/model_calls.py): a
    teacher's or target network's forward outside no_grad, or a frozen part left requiring grad."""

    name: str  # the user's name for it (`teacher`, `self.target`), else its class
    site: str | None  # the line that called it
    elements: int  # parameter elements backward filled a gradient for, no optimizer holding them
    trained: int  # parameter elements the script's optimizers hold
    whole: bool  # none of its trainable parameters is in an optimizer (a teacher), else a part
    # Its input requires grad: the loss's gradient passes through it to what trains (a perceptual
    # loss's feature network), so no_grad would cut it; only freezing its parameters is safe.
    input_grad: bool = False
    # No part of the model, built anew at every call of the forward that calls it (`head =
    # nn.Linear(...)` in forward: probes/stray_modules.py): its weights start random each step and
    # never train. `built_at`: the line that builds it, read from the forward's source.
    built: bool = False
    built_at: str | None = None
    built_code: str | None = None  # that line's text (`head = nn.Linear(1024, 10)`)
    # No part of the model and kept across steps: held where nn.Module does not register it
    # (`holder`: 'Net.hidden (a plain list)', assigned at `held_at`); `modules` of them at `site`.
    unregistered: bool = False
    modules: int = 1
    holder: str | None = None
    held_at: str | None = None
    # Not a module's weights: the data `name`'s input is taken from, made requiring grad
    # (probes/data_leaves.py): its shape; `elements` is its size.
    data_shape: list[int] | None = None


@dataclass
class Recompiled(Serialisable):
    """A function torch.compile compiled again (probes/recompiles.py): dynamo's guards failed."""

    function: str
    site: str | None  # where it is defined
    times: int
    reason: str  # the first reason dynamo gave ("tensor 'x' size mismatch at index 1 ...")


@dataclass
class MathInUse(Serialisable):
    """A faster-math setting the script already uses (probes/math_modes.py): no fix offers it."""

    kind: str  # vocabulary.MATH_AUTOCAST, MATH_COMPILE
    detail: str  # "cpu bfloat16"; torch.compile's mode
    site: str | None


@dataclass
class CheckpointRecompute(Serialisable):
    """Activation checkpointing over a window of steps (probes/checkpointing.py): the checkpointed
    blocks' forwards, which backward runs again, as a share of those steps' time."""

    share: float  # their seconds over the window's steps' seconds
    per_step_s: float  # the median step's seconds in them
    calls: int  # checkpoint() calls a step (the median)
    steps: int  # steps in the window
    site: str | None  # the user's line that called checkpoint() (or led to it)
    via: str | None  # the library function that called it for the user
    blocks: list[str] = field(default_factory=list)  # what it wrapped (`Block`)


@dataclass
class ParamPenalty(Serialisable):
    """A line outside the model's forwards that runs small ops on the optimizer's parameters one
    tensor at a time with autograd on, feeding the loss: a penalty written over them (one counted
    step, probes/param_ops.py; the line's source read for its form)."""

    site: str | None
    tensors: int  # its ops on parameters a step (a walk over N tensors: about N)
    ops: int  # all its ops a step
    forward_s: float  # their seconds in the counted step (backward adds about as many ops again)
    functions: list[str] = field(default_factory=list)  # the functions on parameters (pow, abs)
    squared: bool = False  # a sum of squares (L2): what weight_decay adds to the gradients
