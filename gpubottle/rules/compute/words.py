"""compute-bound's and loop-overhead's facts, summaries, fixes and open questions."""

from __future__ import annotations

from gpubottle import vocabulary as v
from gpubottle.analysis.forward_rows import ELEMENT_FILL, PYTHON_FILLS, ROW_WRITES, VALUES_LOOP
from gpubottle.analysis.module_hooks import TENSOR_HOOK
from gpubottle.analysis.row_loops import PAIR_MAKERS
from gpubottle.analysis.stack_shares import is_statement
from gpubottle.analysis.tensor_loops import TENSOR_LOOP
from gpubottle.analysis.work_kinds import (
    ELEMENT_ADDS,
    INVARIANT,
    LOG_RECORDS,
    SLEEPING,
    TENSOR_TEXT,
    every_step,
    remedy,
    wasted,
)
from gpubottle.evidence import CallSite, ModelCallCount, OptimizerWork, Scripted, StackFrameShare
from gpubottle.report import Fact, Fix
from gpubottle.rules import thresholds as th
from gpubottle.rules.common import most_of
from gpubottle.rules.compute import decide as cd
from gpubottle.rules.compute.decide import Compute, LoopOverhead
from gpubottle.rules.compute.emulated import fp16_first
from gpubottle.rules.compute.wasted_words import (
    cell_loop_fix,
    per_sample_inner_fix,
    repeat_fix,
    sparse_fix,
    wasted_clause,
    wasted_fixes,
)
from gpubottle.units import cores, ms, n_cores, pct


def overhead_facts(d: LoopOverhead) -> list[Fact]:
    top = d.top
    facts = [Fact(
        f"of the main thread's {d.samples_main} stack samples in the measured steps, "
        f"{pct(d.model_share)} are in the model's forward, backward and optimizer step; "
        f"{pct(top.share)} in {top.function} ({top.location}), which the loop calls outside them"
        + (f"; {most_of(top.kind_share)} of its samples are {top.kind}" if top.kind else ""),
        "loop_overhead_share", top.share)]
    facts += [Fact(f"also outside the model: {o.function} ({o.location}) {pct(o.share)}") for o in d.also]
    return facts


def _kind_remedy(top: StackFrameShare) -> str | None:
    """What the helper's time is and that kind's remedy, where the frames beneath it say (work_kinds)."""
    fix = remedy(top.kind)
    return f"its time is {top.kind}: {fix}" if top.kind and fix else None


def _must_run(d: LoopOverhead, returns: str, on: str, cheaper: str, then: str) -> Fix:
    """A helper whose result the step trains on (the model's input, or the loss): it must run every
    step, so its kind's remedy (else `cheaper`), then `then`, as a try."""
    top = d.top
    # (a kind's remedy may end in its own "Try it and time it": said once, at the end)
    how = (_kind_remedy(top) or cheaper).removesuffix(". Try it and time it")
    if wasted(top.kind):
        then = ""  # (its remedy removes the work: nothing is left to move elsewhere)
    return Fix(
        text=(f"{top.function} takes {pct(top.share)} of each {ms(d.step_s)} step, and what it "
              f"returns {returns} (its call at {top.called_at or top.location}), so it must run "
              f"every step{on}: " + how + then + "; try it and time it"),
        where=top.location)


