"""The fixes for work a compute-bound step does for nothing, each at the user's line: an embedding
table updated whole for the few rows a batch reads, a forward repeated on the same batch, gradients
computed for parameters no optimizer holds, batches padded to a fixed length, an RNN cell stepped
in Python over a sequence it could take whole, activation checkpointing where memory allows, a
penalty over the parameters written tensor by tensor; and the clause the verdict names them in.
Each is a try with the test machine's measurement quoted (checkpointing's also predicts the step
from its own timing); `make check-fixes` applies and times them."""

from __future__ import annotations

from gpubottle.analysis.forward_loops import FUSED
from gpubottle.evidence import (
    BackwardAgain,
    CellLoop,
    CheckpointRecompute,
    DenseTable,
    InnerPerSample,
    LoaderInfo,
    ModelCallCount,
    OptimizerWork,
    ParamPenalty,
    StackFrameShare,
    UntrainedGrads,
)
from gpubottle.report import Fix
from gpubottle.rules.compute.decide import Compute, Wasted, padded_per_batch
from gpubottle.rules.compute.embedding_bag import bag_fix
from gpubottle.rules.compute.siblings import sibling_fix
from gpubottle.rules.compute.slice_loss import slice_fix, slices
from gpubottle.rules.compute.sparse_input import mostly_zeros_fix
from gpubottle.units import gib, ms, pct


def sparse_fix(t: DenseTable, site: str | None, more: list[DenseTable] | None = None) -> Fix:
    """Sparse gradients for an embedding table most of whose rows a step does not read (and the
    same optimizer's other tables read as sparsely: a recommender's user and item tables, 19.2 s ->
    5.7 s with sparse=True on both)."""
    opt = t.optimizer or "the optimizer"
    if t.optimizer in ("Adam", "AdamW"):
        how = (f"torch.optim.SparseAdam for its weight ({opt} for the rest) updates only the rows "
               "looked up. SparseAdam is lazy: a row outside the batch keeps its moments and does not "
               f"move (dense {opt} still moves it on its momentum), and it has no weight decay: the "
               "training changes, as is usual for large tables; check the metric")
    else:
        how = ("an optimizer that takes sparse gradients for its weight (SparseAdam; SGD and Adagrad "
               "take them too) updates only the rows looked up: try it and compare the metric")
    return Fix(text=(f"{t.name} (nn.Embedding of {t.rows:,} x {t.dim}, {pct(t.share)} of {opt}'s "
                     f"parameters) gets a dense gradient: each step the backward fills and {opt} "
                     f"updates all {t.rows:,} rows, where the step's lookups read {t.touched:,} "
                     f"({pct(t.touched / max(1, t.rows))})"
                     + "".join(f"; {m.name} ({m.rows:,} x {m.dim}, {pct(m.share)}) likewise, its lookups "
                               f"reading {m.touched:,}" for m in more or [])
                     + f". sparse=True on {'each' if more else 'it'}, with {how}. Measured on a "
                     "test machine (a 500,000 x 64 table, batches of 256 x 8 ids): 40 steps "
                     "9.3-10.0 s with Adam, 2.6-3.0 s with fused=True, 0.31 s sparse with SparseAdam; "
                     "a recommender's 200,000 and 100,000 x 64 tables under SGD, 600 steps 19.2 s, "
                     "5.7 s sparse"),
               where=site)


def repeat_fix(m: ModelCallCount) -> Fix:
    """The model called again on the batch it already took: one forward a step is repeated."""
    first, again = (m.repeat or [None, None])[:2]
    how = (" (under no_grad)" if not m.repeat_grad
           else " with autograd on, its result backpropagated too" if m.repeat_backward
           else " with autograd on, recording a graph nothing runs backward through")
    return Fix(text=(f"{m.module or 'the model'} runs its forward twice a step on the same batch: at "
                     f"{first or 'a line not known'} and again at {again or 'a line not known'}{how}. "
                     "Take what the second call is for from the first call's output (out = model(x) "
                     "once; the loss from out, a metric from out.detach(), e.g. out.argmax(1)): the "
                     "step loses a forward (where the two are meant to differ, dropout drawn twice "
                     "as R-Drop does, keep them). Measured on a test machine, a 3-layer MLP at batch "
                     "128: 6 epochs 2.1 s with the second forward, 1.6 s without"),
               where=again or m.site)


