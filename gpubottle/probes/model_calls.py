"""How often one training step calls the model: for one step (COUNT_STEP), global forward hooks
count each module's outermost calls (a call made while no other module's forward runs) and the
leading dimension of their first tensor argument. A model called once per sample (a Python loop
over the batch, `model(x[i:i+1])`) shows as batch-size calls of one row; a loss module, a GAN's two
networks or an RNN cell called per timestep (rows = the batch) do not look like that.

A module called again on the very tensor an earlier call took, from another line (`model(x)`
for the loss, then `model(x).argmax(1)` for an accuracy), repeats its forward: the first
REPEAT_INPUTS calls' first tensors are kept as weak references and each call compared with them
(from the same line it is the next step's forward on a batch the script keeps: a fixed synthetic
batch). The counted step runs from
one optimizer step to the next, so a repeat made after the step (the accuracy's) of a batch the
step's forward took comes after it: the hooks stay for the next outermost call (the repeat, or the
next step's forward), and the perturbed span covers it.

An nn.Embedding or EmbeddingBag the step looks rows up in, with a dense gradient (sparse=False, the
default), is recorded with the distinct rows its lookups read and its share of its optimizer's
parameters: its backward fills, and a dense optimizer updates, every row however few the batch
touched (rules/compute: sparse gradients).

A module the step calls with autograd on whose parameters no optimizer holds (a distillation's
teacher, a DQN's target network, a backbone left out of the optimizer but still requiring grad) is
recorded where the step's backward filled their .grad: gradients computed for nothing, read at the
counted step's end (UNTRAINED_MIN elements or more).

A module called once whose parameters' gradients the step accumulated more than once ran backward
through the same forward again: losses backpropagated one by one (`loss_a.backward(retain_graph=
True); loss_b.backward()`), where one backward of their sum gives the same gradients. Counted by a
hook on each parameter the script's optimizer holds (post-accumulate-grad), for the counted step.

A module the forward calls that is no part of the model (built inside forward, or kept outside
it) is recorded with those: its gradients nothing applies (probes/stray_modules.py).

Ops the step runs on the optimizer's parameters outside the forwards with autograd on (a penalty
written over them tensor by tensor) are counted by line for the same step (probes/param_ops.py).

Not where torch.compile is in use (a hook changes what dynamo's guards saw), nor in a trace. The
counted step runs its hooks (about 2 us a module call): it is reported as perturbed and left out of
the step statistics. Fails open: any error removes the hooks and records nothing."""

from __future__ import annotations

import math
import statistics
import threading
import time
import weakref
from typing import Any

from gpubottle.options import ChildConfig
from gpubottle.probes import param_ops
from gpubottle.probes.data_leaves import data_leaves, filled_rows
from gpubottle.probes.hooks import NEVER, Wake
from gpubottle.probes.inner_calls import InnerCalls, first_shape
from gpubottle.probes.modes import _compiled, _tracing, input_rows
from gpubottle.probes.optimizer_info import held_params
from gpubottle.probes.recorder import Recorder
from gpubottle.probes.sites import called_as, caller_site, user_frame
from gpubottle.probes.sparse_args import sparse_args
from gpubottle.probes.stray_modules import StrayModules
from gpubottle.wire import ModelCalls, Perturbed

COUNT_STEP = 3  # hooks on from this step's end to the next's: the 4th step is counted
MAX_NAMES = 6  # the names of the modules a step calls, kept for a fix (torch.compile(net))
REPEAT_INPUTS = 8  # calls of a module whose inputs are kept to tell a repeat
MAX_SITES = 8  # the lines calling the step's outermost modules, timed each (the first so many)
UNTRAINED_MIN = 1024  # parameter elements with gradients no optimizer holds, recorded from (a bias is not)


def _out_shape(output: Any) -> list[int]:
    """The shape of a call's output, or of the first tensor of a tuple it returns (`logits,
    hidden`); [] where none is a tensor."""
    try:
        first = output if hasattr(output, "shape") else next(
            (o for o in output if hasattr(o, "shape")), None) if isinstance(output, (tuple, list)) else None
        return [int(d) for d in first.shape] if first is not None else []
    except Exception:
        return []


def _weights_version(module: Any) -> int | None:
    """The version counter of the module's first trainable parameter: an optimizer's step (any
    in-place update) moves it. None: no trainable parameter."""
    p = next((p for p in module.parameters() if p.requires_grad), None)
    return int(p._version) if p is not None else None


def _drop(handles: list[Any]) -> None:
    """Remove each hook, whatever the others do."""
    for h in handles:
        try:
            h.remove()
        except Exception:
            pass