def overhead_fixes(d: LoopOverhead) -> list[Fix]:
    top = d.top
    if top.kind == INVARIANT:
        # The same value at every step (analysis/invariant.py): once before the loop, the steps
        # lose its whole share; less often would only lose part of it.
        new = d.step_s * (1 - top.share)
        return [Fix(text=(f"{top.function} takes {pct(top.share)} of each {ms(d.step_s)} step and gives "
                          "the same result at every step: it reads nothing the loop changes. Compute it "
                          "once, before the loop, and use the result in the loop (unless what it reads "
                          "is changed in place through another name, as an optimizer changes the "
                          "model's parameters: then it must stay)"),
                     where=top.location,
                     expected=f"step {ms(d.step_s)} -> about {ms(new)} ({d.step_s / new:.1f}x)",
                     expected_step_s=round(new, 6))]
    if every_step(top.kind) and not top.feeds_model:
        # Work the training needs at every step (clipping the gradients the optimizer then uses):
        # less often would change the training. Its kind's remedy, a try.
        needs = ("what it adds up needs every step's values (every 10th step would count a tenth)"
                 if top.kind == ELEMENT_ADDS else "the training needs it at every step")
        how = (_kind_remedy(top) or "").removesuffix(". Try it and time it")
        return [Fix(
            text=(f"{top.function} takes {pct(top.share)} of each {ms(d.step_s)} step, and {needs}: "
                  f"{how}; try it and time it"),
            where=top.location)]
    # (a statement of the loop's own, named by its line: its time is the ops it calls, in C)
    line = is_statement(top.function)
    if top.row_loop and (top.loss or top.feeds_model):
        # (every step needs it: all rows at once, never less often)
        return [_rows_at_once(top, d.with_backward)]
    if top.loss and line:
        # `loss = F.mse_loss(model(X[idx]), Y[idx])` named by its line: no Python loop in it to
        # batch (a loop of its own is a comprehension or a helper, named as that).
        return [_must_run(d, "is the loss backward() trains on", ", on the model's output",
                          "make the ops on that line cheaper, beside the model's forward (its time is "
                          "in what it calls, not in Python around it: fewer or smaller ops, an index "
                          "or a value that repeats made once before the loop)", "")]
    if top.loss:
        # The loss, written by hand from the model's output: it must run every step, on the main
        # process (it needs the model's output), so only cheaper will do.
        return [_must_run(d, "is the loss backward() trains on", ", on the model's output",
                          "compute it with tensor ops on the whole batch instead of a Python loop "
                          "over its rows or classes (per-row weights: (w[labels] * F.cross_entropy("
                          "logits, labels, reduction='none')).mean(); per-row picks are a gather: "
                          "logp.gather(1, labels[:, None]); a term per class is one op over the class "
                          "dimension, F.one_hot(labels, C) * term summed over dim 1); the backward "
                          "through it gets cheaper too",
                          "")]
    if top.feeds_model:
        # Its result is the batch the model trains on: less often would train on batches it never
        # touched. What it does must get cheaper, or run per sample in the loader's workers.
        return [_must_run(d, "feeds the model", "",
                          "make the ops on that line cheaper (its time is in what it calls, not in "
                          "Python around it: fewer or smaller ops, or its result made once before "
                          "the loop where it repeats)" if line else
                          "make it cheaper (tensor ops on the whole batch instead of Python loops "
                          "over its values)",
                          # (reading the model's output it cannot run ahead of the step)
                          "" if top.after_model else
                          "; or do its work per sample in the DataLoader's workers (in the dataset's "
                          "__getitem__ or a collate_fn), where it runs beside the step")]
    # The change goes where the loop calls it (`if step % 10 == 0:` before the call), not inside it:
    # for a statement inside a loop over rows, around that loop.
    at = top.row_loop if top.row_loop and line else top.called_at
    what = "loop" if top.row_loop and line else "call"
    call = (f"wrap the {what} at {at} in `if step % {d.every} == 0:`" if at
            else f"call it every {d.every} steps")
    # A walk over the model's tensors (an EMA of the weights, most often): the same work in a few
    # calls comes first, since it changes nothing; less often changes what it averages.
    tensors = top.kind == TENSOR_LOOP
    # Work of a known kind (a deepcopy, JSON, a log record) has a remedy that keeps every call:
    # it leads, since less often may change what the call was for (a best-weights copy).
    known = tensors or _kind_remedy(top) is not None
    why = (f"an average of the weights updated every {d.every} steps takes decay ** {d.every} to "
           "average as before" if tensors else "where its result is needed less often" if known
           else "logging and metrics rarely need more")
    less_often = Fix(
        text=f"{top.function} takes {pct(top.share)} of each {ms(d.step_s)} step: if the loop "
        f"calls it every step, {call} ({why})",
        where=at or top.location, change={"call every (steps)": [1, d.every]},
        expected=f"step {ms(d.step_s)} -> about {ms(d.new_step_s)} ({d.step_s / d.new_step_s:.1f}x)",
        expected_step_s=round(d.new_step_s, 6))
    if top.accumulates and not known and d.ran is None:
        # Added up at every step (`correct += sum(...)`): called less often, the total would leave
        # out the other steps' batches. Cheaper leads; less often stays, said with what it costs.
        cheaper = Fix(text=(f"{top.function} takes {pct(top.share)} of each {ms(d.step_s)} step and the loop "
                            f"adds its result up at every step ({top.called_at or top.location}): make it "
                            "cheaper, with tensor ops on the whole batch instead of a Python loop over its "
                            "values (an accuracy: (pred == y).sum().item(), not a comparison element by "
                            "element); try it and time it"), where=top.location)
        less_often.text += f"; its total would then count one batch in {d.every}"
        return [cheaper, less_often]
    if d.ran is not None and _kind_remedy(top) is None:
        # Its thread was off the CPU for most of it: no cheaper math helps a call that waits.
        cheaper = Fix(text=(f"{top.function} mostly waits, off the CPU (the loop's thread ran "
                            f"{pct(d.ran)} of the step): a sleep, a network or disk call, or a lock. "
                            "Hand it to a background thread (one worker thread and a queue, or "
                            "concurrent.futures.ThreadPoolExecutor(max_workers=1).submit(...)) so the "
                            "loop goes on while it waits; try it and time it"),
                      where=top.location)
    else:
        cheaper = Fix(text=(_kind_remedy(top) or
                            f"make {top.function} cheaper: tensor ops on the whole batch instead of "
                            "Python loops over its values (.tolist(), per-element math), or hand it to a "
                            "background thread") + ("; try it and time it" if tensors else ""),
                      where=top.location)
    if d.inference and top.kind not in (LOG_RECORDS, TENSOR_TEXT):
        # A loop that trains nothing: what it does with each batch outside the model is most often
        # its output (predictions written to a CSV: 17% of each batch), which every batch needs;
        # "every 10 steps" would drop nine batches' results.
        cheaper.text = (f"{top.function} takes {pct(top.share)} of each {ms(d.step_s)} batch, and the "
                        "loop trains nothing: what it does with each batch is likely the run's output "
                        "(predictions written, results kept), which every batch needs, so it must "
                        "get cheaper, not run less often: " + cheaper.text)
        return [cheaper]
    if top.kind == SLEEPING:
        # (a sleep has no result to need less often: "every 10 steps" is "remove it" in other words)
        return [cheaper]
    if top.row_loop:
        return [_rows_at_once(top), less_often]
    return [cheaper, less_often] if known else [less_often, cheaper]