def untrained_fix(u: UntrainedGrads) -> Fix:
    """Backward computes gradients for parameters no optimizer holds: a teacher's or target
    network's forward recorded by autograd, or a part left out of the optimizer, still requiring
    grad."""
    at = u.site or "a line not known"
    ratio = u.elements / max(1, u.trained)
    if u.data_shape:
        return _data_grad_fix(u, at, ratio)
    size = (f"{u.elements:,} parameter elements, {ratio:.1f}x the {u.trained:,} the optimizers train"
            if ratio < 10 else f"{u.elements:,} parameter elements, {ratio:.0f}x the {u.trained:,} "
            "the optimizers train")
    if u.whole and u.input_grad:
        return Fix(text=(f"{u.name} (called at {at}) takes an input that carries gradients, and each "
                         f"step's backward also computes gradients for its {size}, which no optimizer "
                         f"updates: freeze it, {u.name}.requires_grad_(False) once, where nothing reads "
                         "its gradients (the backward still passes through it to its input, as a "
                         "perceptual loss's feature network needs; torch.no_grad() would cut that "
                         "path); try it and time it"), where=u.site)
    if u.whole:
        return Fix(text=(f"{u.name} (called at {at}) runs with autograd on, and each step's backward "
                         f"computes gradients for its {size}, which no optimizer updates: compute its "
                         f"output under torch.no_grad() (with torch.no_grad(): out = {u.name}(x)), or "
                         f"{u.name}.requires_grad_(False) once, where nothing reads its gradients (a "
                         "distillation's teacher, a target network). Measured on a test machine, a "
                         "1.3M-element teacher beside a 34k student: 300 steps 1.6-1.7 s, 0.7 s under "
                         "no_grad; try it and time it"), where=u.site)
    return Fix(text=(f"each step's backward computes gradients for {u.elements:,} parameter elements of "
                     f"{u.name} (called at {at}) that no optimizer holds ({ratio:.1f}x the {u.trained:,} "
                     "the optimizers train): parameters left out of the optimizer but still requiring "
                     "grad. Freeze them, p.requires_grad_(False) for each (the backward then "
                     "stops short of them), where nothing reads their gradients; try it and time it"),
               where=u.site)


def _data_grad_fix(u: UntrainedGrads, at: str, ratio: float) -> Fix:
    """The data the model's input is taken from requires grad (probes/data_leaves.py). Measured
    here (tests/scripts/real_code/data_requires_grad.py, make check-fixes applies it): a 400,000 x
    64 dataset made with requires_grad=True, the script 11.3 s; without, 2.3 s."""
    shape = " x ".join(f"{n:,}" for n in u.data_shape or [])
    return Fix(text=(f"the input {u.name} takes at {at} is cut from a {shape} tensor that requires "
                     "grad and that no optimizer holds: each step's backward makes that whole tensor's "
                     f"gradient ({u.elements:,} elements, {ratio:.0f}x the {u.trained:,} parameter "
                     "elements the optimizers train) and adds it into its .grad, which nothing reads. "
                     "Make the data without requires_grad (drop requires_grad=True where it is made, "
                     "or call .requires_grad_(False) on it once before the loop): the model's "
                     "gradients stay the same. Measured on a test machine, a 400,000 x 64 dataset: "
                     "the script 11.3 s, 2.3 s without; try it and time it"), where=u.site)


def times(n: int) -> str:
    return "twice" if n == 2 else f"{n} times"


def again_fix(a: BackwardAgain) -> Fix:
    """Backward run once a loss through one forward (retain_graph=True keeping its graph for the
    next): the shared part's backward is paid again for each; one backward of the sum adds the same
    gradients into .grad."""
    lines = [s for s in dict.fromkeys(a.pass_sites) if s]
    at = (f"; backward called at {' and '.join(lines)}" if len(lines) > 1 else
          f"; backward called at {lines[0]}, {a.passes} times" if lines else "")
    share = (f"Backward is {pct(a.backward_share)} of each step here; measured" if a.backward_share
             else "Measured")
    return Fix(text=(f"each step runs backward {times(a.passes)} through one forward of {a.name} "
                     f"({a.elements:,} parameter elements, called at {a.site or 'a line not known'}"
                     f"{at}): each loss backpropagated on its own, retain_graph=True keeping the graph "
                     f"for the next, pays {a.name}'s backward again. Backpropagate their sum once, "
                     "(loss_a + loss_b).backward(): the same gradients (each backward adds into .grad), "
                     "where nothing reads or changes the gradients between the calls (per-task "
                     f"gradient surgery such as PCGrad needs them apart). {share} on a test machine "
                     "(a 1.8M-element trunk, two heads, SGD, batches of "
                     "128): a step 14.4-14.6 ms, 7.6-8.4 ms summed; try it and time it"),
               where=next(iter(lines), None) or a.site)