def _grad_enabled() -> bool:
    import torch

    return bool(torch.is_grad_enabled())


class ModelCallCounter:
    def __init__(self, recorder: Recorder, models: Any = None, optimizers: Any = None) -> None:
        self.recorder = recorder
        self.models = models  # a WeakSet the outermost modules called go into (StepHooks.models)
        self.optimizers = optimizers  # the script's optimizers (StepHooks.optimizers)
        self.tables: dict[int, list[Any]] = {}  # a dense embedding -> [module, rows touched]
        self.outer: list[Any] = []  # the step's outermost modules, for the tables' names
        self.emb_types: tuple[type, ...] = ()
        self.handles: list[Any] = []
        self.local = threading.local()
        self.calls: dict[int, int] = {}
        self.rows: dict[int, list[int]] = {}
        self.out_shapes: dict[int, list[int]] = {}  # module -> its first call's first output's shape
        self.names: dict[int, str] = {}
        self.sites: dict[int, str | None] = {}
        self.called: list[str] = []  # the user's names for the modules with parameters called
        self.user_names: dict[int, str] = {}  # module -> that name
        self.grad_on: dict[int, bool] = {}  # module -> autograd on at its first outermost call
        self.input_grad: dict[int, bool] = {}  # module -> its first tensor argument requires grad
        self.leaves: dict[int, list[Any]] = {}  # module -> data its input is taken from (data_leaves.py)
        # module -> (a weakref to its first tensor argument, the line, its weights' version then)
        self.inputs: dict[int, list[tuple[Any, str | None, int | None]]] = {}
        # The first call's line, the repeat's, autograd on at it, its weights updated in between
        self.repeat: tuple[str | None, str | None, bool, bool] | None = None
        self.pending: ModelCalls | None = None  # the step's record, waiting for the tail call
        self.tail = False
        self.t0 = 0.0
        self.done = False
        self.accumulated: dict[int, int] = {}  # a parameter -> gradients accumulated into it
        self.pass_sites: list[str | None] = []  # where each backward pass over them was called
        self.grad_handles: list[Any] = []
        self.inner: InnerCalls | None = None  # modules the model's forward calls in a loop (inner_calls.py)
        # The loop's own outermost calls, for their siblings only (a deep ensemble's members, each
        # called on the same batch: `[m(x) for m in members]` in the loop)
        self.outer_calls: InnerCalls | None = None
        self.outer_shape: list[int] | None = None  # the current outermost call's first input's shape
        self.param_mode: Any = None  # ops on the parameters outside the forwards (param_ops.py)
        self.strays: StrayModules | None = None  # modules called that are no part of the model
        # Each line's outermost calls in the counted step: site -> [its name, calls, most rows, autograd
        # on at all of them, seconds in them]; and the running call's (site, start)
        self.by_site: dict[str | None, list[Any]] = {}
        self.running: tuple[str | None, float] | None = None
        # [class, line, position, shape, share of nonzeros]: arguments mostly zeros (sparse_args.py)
        self.sparse: list[list[Any]] = []

    def reset(self, cfg: ChildConfig) -> None:
        self._remove()
        self.done = False

    def on_step(self, step: int) -> Wake | None:
        if self.handles:
            if self.tail:
                self._finish()  # no call between the two steps' ends
            else:
                self._report(step)
        elif step == COUNT_STEP and not self.done and self.recorder.active:
            self._arm()
        if self.handles:
            return None  # the counted step ends at the next call
        return NEVER if self.done or step > COUNT_STEP else (COUNT_STEP, math.inf)

    def finish(self, exc: BaseException | None) -> None:
        if self.tail:
            self._finish()
        self._remove()

    def _arm(self) -> None:
        self.done = True
        if _compiled(None):
            return
        from torch.nn.modules.module import register_module_forward_hook, register_module_forward_pre_hook

        self.calls, self.rows, self.names, self.sites, self.called = {}, {}, {}, {}, []
        self.out_shapes = {}
        self.user_names, self.grad_on, self.input_grad, self.leaves = {}, {}, {}, {}
        self.inputs, self.repeat, self.pending, self.tail = {}, None, None, False
        self.tables, self.outer, self.sparse = {}, [], []
        self.by_site, self.running = {}, None
        from torch import nn

        self.emb_types = (nn.Embedding, nn.EmbeddingBag)
        self.inner, self.outer_shape = InnerCalls(), None
        self.outer_calls = InnerCalls()
        self.strays = StrayModules(self.optimizers)
        self.local.depth = 0
        self.t0 = time.monotonic()
        self.handles = [register_module_forward_pre_hook(self._pre)]
        try:  # (always_call: a forward that raises still ends; torch >= 2.0)
            self.handles.append(register_module_forward_hook(self._post, always_call=True))
        except Exception:
            self._remove()
            return
        self._count_accumulations()
        try:
            self.param_mode = param_ops.start(self.optimizers, lambda: getattr(self.local, "depth", 0))
        except Exception:
            self.param_mode = None

    def _param_ops(self) -> list[list[Any]] | None:
        mode, self.param_mode = self.param_mode, None
        try:
            return param_ops.stop(mode) if mode is not None else None
        except Exception:
            return None

    def _count_accumulations(self) -> None:
        """A hook on each trainable parameter of the script's one optimizer, counting the gradients
        accumulated into it (torch >= 2.1; none where there is no optimizer, or several: a GAN's
        passes are each its own network's)."""
        self.accumulated, self.pass_sites = {}, []
        opts = list(self.optimizers or ())
        if len(opts) != 1:
            return
        try:
            for g in opts[0].param_groups:
                for p in g["params"]:
                    if p.requires_grad:
                        self.grad_handles.append(p.register_post_accumulate_grad_hook(self._accumulate))
        except Exception:
            self._remove_grad_hooks()

    def _accumulate(self, param: Any) -> None:
        try:  # (inside the script's backward: nothing may raise into it)
            n = self.accumulated.get(id(param), 0) + 1
            self.accumulated[id(param)] = n
            if n > len(self.pass_sites):  # the first parameter this pass reaches: its backward's line
                self.pass_sites.append(caller_site())
        except Exception:
            pass

    def _remove_grad_hooks(self) -> None:
        handles, self.grad_handles = self.grad_handles, []
        _drop(handles)

    def _remove(self) -> None:
        self._param_ops()
        self._remove_grad_hooks()
        handles, self.handles = self.handles, []
        _drop(handles)

    def _pre(self, module: Any, args: Any) -> None:
        if self.tail:  # the first outermost call after the counted step: a repeat, or not
            try:
                first = next((a for a in args if hasattr(a, "shape")), None)
                if first is not None:
                    self._compare(module, first, record=False)
            except Exception:
                pass
            self._finish()
            return
        depth = getattr(self.local, "depth", 0)
        self.local.depth = depth + 1
        if isinstance(module, self.emb_types):
            self._table(module, args)
        if depth:
            if self.inner is not None:
                try:  # (inside the script's forward: nothing may raise into it)
                    self.inner.pre(module, args, self.outer_shape)
                except Exception:
                    self.inner = None  # (its records are lost; the step's others still go)
            if self.strays is not None:
                try:
                    self.strays.pre(module, args, _grad_enabled())
                except Exception:
                    self.strays = None
            return
        try:
            key = id(module)
            n = self.calls.get(key, 0)
            self.calls[key] = n + 1
            if n == 0:
                if _tracing():
                    self._remove()  # torch.export, jit.trace: not the training's calls
                    return
                self.names[key] = type(module).__name__
                self.outer.append(module)
                if self.strays is not None:
                    self.strays.outer(module)
                self.sites[key] = caller_site()
                self.grad_on[key] = _grad_enabled()
                self._name(module)
                if self.outer_calls is not None:
                    try:
                        self.outer_calls.pre(module, args, None)
                    except Exception:
                        self.outer_calls = None
                mostly_zeros = sparse_args(args)
                if mostly_zeros:
                    self.sparse += [[type(module).__name__, self.sites[key], *a] for a in mostly_zeros]
                if self.models is not None:
                    self.models.add(module)
            first = next((a for a in args if hasattr(a, "shape")), None)
            self._site_pre(module, first, key, n)
            self.outer_shape = first_shape(args)  # (a sample of it is what a per-sample inner call takes)
            if n == 0:
                self.input_grad[key] = bool(getattr(first, "requires_grad", False))
                if self.input_grad[key]:
                    self.leaves[key] = data_leaves(first, UNTRAINED_MIN)
            if first is not None and len(first.shape) and n < 64:
                self.rows.setdefault(key, []).append(input_rows(first))
            if first is not None and n < REPEAT_INPUTS and self.repeat is None:
                self._compare(module, first, record=True)
        except Exception:
            self._remove()

    def _table(self, module: Any, args: Any) -> None:
        """A lookup in an embedding table with a dense gradient: the distinct rows it read."""
        try:
            w = module.weight
            if getattr(module, "sparse", True) or not w.requires_grad or not args:
                return
            entry = self.tables.setdefault(id(module), [module, 0])
            entry[1] += int(args[0].unique().numel())  # (several lookups: summed, at most all)
        except Exception:
            pass

    def _tables(self) -> list[list[Any]] | None:
        """[name, rows, dim, touched, share of its optimizer's elements, optimizer class] each."""
        out = []
        for module, touched in self.tables.values():
            w = module.weight
            if sum(1 for o in self.outer for _, p in o.named_parameters(remove_duplicate=False)
                   if p is w) > 1:
                continue  # tied to an output layer, whose gradient is dense anyway
            name = next((f"{type(o).__name__}.{n}" if n else type(o).__name__ for o in self.outer
                         for n, m in o.named_modules() if m is module), type(module).__name__)
            share, cls = 0.0, None
            for opt in list(self.optimizers or ()):
                params = [p for g in opt.param_groups for p in g["params"]]
                if any(p is w for p in params):
                    share = w.numel() / max(1, sum(p.numel() for p in params))
                    cls = type(opt).__name__
                    break
            rows, dim = (int(w.shape[0]), int(w.shape[1])) if w.dim() == 2 else (int(w.numel()), 1)
            out.append([name, rows, dim, min(rows, int(touched)), round(share, 4), cls])
        return out or None

    def _compare(self, module: Any, first: Any, record: bool) -> None:
        """Whether `first` is the tensor an earlier call of `module` took (a repeat, kept with both
        lines, whether autograd records it and whether its weights were updated in between: a
        GAN's discriminator called on the generator's output for its own step, then again after
        that step for the generator's, computes anew); else keep a weak reference to it."""
        import torch

        seen = self.inputs.setdefault(id(module), [])
        for ref, at, version in seen:
            if ref() is first:
                # From the same line it is the next step's forward on a batch the script keeps (a
                # fixed synthetic batch, every step): not a second forward of this one.
                site = caller_site()
                if site != at:
                    now = _weights_version(module)
                    self.repeat = (at, site, torch.is_grad_enabled(), now is not None and now != version)
                return
        if record:
            try:
                seen.append((weakref.ref(first), caller_site(), _weights_version(module)))
            except TypeError:
                pass  # (an argument no weak reference can name: not compared)

    def _name(self, module: Any) -> None:
        """The user's name for a module with parameters (a loss module has none: not one to
        compile), for the fix that names it."""
        if len(self.called) >= MAX_NAMES or next(module.parameters(), None) is None:
            return
        frame = user_frame()
        name = called_as(module, frame) if frame is not None else None
        del frame
        if name is not None:
            self.user_names[id(module)] = name
        if name is not None and name not in self.called:
            self.called.append(name)

    def _untrained(self) -> list[list[Any]] | None:
        """[name, line, elements with a gradient, elements the optimizers hold, whole, its input
        requires grad] for each module called with autograd on whose gradients backward filled, no
        optimizer holding them."""
        try:
            strays = self.strays.rows() if self.strays is not None else []
            return (self._untrained_modules() or []) + strays or None
        except Exception:
            return None  # (not known: the step's other records still go)

    def _untrained_modules(self) -> list[list[Any]] | None:
        held = held_params(self.optimizers)
        if not held:
            return None  # no optimizer (a hand-written update reads the gradients itself)
        ids = {id(p) for p in held}
        trained = sum(p.numel() for p in held)
        out = []
        for m in self.outer:
            if not self.grad_on.get(id(m)):
                continue
            free = [p for p in m.parameters() if p.requires_grad and id(p) not in ids]
            filled = sum(p.numel() for p in free if p.grad is not None)
            if filled >= UNTRAINED_MIN:
                whole = not any(id(p) in ids for p in m.parameters())
                out.append([self.user_names.get(id(m)) or type(m).__name__, self.sites.get(id(m)), filled,
                            trained, int(whole), int(self.input_grad.get(id(m), False))])
        names = {id(m): self.user_names.get(id(m)) for m in self.outer}
        out += filled_rows(self.leaves, ids, trained, names, self.sites)
        return out or None

    def _backward_again(self) -> list[Any] | None:
        """[the user's name for it, its call's line, its forward calls, the backward passes over its
        parameters, its trainable elements, the lines of those passes] for the module with the most
        trainable elements, where its gradients were accumulated more times than it was called."""
        try:
            if not self.accumulated:
                return None
            best = None
            for m in self.outer:
                params = [p for p in m.parameters() if p.requires_grad and id(p) in self.accumulated]
                size = sum(p.numel() for p in params)
                if size and (best is None or size > best[1]):
                    best = (m, size, max(self.accumulated[id(p)] for p in params))
            if best is None:
                return None
            m, size, passes = best
            calls = self.calls.get(id(m), 0)
            if not calls or passes <= calls:
                return None
            return [self.user_names.get(id(m)) or type(m).__name__, self.sites.get(id(m)), calls, passes,
                    size, list(self.pass_sites[:passes])]
        except Exception:
            return None

    def _site_pre(self, module: Any, first: Any, key: int, n: int) -> None:
        """An outermost call begins: counted by its line, with its rows and autograd's mode (a
        model run on a whole dataset under no_grad inside the step: mining negatives from a bank
        encoded again every step), and timed to its end (_post)."""
        site = self.sites.get(key) if n == 0 else caller_site()
        row = self.by_site.get(site)
        if row is None and len(self.by_site) >= MAX_SITES:
            return
        rows = input_rows(first) if first is not None and len(first.shape) else 0
        if row is None:
            name = self.user_names.get(key) or type(module).__name__  # (`enc`, else its class)
            self.by_site[site] = [name, 1, rows, _grad_enabled(), 0.0]
        else:
            row[1] += 1
            row[2] = max(row[2], rows)
            row[3] = row[3] and _grad_enabled()
        self.running = (site, time.monotonic())

    def _siblings(self) -> list[list[Any]] | None:
        """The siblings the forwards called (inner) and the loop called (outermost), inner first."""
        found = [*((self.inner.siblings() or []) if self.inner is not None else []),
                 *((self.outer_calls.siblings() or []) if self.outer_calls is not None else [])]
        return found or None

    def _out_shape(self) -> list[int] | None:
        """The output's shape of the step's first outermost module with parameters (the model, not
        a loss module called more often: `crit` once per time step)."""
        for m in self.outer:
            shape = self.out_shapes.get(id(m))
            if shape and next(m.parameters(), None) is not None:
                return shape
        return None

    def _sites(self) -> list[list[Any]] | None:
        """[the line, the user's name for the module (else its class), calls, most rows, 1 where
        autograd was on at every call, seconds in them] for each line, most seconds first."""
        rows = sorted(self.by_site.items(), key=lambda kv: -kv[1][4])
        return [[site, name, n, r, int(g), round(t, 6)] for site, (name, n, r, g, t) in rows] or None

    def _post(self, module: Any, args: Any, output: Any) -> None:
        self.local.depth = max(0, getattr(self.local, "depth", 1) - 1)
        if self.local.depth == 0 and id(module) not in self.out_shapes:
            self.out_shapes[id(module)] = _out_shape(output)
        if self.local.depth == 0 and self.running is not None:
            site, began = self.running
            self.running = None
            row = self.by_site.get(site)
            if row is not None:
                row[4] += time.monotonic() - began
        if self.inner is not None:
            try:
                self.inner.post(module)
            except Exception:
                self.inner = None

    def _report(self, step: int) -> None:
        """The counted step ended: its record waits for the next outermost call where no repeat was
        seen yet (a repeat after the optimizer step), else goes now."""
        params = self._param_ops()  # (first: the record's own reads of parameters are not the step's)
        try:
            if self.calls:
                key = max(self.calls, key=lambda k: self.calls[k])
                rows = self.rows.get(key)
                self.pending = ModelCalls(step, self.calls[key],
                                          int(statistics.median(rows)) if rows else None,
                                          self.names.get(key), self.sites.get(key), self.called or None,
                                          tables=self._tables(), untrained=self._untrained(),
                                          again=self._backward_again(),
                                          cells=self.inner.cells(time.monotonic() - self.t0)
                                          if self.inner is not None else None,
                                          inner=self.inner.repeated() if self.inner is not None else None,
                                          siblings=self._siblings(),
                                          sparse=self.sparse or None,
                                          params=params, sites=self._sites(),
                                          counted_s=round(time.monotonic() - self.t0, 6),
                                          out_shape=self._out_shape())
            self._remove_grad_hooks()  # (the step's passes are counted; the forward hooks may stay)
            if self.repeat is None and any(self.inputs.values()):
                self.tail = True
                return
        except Exception:
            pass
        self._finish()

    def _finish(self) -> None:
        self._remove()
        self.tail = False
        try:
            self.recorder.emit(Perturbed(self.t0, time.monotonic(), "model-calls"))
            if self.pending is not None:
                r = self.repeat
                self.recorder.emit(self.pending._replace(
                    repeat=[r[0], r[1]] if r else None, repeat_grad=int(r[2]) if r else None,
                    repeat_updated=int(r[3]) if r else None))
        except Exception:
            pass
        self.pending, self.inputs, self.tables, self.outer = None, {}, {}, []
        self.strays = None
        self.user_names, self.grad_on, self.input_grad, self.leaves = {}, {}, {}, {}