def _rows_at_once(top: StackFrameShare, with_backward: float | None = None) -> Fix:
    """A loop over the batch's rows (a top-5 accuracy sample by sample: 2.2 ms of a 4-ms step; a
    mixup row by row; a loss over pairs) or a loss's columns (a term a class: 200 classes, the
    training 2.2 s -> ~0.3 s as one call): the same ops on all of them at once keep every result,
    so they lead. `with_backward`: a loss's loop, with the backward of what it recorded."""
    graph = (f", and autograd records each of those ops as a node that backward then runs one at a "
             f"time: with that backward, about {pct(with_backward)} of the step"
             if with_backward is not None and with_backward > top.share else "")
    if top.row_loop_columns:
        return Fix(text=(f"{top.function} runs one column at a time in a Python loop "
                         f"(`{top.row_loop_text}`, {top.row_loop}), each op in it paying its call's cost "
                         f"once a column{graph}: do it as one op over the whole tensor (the loss "
                         "functions take every column at once: F.binary_cross_entropy_with_logits(logits, "
                         "y, pos_weight=w) with w a tensor of the columns' weights, F.cross_entropy(..., "
                         "weight=w); a term a column as one op over that dimension, summed with "
                         ".sum(dim=1) or .mean()), which keeps every column's term; try it and time it"),
                   where=top.row_loop)
    unit = "pair" if any(f"{p}(" in (top.row_loop_text or "") for p in PAIR_MAKERS) else "row"
    return Fix(text=(f"{top.function} runs one {unit} at a time in a Python loop (`{top.row_loop_text}`, "
                     f"{top.row_loop}), each op in it paying its call's cost once a {unit}{graph}: do the "
                     "same ops on all rows at once (one call over the batch's dimension: x[perm] for "
                     "another row of each, out.topk(5, dim=1).indices, torch.cdist(z, z) for every "
                     "pair's distance, zn @ zn.T of zn = F.normalize(z, dim=1) for every pair's cosine "
                     "similarity, s[:, None] - s[None, :] for every pair's difference with a mask of "
                     "the pairs kept (torch.triu(..., diagonal=1) for each pair once), a gather for "
                     "per-row picks), which keeps every row's result; try it and time it"),
               where=top.row_loop)


def overhead_summary(d: LoopOverhead) -> str:
    graph = (f" (about {pct(d.share)} with the backward of the ops it records)"
             if d.share > d.top.share else "")
    return (f"{d.top.function}, the loop's own code outside the model, takes {pct(d.top.share)} of "
            f"each step{graph}")


def compute_facts(d: Compute) -> list[Fact]:
    facts = [
        Fact(f"the main process computes {pct(d.share)} of each {ms(d.step_s)} step "
             f"({d.n} steps measured)", "compute_share", round(d.share, 4)),
        # (A reading a little over the cores available is its own spread: the CPU and the wait are
        # sampled apart. "2.15 cores of 2" would read as an error.)
        Fact(f"it keeps all {n_cores(d.cores_available)} available busy while computing"
             if d.cores_available and d.compute_cpu >= d.cores_available else
             f"it keeps {n_cores(d.compute_cpu)} busy while computing"
             + (f", of {cores(d.cores_available)} available" if d.cores_available else ""),
             "compute_cores", round(d.compute_cpu, 3)),
    ]
    fill = d.forward_loop
    if fill is not None and fill.kind in PYTHON_FILLS:
        facts.append(Fact(f"{pct(fill.share)} of the main thread's stack samples are in {fill.function}'s "
                          f"{'loop' if _a_loop(fill) else 'line'} at {fill.location}, "
                          + ("filling a tensor one element at a time" if fill.kind == ELEMENT_FILL else
                             "making a tensor's values one at a time as Python numbers"),
                          "forward_fill_share", round(fill.share, 4)))
    o = d.optimizer
    if o is not None:
        facts.append(Fact(
            (f"{_opt_name(o)}.step() takes" if o.calls <= 1 else
             f"{o.calls} optimizers' step() calls ({_opt_name(o)} among them) take")
            + f" {ms(o.step_s)} of each step ({pct(d.optimizer_share)}): "
            f"{_how(o)}", "optimizer_share", round(d.optimizer_share, 4)))
    return facts


def _a_loop(top: StackFrameShare) -> bool:
    """Named at a loop's header (not a comprehension's line)."""
    return (top.row_loop_text or "").startswith(("for ", "async for "))


def _opt_name(o: OptimizerWork) -> str:
    return (o.cls or "the optimizer").rsplit(".", 1)[-1]


def _how(o: OptimizerWork) -> str:
    n = f"its {o.tensors} parameter tensors" if o.tensors else "its parameter tensors"
    if _split(o):
        n += f" (in {o.groups} parameter groups)"
    if o.impl == v.OPT_FOR_LOOP:
        return (f"it updates {n} one at a time in a Python loop, each with several elementwise "
                "ops, each op a pass over the tensor's memory")
    return f"it updates {n} with one multi-tensor op per operation (foreach)"


def _split(o: OptimizerWork) -> bool:
    """Its tensors sit in many small parameter groups (a group per tensor for layer-wise learning
    rates): foreach and fused batch one group's tensors at a time."""
    return bool(o.groups and o.tensors and o.groups >= th.OPTIMIZER_GROUPS_MANY
                and o.tensors / o.groups <= th.OPTIMIZER_GROUP_TENSORS_MAX)