def cell_loop_fix(c: CellLoop) -> Fix:
    """An RNN cell stepped in Python over a sequence made before the loop: nn.LSTM (GRU, RNN) over
    the whole sequence computes the same outputs in one call."""
    fused = FUSED[c.cell]
    attr = f"self.{fused.lower()}" if (c.name or "").startswith("self.") else fused.lower()
    state = "(h, c)" if fused == "LSTM" else "h"
    first = (", batch_first=True" if c.axis == 1 else "" if c.axis == 0 else
             ", batch_first=True where the time axis is the second")
    return Fix(text=(f"the loop at {c.site or 'a line not known'} calls {c.cell} {c.name or 'its cell'} "
                     f"{c.calls} times a step, once per position of {c.sequence}, which is made before "
                     f"the loop: nn.{fused}({c.input_size}, {c.hidden_size}{first}) computes the whole "
                     f"sequence in one call, the same math with one autograd node instead of "
                     f"{c.calls} rounds of small ones: out, {state} = {attr}({c.sequence}), then the "
                     "per-step layers once on out. Its weights are the cell's under other names "
                     "(weight_ih is weight_ih_l0), so a checkpoint loads after renaming its keys. "
                     f"Its forwards alone took {pct(c.forward_share or 0.0)} of a step here; measured "
                     "on a test machine (an LSTMCell of 128 over 64 steps, batch 32): 33 ms a forward "
                     "and backward as the loop, 12 ms as nn.LSTM; try it and time it"),
               where=c.site)


def per_sample_inner_fix(p: InnerPerSample) -> Fix:
    """A submodule the forward calls once per sample: layers take the batch as leading dimensions,
    so one call on the whole batch computes the same per-sample results."""
    one = " x ".join(map(str, p.sample_shape))
    return Fix(text=(f"the model's forward calls {p.name} ({p.module}) {p.calls} times a step at "
                     f"{p.site or 'a line not known'}, once per sample of its batch of {p.batch_shape[0]} "
                     f"(each {one}), in a Python loop: each call pays every layer's per-call cost for "
                     f"one sample. Layers such as nn.Linear (any leading dimensions), convolutions and "
                     f"attention take the batch as their first dimension, so one call on the whole batch, "
                     f"{p.name}(x), computes the "
                     "same per-sample results; what the loop then did to each sample's output is done "
                     "along the batch (a .mean(0) of each becomes .mean(1) of the whole). Not where a "
                     "layer mixes samples (BatchNorm in training mode) or the samples differ in length "
                     "(pad them first). Not torch.compile or bfloat16 first: they would speed up each "
                     "small call, not remove them. Measured on a test machine (a 2-layer encoder over "
                     "64 sets of 16 x 64): 11.8 ms a step as the loop, 1.6 ms on the whole batch; try "
                     "it and time it"),
               where=p.site)


def attention_fix(a: StackFrameShare) -> Fix:
    """nn.MultiheadAttention computing the weights the line drops (analysis/attention_weights.py)."""
    return Fix(text=(f"the nn.MultiheadAttention call at {a.location} (in {a.function}) returns its "
                     "attention weights (need_weights=True, its default) and the line drops them: pass "
                     "need_weights=False, which gives the same output through scaled_dot_product_attention, "
                     "one fused kernel (flash attention on a GPU), where asked for the weights it builds "
                     f"and averages them itself. Its forward took {pct(a.share)} of the main thread here; "
                     "on a test machine a 2-block model at 8 x 512 tokens ran 17.1 s as written, 13.4 s "
                     "with need_weights=False; try it and time it"), where=a.location)