def _merge_groups(o: OptimizerWork, key: str) -> str:
    """Measured here (tests/scripts/real_code/group_per_tensor.py: AdamW over 146 tensors of 24
    blocks, a group each): the run 15.4-16.1 s as the loop, 11.8-12.2 fused, 18.7 foreach (one
    tensor a group: its batching gains nothing and costs its own setup); with a group per block
    and kind (50), 14.6 the loop, 14.7 foreach, 10.6-11.0 fused."""
    per = (o.tensors or 0) / (o.groups or 1)
    each = "one each" if per == 1 else f"{per:.1f} tensors a group"
    head = (f" Its {o.tensors} tensors sit in {o.groups} parameter groups ({each}), and "
            f"{key} batches the tensors of one group at a time: ")
    if key == "fused":
        return head + ("merge the groups that share their settings (one per block and per weight "
                       "decay, not one per tensor) and it saves more (a test machine's 146 groups of "
                       "one tensor: the run 15.4 s, 11.8 s fused, 10.6 s fused in 50 groups)")
    return head + ("with one tensor a group it can be slower than the loop (a test machine's 146 "
                   "groups of one tensor: 15.4 s as the loop, 18.7 s foreach): merge the groups "
                   "that share their settings first (one per block and per weight decay)")


def _optimizer_fix(o: OptimizerWork, share: float) -> Fix:
    """fused=True where the optimizer has a fused step, else foreach=True for a per-tensor loop.
    A try, not a promise: no bound is said (--try-fixes measured 2.2x where the optimizer was 47%
    of a step). Measured here on a CPU: AdamW over 242 small tensors, step() 15.0 ms as the loop,
    10.0 ms foreach, 3.5 ms fused (the training step 27 -> 15 ms); Adam over 6 large ones (4.7M
    values), 22.4 ms, 8.8 ms, 2.7 ms: the loop's ops each pass over memory, fused makes one pass, so
    large tensors gain as well as small ones."""
    name, key = _opt_name(o), ("fused" if o.can_fuse else "foreach")
    default = " (torch's default on a CPU, or foreach=False)" if o.impl == v.OPT_FOR_LOOP else ""
    kernels = "one fused kernel per parameter group" if key == "fused" else \
        "one multi-tensor op per operation"
    # Built inside a framework (no line of the script's writes it): its own option says it.
    inside = "" if o.site else (" where the optimizer is built (a framework's option for it, e.g. "
                                "TrainingArguments(optim='adamw_torch_fused'))")
    return Fix(
        text=f"the optimizer's step is {pct(share)} of each step and runs as "
        f"{'a per-tensor loop' if o.impl == v.OPT_FOR_LOOP else 'foreach'}{default}: try "
        f"{name}(..., {key}=True){inside}, which updates every tensor with {kernels}; the same "
        f"update rule, so the training is unchanged. How much of its share it saves: time it"
        f"{' (--try-fixes does)' if key == 'fused' else ''}"
        + (("." + _merge_groups(o, key)) if _split(o) else ""),
        where=o.site, change={key: [None if key == "fused" else False, True]})


def compute_summary(d: Compute) -> str:
    return _summary(d) + wasted_clause(d)


def _summary(d: Compute) -> str:
    if d.fp16_emulated is not None:
        return (f"the main process computes {pct(d.share)} of step time, in float16, which this CPU "
                "has no instructions for: torch runs its float16 matmuls on a slow fallback")
    if d.hook is not None:
        return (f"the main process computes {pct(d.share)} of step time, {pct(d.hook.share)} of its "
                f"time in {d.hook.function}, a {d.hook.kind} the script registered, not in the "
                "model's math")
    if d.no_grad is not None:
        c, rows, step_s = d.no_grad
        return (f"the main process computes {pct(d.share)} of step time, about {pct(c.seconds / step_s)} "
                f"of a step in {c.module or 'a module'} run without gradients on {c.rows:,} rows "
                f"({c.site}), beside the training's own calls on {rows:,}")
    if d.forward_loop is not None and d.forward_loop.kind in PYTHON_FILLS:
        return (f"the main process computes {pct(d.share)} of step time, {pct(d.forward_loop_cost)} of "
                f"its time in {d.forward_loop.function} "
                + ("filling a tensor one element at a time in Python loops at every call"
                   if d.forward_loop.kind == ELEMENT_FILL else
                   "making a tensor's values one at a time as Python numbers at every call"))
    if d.forward_loop is not None:
        return (f"the main process computes {pct(d.share)} of step time, {pct(d.forward_loop_cost)} of "
                f"its time in a Python loop of {d.forward_loop.function} computing one row at a time "
                "and in the backward of the ops it recorded, not in the model's math")
    if d.autograd_loop is not None:
        return (f"the main process computes {pct(d.share)} of step time, {pct(d.autograd_loop.share)} "
                f"of its time in a Python loop of {d.autograd_loop.function} (a custom autograd "
                "Function), not in the model's math")
    if d.overhead is not None:  # the loop's own code: a finding of its own (loop-overhead) says what
        return (f"the main process computes {pct(d.share)} of step time, {pct(d.overhead.share)} of it "
                f"in {d.overhead.function}, outside the model (loop-overhead)")
    if d.per_sample is not None:
        m = d.per_sample
        if m.feeds_back:
            return (f"the main process computes {pct(d.share)} of step time, calling "
                    f"{m.module or 'the model'} {m.calls} times a step on {m.rows} row each, each "
                    "input made from the call before's output: every call pays every layer's "
                    "per-call cost for one row")
        grads = (" and taking its gradients one sample at a time" if m.grads_per_call else "")
        return (f"the main process computes {pct(d.share)} of step time, calling "
                f"{m.module or 'the model'} once per sample{grads}: {m.calls} calls of {m.rows} row a "
                "step, each paying every layer's per-call cost for one sample")
    if d.small_batch is not None:
        of = f"{d.accumulated} batches of " if d.accumulated > 1 else ""
        return (f"the main process computes {pct(d.share)} of each {ms(d.step_s)} step of {of}"
                f"batch_size={d.small_batch[0]}: at that size a step is mostly what every "
                f"{'batch' if of else 'step'} costs whatever its size (Python, operator dispatch, "
                "the optimizer's pass over every parameter), not arithmetic on the samples")
    if d.optimizer is not None and d.optimizer_share >= 0.5:
        return (f"the main process computes {pct(d.share)} of step time, and the optimizer's step "
                f"is {pct(d.optimizer_share)} of it ({_opt_name(d.optimizer)}, "
                f"{'a per-tensor loop' if d.optimizer.impl == v.OPT_FOR_LOOP else 'foreach'})")
    if d.told and d.aside is not None:  # said as the loop's own code, below the verdict
        return (f"the main process computes {pct(d.share)} of step time, most of it the model's own "
                f"computation and {pct(d.aside.share)} in {d.aside.function}, outside the model: the "
                "loop is compute-bound")
    if d.told:
        return f"the model's own computation takes {pct(d.share)} of step time: the loop is compute-bound"
    return f"the main process computes {pct(d.share)} of step time: the loop is compute-bound"