def hand_attention_fix(a: StackFrameShare) -> Fix:
    """Attention written by hand (analysis/hand_attention.py): one fused call computes the same."""
    return Fix(text=(f"the attention in {a.function} is written by hand (softmax of q @ k^T, times v, at "
                     f"{a.location}): it writes the (batch, heads, L, L) scores and probabilities out and "
                     "keeps them for backward. torch.nn.functional.scaled_dot_product_attention(q, k, v) "
                     "computes the same in fused kernels (flash attention, on a CPU as on a GPU): pass "
                     "is_causal=True for a causal mask (or the mask as attn_mask, True where attending), "
                     "dropout_p for the probabilities' dropout while training, and scale= where the "
                     "scores are not divided by sqrt(head size). Their forward took "
                     f"{pct(a.share)} of the main thread's samples here (their backward more, not "
                     "told apart by line); on a test machine a "
                     "causal 2-block model at 8 x 512 tokens ran 20 steps in 14.3 s written so, 11.5 s "
                     "with it; try it and time it"), where=a.location)


def onehot_fix(a: StackFrameShare) -> Fix:
    """An embedding lookup written as a one-hot matrix product (analysis/onehot_lookup.py)."""
    return Fix(text=(f"the product at {a.location} (in {a.function}) multiplies a one_hot(ids, V) tensor by "
                     "a weight: an embedding lookup written as a matrix product, which writes a tensor of "
                     "V zeros and ones per id and multiplies every zero, forward and backward. "
                     "F.embedding(ids, W) (or W[ids]; an nn.Embedding holding W) gives the same rows "
                     "and the same gradient for W. Its forward took "
                     f"{pct(a.share)} of the main thread's samples here (the product's backward more, not "
                     "told apart by line); on a test machine a 20,000-word bag of words at 32 x 64 "
                     "tokens ran 200 steps in 39.8 s written so, 2.8 s with F.embedding; try it and "
                     "time it"), where=a.location)


def padding_fix(lo: LoaderInfo) -> Fix:
    """Batches padded to a fixed length, or each to its longest sample among lengths far apart: the
    model computes on the padding."""
    share, length, median, longest = (lo.batch_padding or [0.0, 0, 0, 0])[:4]
    if padded_per_batch(lo):  # each batch to its own longest: the lengths drawn together
        return Fix(text=(f"each batch is padded to its own longest sample ({length} positions in the first, "
                         f"where the median sample uses {median}: its lengths vary from batch to batch, "
                         f"{', '.join(map(str, lo.padded_lengths))} in the first {len(lo.padded_lengths)}), "
                         f"and samples of very different lengths are drawn together: {pct(share)} of the "
                         "positions the model computes on are padding. Draw each batch from samples of "
                         "similar length: sort the indices by length, cut them into batches, and shuffle "
                         "the batches' order each epoch (a batch_sampler= for the DataLoader; transformers' "
                         "group_by_length=True does so). Measured on a test machine, an LSTM over 2,000 "
                         "sequences of 5-300 tokens padded per batch: 4.1-4.7 s an epoch shuffled, 2.4 s "
                         "drawn from length buckets; a 2-layer transformer over 960 of 20-200 tokens: "
                         "9.1-9.4 s, 4.7 s; try it and time it"), where=lo.site)
    where = lo.dataset_getitem if lo.collate_fn is None else lo.site
    pads_in = (f"its collate_fn {lo.collate_fn} pads" if lo.collate_fn else "__getitem__ pads")
    return Fix(text=(f"each batch is padded to {length} positions, where its longest sample uses {longest} "
                     f"and the median {median}: {pct(share)} of the positions the model computes on are "
                     f"padding ({pads_in} to a fixed length). Pad each batch to its own longest "
                     "sample instead: return each sample unpadded and pad in a collate_fn, "
                     "torch.nn.utils.rnn.pad_sequence(ids, batch_first=True, padding_value=<pad id>) "
                     "(a tokenizer's padding=True, 'longest', in place of 'max_length'), and "
                     "DataLoader(..., collate_fn=...); where the model needs a fixed length (a "
                     "Linear over the whole sequence), keep it. Measured on a test machine, an LSTM "
                     "over 4,000 reviews of 10-64 tokens padded to 256: 31-33 s as written, 3.7-4.2 s "
                     "padded per batch; try it and time it"), where=where)


def recompute_fix(r: CheckpointRecompute, step_s: float | None, memory: tuple[int, int] | None,
                  on_gpu: bool = False) -> Fix:
    """Activation checkpointing on: backward runs each checkpointed block's forward again. Where the
    memory is there, calling the blocks directly saves that forward; their activations are then kept
    from forward to backward. On a CPU the blocks' forwards were timed as they ran: the step without
    them is predicted; on a GPU that time is the host's launching, so it is a try."""
    sequential = r.blocks[:1] == ["checkpoint_sequential"]
    what = (f"{r.calls} checkpoint_sequential segment{'s' if r.calls != 1 else ''}" if sequential else
            f"{r.calls} checkpointed {' / '.join(r.blocks[:2]) or 'block'} call{'s' if r.calls != 1 else ''}")
    at = (f"{'checkpoint_sequential' if sequential else 'checkpoint'}(...) called at "
          f"{r.site or 'a line not known'}") + (f" through {r.via}" if r.via else "")
    if sequential and not r.via:
        how = "call the model directly, `model(x)` in place of `checkpoint_sequential(model, segments, x)`"
    elif r.via:
        how = ("turn the library's setting off where the script turns it on (for a transformers "
               "model, gradient_checkpointing=False in its TrainingArguments, or no "
               "model.gradient_checkpointing_enable())")
    else:
        how = ("call each block directly, `block(x)` in place of `checkpoint(block, x, ...)`, or turn "
               "off the script's own setting that chooses checkpointing")
    peak = (f" (the run's peak here: {gib(memory[0])} of {gib(memory[1])})" if memory else "")
    cost = (f"{ms(r.per_step_s)} of each {ms(step_s)} step ({pct(r.share)})" if step_s and not on_gpu
            else f"the host's {ms(r.per_step_s)} a step launching them ({pct(r.share)})")
    expected = step_s * (1.0 - r.share) if step_s and not on_gpu else None
    gain = (f": the step would take about {ms(expected)}" if expected is not None else
            ": the GPU then runs those forwards once; try it and time it")
    return Fix(text=(f"activation checkpointing is on: each step's backward runs the forward of its "
                     f"{what} again ({at}), {cost}, so as not to keep their activations. Where memory "
                     f"allows, {how}{gain}. Their activations are then kept from forward to backward "
                     f"and peak memory rises{peak}; try it and watch memory. Measured on a test "
                     "machine (six residual MLP blocks of 256, batch 128): 42.3 ms a step "
                     "checkpointed, 33.4 ms without"),
               where=r.site, expected=f"{pct(r.share)} of each step" if expected is not None else None,
               expected_step_s=round(expected, 6) if expected is not None else None)


def penalty_fix(p: ParamPenalty, share: float, opt: OptimizerWork | None) -> Fix:
    """A penalty over the parameters written tensor by tensor into the loss: a few small ops per
    tensor forward and as many backward. A sum of squares is what weight_decay adds to each
    gradient inside the optimizer's own multi-tensor update (SGD, Adam: coupled, the same training;
    AdamW's is decoupled, another rule); another penalty can run over all tensors at once."""
    name = (opt.cls or "").rsplit(".", 1)[-1] if opt is not None else ""
    built = f" where {name or 'the optimizer'} is built ({opt.site})" if opt is not None and opt.site else ""
    what = (f"each step computes a penalty over the model's parameters one tensor at a time, at "
            f"{p.site or 'a line not known'} ({p.tensors} tensors, {p.ops} small ops whose forward "
            f"alone took {ms(p.forward_s)}, {pct(share)} of a step; its backward runs about as many "
            "again) and adds it to the loss. ")
    if p.squared and name == "AdamW":
        how = ("A sum of squares, lam * sum(p.pow(2).sum()), adds 2 * lam * p to each gradient: "
               "torch.optim.Adam(..., weight_decay=2 * lam) does that inside its multi-tensor "
               f"update, the same training without the penalty's ops{built}. AdamW's own "
               "weight_decay is decoupled (it shrinks the weights apart from the gradient): a "
               "different rule, compare the metric if you keep AdamW with it")
    elif p.squared:
        how = ("A sum of squares, lam * sum(p.pow(2).sum()), adds 2 * lam * p to each gradient, which "
               f"{name or 'the optimizer'}(..., weight_decay=2 * lam) adds inside its own "
               f"multi-tensor update{built}: drop the penalty from the loss and pass weight_decay, "
               "the same training (where the penalty covers some parameters only, weights and not "
               "biases, give those a param group of their own with it)")
    else:
        how = ("The same sum over all the tensors at once, e.g. torch.stack(torch._foreach_norm("
               "params, 1)).sum() for sum(p.abs().sum()) (the multi-tensor norm torch's optimizers "
               "use), runs one op over the list instead of a few per tensor")
    return Fix(text=(f"{what}{how}. Measured on a test machine (a 7-layer MLP with Adam, 30 tensors, "
                     "batch 256): 7.0 ms a step with the penalty, 5.9 ms with weight_decay; try it "
                     "and time it"), where=p.site)