def compute_fixes(d: Compute) -> list[Fix]:
    fixes: list[Fix] = []
    if d.threads_to_cores is not None:
        have, want = d.threads_to_cores
        fixes.append(Fix(
            text=f"torch computes with {have} threads on {n_cores(d.cores_available or 0)}: use as "
            f"many threads as cores, torch.set_num_threads({want})",
            where=d.threads_site, change={"torch.set_num_threads": [have, want]}))
    if d.fp16_emulated is not None:
        fixes.append(fp16_first(d.fp16_emulated))
    if d.hook is not None:
        fixes.append(_hook_fix(d.hook))
    if d.autograd_loop is not None:
        fixes.append(_autograd_loop_fix(d.autograd_loop))
    if d.no_grad is not None:
        fixes.append(_no_grad_fix(*d.no_grad))
    if d.forward_loop is not None and d.forward_loop.kind in PYTHON_FILLS:
        # (the fill is a part of the forward: the model's own math may still gain from the rest)
        fixes.append(_forward_loop_fix(d.forward_loop, d.backward_share))
    elif d.forward_loop is not None:  # (compiling or bfloat16 would not remove the loop)
        return [*fixes, _forward_loop_fix(d.forward_loop, d.backward_share),
                *([_optimizer_fix(d.optimizer, d.optimizer_share)] if d.optimizer is not None else [])]
    if d.overhead is not None:  # faster math would not make this loop faster
        return fixes
    optimizer = [_optimizer_fix(d.optimizer, d.optimizer_share)] if d.optimizer is not None else []
    w = d.waste
    if w.per_sample_inner is not None:  # (faster math would speed up each small call, not remove them)
        return [*fixes, per_sample_inner_fix(w.per_sample_inner), *optimizer]
    if w.cell_loop is not None:
        fixes.append(cell_loop_fix(w.cell_loop))
    fixes += wasted_fixes(w, d.step_s)
    if d.table is not None:
        fixes.append(sparse_fix(d.table, d.table_optimizer, d.more_tables))
    if w.repeat is not None and w.repeat.repeat:
        fixes.append(repeat_fix(w.repeat))
    if d.per_sample is not None and d.per_sample.feeds_back:
        # An agent acting on its policy's output: the calls of one episode cannot be one call;
        # episodes side by side can (vectorized environments). No number: the environments' own
        # code decides what that gains.
        m = d.per_sample
        fixes.append(Fix(
            text=f"{m.module or 'the model'} is called {m.calls} times a step on one row each, and "
            "each call's input comes back from the call before's output through the loop (an agent "
            "acting, then observing): those calls cannot be merged. Run several environments (or "
            "sequences) side by side and call it once on their inputs stacked as one batch (gym's "
            "vector environments, or a list of them stepped in turn): each call's fixed cost is then "
            "shared by all of them. Try it and time it",
            where=m.site))
        return fixes + optimizer
    if d.per_sample is not None and d.per_sample.grads_per_call:
        fixes.append(_per_sample_grads_fix(d.per_sample))
        return fixes + optimizer
    if d.per_sample is not None:
        m = d.per_sample
        fixes.append(Fix(
            text=f"call {m.module or 'the model'} once on the whole batch instead of once per sample "
            f"(model(x) on the batch, and the loss over it: cross_entropy averages its rows), not "
            f"{m.calls} times on one row each; the same training where the loop averaged the "
            "per-sample losses (and no layer mixes samples, as BatchNorm does). Not torch.compile or "
            "bfloat16 first: they would speed up each small call, not remove them. Measured on a test "
            "machine, a 2-layer MLP and 32 rows: 5.4-5.8 ms a step as the loop, 0.4 ms batched",
            where=m.site))
        return fixes + optimizer
    if d.small_batch is None:
        fixes += optimizer
    if d.threads_up is not None:
        have, want = d.threads_up
        # Where the one thread comes from: the script's call, else the environment it ran in.
        set_by = (f"set at {d.threads_site}" if d.threads_site else
                  f"{d.threads_env} in the environment" if d.threads_env else None)
        how = (f"torch.set_num_threads({want}) there" if d.threads_site else
               f"unset {d.threads_env.split('=')[0]} (torch's default is a thread per core)"
               if d.threads_env else f"torch.set_num_threads({want})")
        fixes.append(Fix(
            text=f"torch computes on {have} thread(s) with {n_cores(d.cores_available or 0)} available"
            + (f" ({set_by})" if set_by else "") + f": {how}; large matrix ops gain most, a loop of "
            "small ones may not, and DataLoader workers or other jobs on the machine may want those "
            "cores: try it and time it",
            where=d.threads_site, change={"torch.set_num_threads": [have, want]}))
    if d.small_batch is not None:
        size, site = d.small_batch
        fixes.append(Fix(text=_larger_batches(size, d.accumulated) + ". Not torch.compile or bfloat16 "
                         "autocast: at this size they add more than they save",
                         where=site, change={"batch_size": [size, _larger_batch(size, d.accumulated)]}))
        return fixes + optimizer  # (the optimizer's pass is part of what every step costs)
    if d.float64:
        fixes.append(Fix(text=_FLOAT32))
    if d.fp16_emulated is None:  # (its fix is the faster math here)
        fixes.append(Fix(text=faster_math(d.bf16, d.autocast, d.compiled, d.model_names, d.scripted,
                                           d.inference, d.double_backward, d.conv2d)))
    return fixes