def wasted_fixes(w: Wasted, step_s: float | None, on_gpu: bool = False) -> list[Fix]:
    """The fixes compute-bound gives for work the step does for nothing, on a CPU or a GPU alike, in
    the order both say them (each caller puts its own before and after: the model's loops first, a
    repeated forward last)."""
    return (([slice_fix(w.slices)] if w.slices else [])
            + ([bag_fix(w.bag)] if w.bag else [])
            + ([mostly_zeros_fix(w.sparse)] if w.sparse else [])
            + ([onehot_fix(w.onehot)] if w.onehot else [])
            + ([sibling_fix(w.siblings)] if w.siblings else [])
            + ([attention_fix(w.attention)] if w.attention else [])
            + ([hand_attention_fix(w.hand_attention)] if w.hand_attention else [])
            + ([recompute_fix(w.recompute, step_s, w.memory, on_gpu)] if w.recompute else [])
            + ([penalty_fix(w.penalty, w.penalty_share, w.penalty_optimizer)] if w.penalty else [])
            + [untrained_fix(u) for u in w.untrained] + ([again_fix(w.again)] if w.again else [])
            + ([padding_fix(w.padded)] if w.padded else []))


def wasted_clause(d: Compute) -> str:
    """Work the step does for nothing, said with the verdict (the first fix says what to change)."""
    w = d.waste
    if d.overhead is not None or d.per_sample is not None:
        return ""
    if w.slices is not None:
        return (f", and its loss is taken over {slices(w.slices)} slices of {w.slices.tensor} one by one, "
                "each slice's backward a gradient as large as all of it")
    if w.untrained:
        u = w.untrained[0]
        if u.data_shape:
            shape = " x ".join(f"{n:,}" for n in u.data_shape)
            return (f", and its backward also computes the whole gradient of the {shape} tensor that "
                    f"{u.name}'s input is cut from, which requires grad and nothing updates")
        return (f", and its backward also computes gradients for {u.elements:,} parameter elements of "
                f"{u.name} that no optimizer updates")
    if w.again is not None:
        return f", and it runs backward {times(w.again.passes)} a step through one forward of {w.again.name}"
    if w.per_sample_inner is not None:
        p = w.per_sample_inner
        return f", and its forward calls {p.name} once per sample: {p.calls} calls a step"
    if w.cell_loop is not None:
        c = w.cell_loop
        return f", and it steps {c.cell} {c.name or 'its cell'} {c.calls} times a step in a Python loop"
    if w.recompute is not None:
        r = w.recompute
        return (f", and {pct(r.share)} of it is the forwards its backward runs again for activation "
                f"checkpointing ({r.calls} checkpoint() calls a step)")
    if w.penalty is not None:
        return (f", and it computes a penalty over {w.penalty.tensors} parameter tensors one by one "
                f"({pct(w.penalty_share)} of the step in its forward alone)")
    if w.padded is not None and w.padded.batch_padding:
        to = "each to its longest sample" if padded_per_batch(w.padded) else f"to {w.padded.batch_padding[1]}"
        return (f", and {pct(w.padded.batch_padding[0])} of the positions it computes on are padding "
                f"(batches padded {to})")
    if w.bag is not None:
        return f", and its forward looks up {w.bag.name} once per sample ({w.bag.calls} calls a step)"
    if w.sparse is not None:
        return f", and it multiplies a {w.sparse.density:.2%}-nonzero matrix as a dense one"
    if w.siblings is not None:
        return f", and its forward calls {w.siblings.modules} {w.siblings.module} modules one by one"
    if w.onehot is not None:
        return ", and its embedding lookup is a one-hot matrix product"
    if w.attention is not None:
        return ", and its attention computes weights the script drops"
    if w.hand_attention is not None:
        return ", and its attention is written by hand where one fused call computes it"
    return ""