def _autograd_loop_fix(top: StackFrameShare) -> Fix:
    """Measured here: a clipped activation's backward row by row over 128 rows, 3.3 ms a step; as
    one masked multiply (g * ((x > -1) & (x < 1)) * 1.5), 0.9 ms (tests/check_fixes applies it)."""
    part = top.function.rsplit(".", 1)[-1]
    return Fix(text=f"{top.function}, a torch.autograd.Function's {part} written in Python, takes "
                    f"{pct(top.share)} of the main thread's time in its loop at {top.location}: a few "
                    "small ops for each row (or element), each with torch's per-op cost. Write it as "
                    "ops over the whole tensor, one for all rows (a mask multiplied in, torch.where, "
                    "indexing with a tensor of indices); torch.compile would not remove the loop. "
                    "Try it and time it", where=top.location)


def _per_sample_grads_fix(m: ModelCallCount) -> Fix:
    """Measured here (a DP-SGD step by hand, 32 samples, an MLP 64-128-10, 500 steps): the loop of
    torch.autograd.grad a sample, 4.6 s a run; torch.func.vmap(grad(...)) over the batch, 2.7 s,
    the same clipped gradients."""
    return Fix(text=f"the loop calls {m.module or 'the model'} {m.calls} times a step on one row each and "
                    "takes each sample's gradients in its body (per-sample gradients, each clipped or "
                    "measured apart): one loss over the batch would give their sum, not them. Compute "
                    "them in one batched call instead: torch.func.vmap(torch.func.grad(loss_of_one), "
                    "in_dims=(None, 0, 0))(params, x, y), with loss_of_one(params, x, y) calling "
                    "torch.func.functional_call(model, params, (x[None],)) (Opacus does this for "
                    "DP-SGD). Measured on a test machine, 32 samples of a small MLP: 4.6 s -> 2.7 s "
                    "a run, the same clipped gradients; try it and time it", where=m.site)


def _no_grad_fix(c: CallSite, rows: int, step_s: float) -> Fix:
    """Measured here (tests/scripts/real_code/bank_every_step.py, make check-fixes applies the fix):
    negatives mined from 20,000 rows encoded under no_grad every step, 21 of a 22-ms step; the bank
    encoded every 50 steps and reused between, the run 9.4 s -> 4.5 s."""
    calls = "once" if c.calls == 1 else f"{c.calls} times"
    return Fix(text=f"{c.module or 'the module'} runs {calls} a step without gradients at {c.site} on "
                    f"{c.rows:,} rows, where the training's own calls take {rows:,}: about "
                    f"{pct(c.seconds / step_s)} of a step ({ms(c.seconds)} of the {ms(step_s)} step it was "
                    "timed in), computing outputs for the whole set again at every step (a bank of "
                    "embeddings to mine from, targets, a cache). "
                    "Where they may lag the model by a few steps, compute them every N steps and reuse "
                    "them between (`if step % 50 == 0:` around the call, the result kept), or take them "
                    "from the batch itself (in-batch negatives); each step then saves most of that time. "
                    "Try it and time it (an older bank changes what is mined)", where=c.site)


def _forward_loop_fix(top: StackFrameShare, backward: float) -> Fix:
    """Measured here (tests/scripts/real_code/edge_messages.py, make check-fixes applies the fix):
    a graph layer summing 3,000 edges' messages row by row, 16 steps in 7.2 s a run; gathered by a
    tensor of indices and summed by one index_add_, 2.1 s, the same loss."""
    if top.kind == ELEMENT_FILL:
        return Fix(text=(f"the loop at {top.location} (`{top.row_loop_text}`) in {top.function} fills a "
                         f"tensor one element at a time at every call: {pct(top.share)} of the main "
                         "thread's time, an indexing op for each element. Build it with one op (a "
                         "causal mask: torch.triu(torch.full((T, T), float('-inf')), diagonal=1); a "
                         "band or any pattern of positions: comparisons of torch.arange(T)[:, None] "
                         "and torch.arange(T)[None, :]) and, where it is the same at every call, once "
                         "in __init__ as a buffer (self.register_buffer('mask', ...), sliced to the "
                         "call's length). Try it and time it"), where=top.location)
    if top.kind == VALUES_LOOP:
        what = (f"the loop at {top.location} (`{top.row_loop_text}`)" if _a_loop(top)
                else f"{top.location} (`{top.row_loop_text}`)")
        return Fix(text=(f"{what} in {top.function} makes a tensor's values one at a time as Python "
                         f"numbers at every call, then torch.tensor reads them one by one: "
                         f"{pct(top.share)} of the main thread's time, the interpreter's, not the "
                         "model's math. Make them with tensor ops on whole ranges: " + _values_at_once(top)
                         + "; where they depend only on sizes (a mask, positions), make them once in "
                         "__init__ as a buffer (self.register_buffer). Try it and time it"),
                   where=top.location)
    return Fix(text=f"the loop at {top.location} (`{top.row_loop_text}`) in {top.function} computes one "
                    f"row at a time: {pct(top.share)} of the main thread's time in it, and backward "
                    f"{pct(backward)}, which runs one node for each op the loop recorded"
                    + (" (each row it writes into the larger tensor in place makes a node that copies "
                       "that tensor's whole gradient)" if top.kind == ROW_WRITES else "")
                    + ". Compute all rows at once: take them with a tensor of the loop's "
                    "indices (msg[src]), and write them with one op (out.index_add_(0, dst, rows), "
                    "scatter_add_, or index_put_ with accumulate=True) or a masked or batched op; "
                    "torch.compile would not remove the loop. Try it and time it", where=top.location)


def _values_at_once(top: StackFrameShare) -> str:
    """How a VALUES_LOOP's values are made at once, by what makes each (StackFrameShare.per_value)."""
    how = "torch.arange for a loop's index, broadcasting (a[:, None] * b[None, :]) for a loop inside a loop"
    made = top.per_value or ""
    if made == "comparisons":
        return (how + ", and the comparison on them (torch.arange(T)[None, :] > torch.arange(T)[:, None] "
                "is a causal mask's every pair at once; torch.triu and torch.tril too)")
    calls = [c for c in made.split(", ") if c]
    if calls:
        torch_calls = ", ".join("torch." + c.split(".", 1)[1] for c in calls)
        how += f", and {torch_calls} on them in place of {made}"
    if "math.sin" in calls and "math.cos" in calls:  # (a sinusoidal embedding, its sin and cos interleaved)
        how += (" (args = t[:, None] * torch.exp(-math.log(10000) * torch.arange(half) / half); "
                "torch.stack([args.sin(), args.cos()], -1).flatten(1) keeps them interleaved)")
    return how


def _hook_fix(hook: StackFrameShare) -> Fix:
    """Measured here: a forward hook on each of 13 modules taking .numpy(), mean, std and a histogram
    of the output, 8.0-8.9 ms a step against 4.0 ms without; hooks that return at once cost nothing
    measurable (tests/check_fixes applies the fix: every 10th step)."""
    at = f", registered at {hook.called_at}" if hook.called_at else ""
    runs = ("at every call of each module it is registered on" if hook.kind != TENSOR_HOOK
            else "at every backward pass through the tensor it is registered on")
    return Fix(text=f"{hook.function} (a {hook.kind}, {hook.location}{at}) takes {pct(hook.share)} of "
                    f"the main thread's time: it runs {runs}, at every step. Do its work on some "
                    "steps only (return at once unless a flag the loop sets every N steps is on, or "
                    "keep the handles register_*hook returns and .remove() them between), or register "
                    "it on fewer modules; torch.compile would not remove its work (a hook's Python and "
                    "numpy calls break the compiled graph). Try it and time it",
               where=hook.called_at or hook.location)


def _larger_batch(size: int, accumulated: int) -> int:
    """One batch a step of the samples the step takes now, at least SMALL_BATCH_TO of them."""
    return max(size * accumulated, th.SMALL_BATCH_TO)


def _larger_batches(size: int, accumulated: int) -> str:
    to, now = _larger_batch(size, accumulated), size * accumulated
    changes = (f"it changes the training (each step averages {to} samples, not {now}, {to // now}x "
               "fewer steps an epoch): scale the learning rate with it and check the loss still "
               "converges") if to > now else ""
    if accumulated == 1:
        return (f"larger batches spread that overhead over more samples: batch_size={to} instead of "
                f"{size}; {changes}; try it and compare samples per second")
    merged = (f"the step takes {accumulated} batches of {size} (accumulating gradients over them, as "
              f"a rule): batch_size={to} with the optimizer stepping after every batch pays each "
              f"batch's fixed cost once a step, not {accumulated} times")
    if changes:
        return f"{merged}; {changes}; try it and compare samples per second"
    return (f"{merged}, and averages the same {to} samples a step: the training is unchanged (a "
            "BatchNorm layer sees them together), where memory allows; try it and compare samples "
            "per second")


# A 3-layer MLP's step on this VM: 41.4-42.0 ms in float64, 18.1-18.6 ms in float32 (2.3x). Data
# from numpy arrives float64 (torch.from_numpy), and model.double() is the usual answer to the
# dtype error that follows.
_FLOAT32 = ("the model trains in float64 (double): float32 does the same arithmetic in about half "
            "the time (a 3-layer MLP's step 2.3x faster on a test machine): model.float(), and float32 "
            "inputs (torch.from_numpy(a).float(), or a.astype(numpy.float32) once); try it, where the "
            "model does not need double precision")


def compile_call(names: list[str] | None, options: str = "", scripted: Scripted | None = None,
                 twice: str | None = None) -> str:
    """torch.compile said on the script's own modules, by the names its lines call them
    (ModelCallCount.called): `net = torch.compile(net)`; each of several; torch.compile(model) where
    no name is known (a trace, a library's loop). `options`: its keyword arguments (", mode=...").
    A TorchScript model (`scripted`): torch.compile raises on it, so the eager module it was made
    from is compiled, in place of the line that made it. `twice`: the line asking for a gradient to
    differentiate again (create_graph=True): a compiled module that gradient passes through stops
    the run, so only the others are offered."""
    if twice is not None:
        return (f"torch.compile{options and '(..., ' + options.lstrip(', ') + ')'} only on modules the "
                f"gradient at {twice} does not pass through (create_graph=True: torch 2.13 raises "
                "\"torch.compile with aot_autograd does not currently support double backward\" on "
                "a compiled module's backward differentiated again)")
    if scripted is not None:
        refuses = "torch.compile refuses a TorchScript module; it compiles the eager one"
        if scripted.site is None or scripted.eager is None:
            return f"torch.compile on the eager module the TorchScript model was made from ({refuses})"
        target = scripted.name or (names[0] if names else "model")
        return (f"{target} = torch.compile({scripted.eager}{options}) in place of the {scripted.how} "
                f"call at {scripted.site} ({refuses})")
    if not names:
        return f"torch.compile(model{options})"
    first = f"{names[0]} = torch.compile({names[0]}{options})"
    if len(names) == 1:
        return first
    return f"torch.compile on each module the step calls ({first}, and the same for {', '.join(names[1:])})"


def faster_math(bf16: bool | None, autocast: str | None = None, compiled: str | None = None,
                 names: list[str] | None = None, scripted: Scripted | None = None,
                 inference: bool = False, twice: str | None = None, conv2d: bool = False) -> str:
    """bfloat16 autocast on a CPU is fast only where the CPU computes bf16 natively (AMX, AVX-512
    BF16, Arm bf16: measured 3.6x on this VM's AMX); elsewhere it is emulated and slower. What the
    script already uses (`autocast`, `compiled`: their lines) is said as in use, not offered.
    `names`: the script's names for its modules (compile_call)."""
    # Compiling is paid before the first compiled step: a 4-block MLP's (forward and backward) took
    # 16-22 s on this VM's CPU, 2.6 s from inductor's on-disk cache the next run (check-fixes holds
    # it), its steps about as fast as TorchScript's after: a loss in a short run.
    # (an inference loop has no loss: its outputs are what bfloat16 may change)
    check = ("check its outputs stay close enough to float32's" if inference
             else "check the loss still converges")
    # (a model of convolutions: their memory format first, a change of two lines that compiles nothing)
    layout = ([f"the convolutions in channels_last: {(names or ['model'])[0]} = "
               f"{(names or ['model'])[0]}.to(memory_format=torch.channels_last), and each batch "
               "x = x.to(memory_format=torch.channels_last) (NHWC: oneDNN's and the tensor cores' faster "
               "kernels; a 3-block CNN at batch 128 on a test machine: 80-85 ms a step, 57-70 ms; "
               "time it)"] if conv2d else [])
    offers = layout + ([] if compiled else [compile_call(names, scripted=scripted, twice=twice)
                                  + " (compiling adds 15-20 s at the start for a small MLP on a test "
                                  "machine, a few on later runs from its cache: it pays off over long "
                                  "runs)"])
    if autocast is None and bf16 is True:
        offers.append("bfloat16 autocast (torch.autocast('cpu', dtype=torch.bfloat16): this CPU computes "
                      f"bf16 natively; {check})")
    elif autocast is None and bf16 is None:
        offers.append("bfloat16 autocast (torch.autocast('cpu', dtype=torch.bfloat16) on CPU, 'cuda' on "
                      "GPU; on a CPU without bf16 instructions it is slower: time it)")
    offers.append("a GPU")
    text = "run the math faster: " + ", or ".join(offers)
    if autocast is None and bf16 is False:
        text += (" (not bfloat16 autocast: this CPU has no bf16 instructions, so it would be emulated, "
                 "and likely slower)")
    used = [f"torch.compile at {compiled}"] if compiled else []
    if autocast:
        used.append(autocast)
    return text + (f"; already in use: {' and '.join(used)}" if used else "")


def compute_question(d: Compute) -> str | None:
    if d.question == cd.NO_LOADER:
        told = ("stack samples (py-spy) tell them apart" if not d.samples_main else
                f"the main thread's {d.samples_main} stack samples are too few to tell them apart (a "
                "longer run would)")
        return ("no DataLoader: time the script spends making batches itself is counted as compute "
                f"here; {told}")
    if d.question == cd.UNPINNED:
        return (f"{pct(d.model_share)} of the main thread's {d.samples_main} stack samples are in the "
                "model's forward, backward and optimizer step; the rest is the loop's own code, "
                "which the samples did not pin to one function")
    if d.question == cd.FEW_SAMPLES:
        got = f"{d.samples_main} of the main thread's" if d.samples_main is not None else "no"
        return (f"{got} stack samples: too few to tell the model's forward, backward and "
                "optimizer from the loop's own code (logging, metrics, saving); a longer run, or "
                "a quieter machine for py-spy, would")
    return None
