"""The counted step's model calls, from real torch modules: a Python loop over the batch's samples
is batch-size outermost calls of one row; a batched call with its loss module is one call of the
batch (the loss counted apart, as another module); the hooks are gone after the step, which is
reported perturbed."""

from __future__ import annotations

from pathlib import Path

import torch
from recorders import ListRecorder
from script_lines import line_of

from gpubottle.probes.model_calls import COUNT_STEP, ModelCallCounter
from gpubottle.wire import ModelCalls, Perturbed


def _model() -> torch.nn.Module:
    return torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 2))


def _counted(step_body, models=None, optimizers=None) -> list:
    rec = ListRecorder()
    probe = ModelCallCounter(rec, models, optimizers)  # type: ignore[arg-type]
    for step in range(1, COUNT_STEP + 1):
        probe.on_step(step)
    step_body()
    probe.on_step(COUNT_STEP + 1)
    probe.on_step(COUNT_STEP + 2)  # (no call after the step: the tail for a repeat ends here)
    assert not probe.handles  # removed
    return rec.records


def test_a_loop_over_the_samples_is_batch_size_calls_of_one_row():
    model, x = _model(), torch.randn(32, 8)
    records = _counted(lambda: [model(x[i].unsqueeze(0)) for i in range(32)])
    [calls] = [r for r in records if isinstance(r, ModelCalls)]
    assert (calls.calls, calls.rows, calls.module, calls.step) == (32, 1, "Sequential", COUNT_STEP + 1)
    from pathlib import Path

    text = Path(__file__).read_text().splitlines()
    line = next(i for i, t in enumerate(text, 1) if "unsqueeze(0)) for i" in t)
    assert calls.site is not None and calls.site.endswith(f"test_model_calls.py:{line}")
    assert any(isinstance(r, Perturbed) and r.what == "model-calls" for r in records)


def test_an_unbatched_float_vector_is_one_row_and_a_vector_of_ids_a_batch():
    """`policy(torch.from_numpy(state).float())`: an agent's 4 state values are one sample (it read
    as 4 rows, and its per-step calls went unsaid); 1-D integer ids may be a batch of them."""
    model, x = _model(), torch.randn(32, 8)
    [calls] = [r for r in _counted(lambda: [model(x[i]) for i in range(12)]) if isinstance(r, ModelCalls)]
    assert (calls.calls, calls.rows) == (12, 1)
    emb, ids = torch.nn.Embedding(100, 4), torch.randint(0, 100, (32,))
    [calls] = [r for r in _counted(lambda: [emb(ids) for _ in range(4)]) if isinstance(r, ModelCalls)]
    assert (calls.calls, calls.rows) == (4, 32)


def test_a_batched_call_is_one_call_of_the_batch_and_the_hooks_leave():
    model, loss, x = _model(), torch.nn.CrossEntropyLoss(), torch.randn(32, 8)
    records = _counted(lambda: loss(model(x), torch.zeros(32, dtype=torch.long)))
    [calls] = [r for r in records if isinstance(r, ModelCalls)]
    assert (calls.calls, calls.rows) == (1, 32)
    seen = []
    model.register_forward_pre_hook(lambda m, a: seen.append(1))
    model(x)  # the global hooks are gone: only the module's own
    assert seen == [1]


def test_an_error_inside_a_forward_does_not_leave_the_depth_behind():
    model, x = _model(), torch.randn(4, 8)

    def body() -> None:
        try:
            model(torch.randn(4, 3))  # wrong width: raises inside the first Linear
        except RuntimeError:
            pass
        for i in range(4):
            model(x[i:i + 1])

    [calls] = [r for r in _counted(body) if isinstance(r, ModelCalls)]
    assert (calls.calls, calls.rows) == (5, 1)


def test_the_outermost_modules_called_are_handed_to_the_step_hooks():
    """StepHooks.models: the model an inference loop calls (probes/subnormals.py looks at its
    weights); its inner layers and modules never called are not."""
    import weakref

    model, loss, unused = _model(), torch.nn.CrossEntropyLoss(), _model()
    models: weakref.WeakSet = weakref.WeakSet()
    _counted(lambda: loss(model(torch.randn(4, 8)), torch.zeros(4, dtype=torch.long)), models)
    assert set(map(id, models)) == {id(model), id(loss)} and unused not in models


def test_the_names_the_script_calls_its_modules_by():
    """For a fix that names them (net = torch.compile(net)): the callee on the user's line that is
    the module, looked up without running the script's code; a loss module (no parameters) and a
    module reached by an index are not named."""
    net, crit = _model(), torch.nn.CrossEntropyLoss()
    x, y = torch.randn(4, 8), torch.zeros(4, dtype=torch.long)
    [calls] = [r for r in _counted(lambda: crit(net(x), y)) if isinstance(r, ModelCalls)]
    assert calls.called == ["net"]

    class Trainer:  # a plain object that holds the model, as many loops' classes do
        def __init__(self) -> None:
            self.model = _model()

        def step(self) -> None:
            self.model(x).sum()

    t = Trainer()
    [calls] = [r for r in _counted(t.step) if isinstance(r, ModelCalls)]
    assert calls.called == ["self.model"]
    emb, lstm, head = torch.nn.Embedding(10, 8), torch.nn.LSTM(8, 8, batch_first=True), torch.nn.Linear(8, 10)
    tokens = torch.zeros(2, 5, dtype=torch.long)

    def char_rnn() -> None:  # three modules called one after another
        h, _ = lstm(emb(tokens))
        head(h)

    [calls] = [r for r in _counted(char_rnn) if isinstance(r, ModelCalls)]
    assert calls.called == ["emb", "lstm", "head"]
    blocks = torch.nn.ModuleList([_model()])
    [calls] = [r for r in _counted(lambda: blocks[0](x)) if isinstance(r, ModelCalls)]
    assert calls.called is None


def _line(marker: str) -> int:
    from pathlib import Path

    return line_of(Path(__file__), marker)


def test_a_second_forward_on_the_same_batch_is_a_repeat_within_the_step_or_after_it() -> None:
    """`loss = f(model(x))` then `model(x).argmax(1)` for an accuracy: the second call repeats the
    forward on the very tensor. Before the optimizer step (within the counted step) or after it
    (the next outermost call after the counted step's end)."""
    model, x = _model(), torch.randn(16, 8)

    def within() -> None:
        model(x).sum()  # the loss's forward
        model(x).argmax(1)  # an accuracy's, before the step

    [calls] = [r for r in _counted(within) if isinstance(r, ModelCalls)]
    assert calls.repeat is not None and calls.repeat_grad == 1
    assert calls.repeat[0].endswith(f":{_line('# the loss' + chr(39) + 's forward')}")
    assert calls.repeat[1].endswith(f":{_line('before the step')}")

    rec = ListRecorder()
    probe = ModelCallCounter(rec)  # type: ignore[arg-type]
    for step in range(1, COUNT_STEP + 1):
        probe.on_step(step)
    model(x).sum()
    probe.on_step(COUNT_STEP + 1)  # the optimizer step
    assert probe.tail and not [r for r in rec.records if isinstance(r, ModelCalls)]
    with torch.no_grad():
        model(x).argmax(1)  # after the step, under no_grad
    assert not probe.handles
    [calls] = [r for r in rec.records if isinstance(r, ModelCalls)]
    assert calls.repeat is not None and calls.repeat_grad == 0
    assert calls.repeat[1].endswith(f":{_line('after the step, under no_grad')}")
    assert [r.what for r in rec.records if isinstance(r, Perturbed)] == ["model-calls"]


def test_a_repeat_says_whether_the_weights_changed_between_its_calls() -> None:
    """A GAN without fake.detach(): D(fake) for D's loss, D's optimizer steps, D(fake) again for
    G's loss: the second call computes with new weights (recorded as updated); an accuracy's second
    forward before the step repeats the same weights."""
    D = _model()
    opt = torch.optim.SGD(D.parameters(), lr=0.1)
    fake = torch.randn(16, 8, requires_grad=True)

    def gan() -> None:
        D(fake).sum().backward(retain_graph=True)  # D's step
        opt.step()
        D(fake).sum()  # G's loss, through the updated D

    [calls] = [r for r in _counted(gan) if isinstance(r, ModelCalls)]
    assert calls.repeat is not None and (calls.repeat_grad, calls.repeat_updated) == (1, 1)

    def metric() -> None:
        D(fake).sum()
        D(fake).argmax(1)

    [calls] = [r for r in _counted(metric) if isinstance(r, ModelCalls)]
    assert calls.repeat is not None and calls.repeat_updated == 0


def test_new_batches_and_a_detached_copy_are_no_repeat() -> None:
    """The next step's forward on a new batch ends the tail with nothing; a GAN's D(fake.detach())
    then D(fake) are two tensors (the same storage): no repeat."""
    model = _model()
    fake = torch.randn(16, 8, requires_grad=True)
    records = _counted(lambda: (model(fake.detach()), model(fake)))
    [calls] = [r for r in records if isinstance(r, ModelCalls)]
    assert calls.repeat is None and calls.calls == 2

    rec = ListRecorder()
    probe = ModelCallCounter(rec)  # type: ignore[arg-type]
    for step in range(1, COUNT_STEP + 1):
        probe.on_step(step)
    model(torch.randn(16, 8))
    probe.on_step(COUNT_STEP + 1)
    model(torch.randn(16, 8))  # the next step's batch
    assert not probe.handles
    [calls] = [r for r in rec.records if isinstance(r, ModelCalls)]
    assert calls.repeat is None and calls.repeat_grad is None


def test_embedding_tables_with_dense_gradients_are_recorded_with_the_rows_a_step_read() -> None:
    """A recommender's table: 1000 rows, a batch of 4 x 3 ids (at most 12 rows read), Adam over it
    and a head. A sparse=True table, or a frozen one, is not recorded."""

    class Rec(torch.nn.Module):
        def __init__(self, sparse: bool = False) -> None:
            super().__init__()
            self.emb = torch.nn.Embedding(1000, 8, sparse=sparse)
            self.head = torch.nn.Linear(8, 1)

        def forward(self, ids: torch.Tensor) -> torch.Tensor:
            return self.head(self.emb(ids).mean(1))

    ids = torch.tensor([[1, 2, 3], [3, 4, 5], [1, 1, 1], [9, 8, 7]])  # 8 distinct rows
    model = Rec()
    opt = torch.optim.Adam(model.parameters())
    rec = ListRecorder()
    probe = ModelCallCounter(rec, None, [opt])  # type: ignore[arg-type]
    for step in range(1, COUNT_STEP + 1):
        probe.on_step(step)
    model(ids)
    probe.on_step(COUNT_STEP + 1)
    probe.on_step(COUNT_STEP + 2)
    [calls] = [r for r in rec.records if isinstance(r, ModelCalls)]
    assert calls.tables == [["Rec.emb", 1000, 8, 8, round(8000 / (8000 + 8 + 1), 4), "Adam"]]
    class TiedLM(torch.nn.Module):  # a language model's output layer tied to its embedding
        def __init__(self) -> None:
            super().__init__()
            self.emb, self.out = torch.nn.Embedding(1000, 8), torch.nn.Linear(8, 1000)
            self.out.weight = self.emb.weight  # its gradient is dense anyway

        def forward(self, ids: torch.Tensor) -> torch.Tensor:
            return self.out(self.emb(ids))

    tied = TiedLM()
    records = _counted(lambda: tied(ids))
    [calls] = [r for r in records if isinstance(r, ModelCalls)]
    assert calls.tables is None
    for sparse, frozen in ((True, False), (False, True)):
        other = Rec(sparse)
        other.emb.weight.requires_grad_(not frozen)
        records = _counted(lambda m=other: m(ids))
        [calls] = [r for r in records if isinstance(r, ModelCalls)]
        assert calls.tables is None


def test_an_argument_no_weak_reference_can_name_leaves_the_count_whole() -> None:
    class Shaped:
        __slots__ = ("shape",)  # no __weakref__: weakref.ref raises TypeError

        def __init__(self) -> None:
            self.shape = (4, 8)

    class Takes(torch.nn.Module):
        def forward(self, a: object) -> torch.Tensor:
            return torch.zeros(4)

    model = Takes()
    [calls] = [r for r in _counted(lambda: (model(Shaped()), model(Shaped()))) if isinstance(r, ModelCalls)]
    assert (calls.calls, calls.rows, calls.repeat) == (2, 4, None)


def test_a_fixed_batch_the_next_step_takes_again_from_the_same_line_is_no_repeat() -> None:
    """A synthetic benchmark trains on one batch made once: the next step's forward (the call after
    the counted step) takes the same tensor from the same line. Seen in 7 of the suite's scripts
    (anomaly_left_on.py, print_tensors.py, ...) before the line was compared."""
    model, x = _model(), torch.randn(16, 8)
    rec = ListRecorder()
    probe = ModelCallCounter(rec)  # type: ignore[arg-type]
    for step in range(1, COUNT_STEP + 1):
        probe.on_step(step)
    for step in (COUNT_STEP + 1, COUNT_STEP + 2):
        model(x).sum()  # each step's forward, one line
        probe.on_step(step)
    [calls] = [r for r in rec.records if isinstance(r, ModelCalls)]
    assert calls.repeat is None


def _teacher_step(teacher: torch.nn.Module, student: torch.nn.Module, opt: torch.optim.Optimizer,
                  no_grad: bool = False) -> ModelCalls:
    """One counted distillation step: the teacher's output as the student's target."""
    def step() -> None:
        x = torch.randn(4, 32)
        if no_grad:
            with torch.no_grad():
                soft = teacher(x)
        else:
            soft = teacher(x)
        loss = torch.nn.functional.mse_loss(student(x), soft)
        opt.zero_grad()
        loss.backward()
        opt.step()

    [calls] = [r for r in _counted(step, optimizers=[opt]) if isinstance(r, ModelCalls)]
    return calls


def test_a_teacher_whose_gradients_backward_computes_for_no_optimizer_is_recorded() -> None:
    """A distillation: the teacher (32x64 + 64x8 weights) called with autograd on, its output the
    student's target; only the student (32x8) is in the optimizer. Under no_grad, or frozen, or
    in the optimizer, it is not recorded; nor is a frozen backbone's part left requiring grad
    below UNTRAINED_MIN elements."""
    def nets() -> tuple[torch.nn.Module, torch.nn.Module]:
        return (torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 8)),
                torch.nn.Linear(32, 8))

    teacher, student = nets()
    calls = _teacher_step(teacher, student, torch.optim.SGD(student.parameters(), lr=0.1))
    t_elems, s_elems = sum(p.numel() for p in teacher.parameters()), 32 * 8 + 8
    assert calls.untrained is not None and len(calls.untrained) == 1, calls.untrained
    name, site, filled, trained, whole, input_grad = calls.untrained[0]
    assert (name, filled, trained, whole, input_grad) == ("teacher", t_elems, s_elems, 1, 0)
    assert site is not None and "test_model_calls.py" in site
    teacher, student = nets()
    assert _teacher_step(teacher, student, torch.optim.SGD(student.parameters(), lr=0.1),
                         no_grad=True).untrained is None
    teacher, student = nets()
    teacher.requires_grad_(False)
    assert _teacher_step(teacher, student, torch.optim.SGD(student.parameters(), lr=0.1)).untrained is None
    teacher, student = nets()
    both = torch.optim.SGD([*student.parameters(), *teacher.parameters()], lr=0.1)
    assert _teacher_step(teacher, student, both).untrained is None


def test_a_part_of_the_model_left_out_of_the_optimizer_is_recorded_as_a_part() -> None:
    """Fine-tuning a head with the optimizer over the head alone, the backbone still requiring
    grad: the backbone's gradients are computed every step for nothing."""
    model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 8))
    rec = ListRecorder()
    opt = torch.optim.SGD(model[2].parameters(), lr=0.1)
    probe = ModelCallCounter(rec, None, [opt])  # type: ignore[arg-type]
    for step in range(1, COUNT_STEP + 1):
        probe.on_step(step)
    net = model
    loss = net(torch.randn(4, 32)).sum()
    loss.backward()
    opt.step()
    probe.on_step(COUNT_STEP + 1)
    probe.on_step(COUNT_STEP + 2)
    [calls] = [r for r in rec.records if isinstance(r, ModelCalls)]
    assert calls.untrained == [["net", calls.site, 32 * 64 + 64, 64 * 8 + 8, 0, 0]], calls.untrained


def test_a_feature_network_under_a_loss_is_recorded_with_its_input_carrying_gradients() -> None:
    """A perceptual loss: a fixed feature network called on the generator's output, whose gradient
    the generator needs. Its own parameters' gradients are wasted, but no_grad would cut the path:
    the record says its input requires grad."""
    gen, features = torch.nn.Linear(16, 32), torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU())
    opt = torch.optim.SGD(gen.parameters(), lr=0.1)
    rec = ListRecorder()
    probe = ModelCallCounter(rec, None, [opt])  # type: ignore[arg-type]
    for step in range(1, COUNT_STEP + 1):
        probe.on_step(step)
    fake = gen(torch.randn(4, 16))
    loss = features(fake).pow(2).mean()
    loss.backward()
    opt.step()
    probe.on_step(COUNT_STEP + 1)
    probe.on_step(COUNT_STEP + 2)
    [calls] = [r for r in rec.records if isinstance(r, ModelCalls)]
    assert calls.untrained is not None and [u[0] for u in calls.untrained] == ["features"]
    assert calls.untrained[0][4:] == [1, 1]


class _HeadInForward(torch.nn.Module):
    """A head built inside forward at every call (a beginner's model); `keep` keeps one built
    outside instead, which is no part of the model either, but the same one every step."""

    def __init__(self, keep: torch.nn.Module | None = None) -> None:
        super().__init__()
        self.body = torch.nn.Linear(32, 64)
        self.keep = [keep]  # (a list: not registered as a submodule)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        head = self.keep[0] or torch.nn.Linear(64, 64)
        return head(self.body(x))


def _stray_step(model: torch.nn.Module) -> ModelCalls:
    opt = torch.optim.SGD(model.parameters(), lr=0.1)

    def step() -> None:
        loss = model(torch.randn(4, 32)).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()

    [calls] = [r for r in _counted(step, optimizers=[opt]) if isinstance(r, ModelCalls)]
    return calls


def test_a_layer_built_inside_forward_is_recorded_as_built_in_the_step() -> None:
    """The head built in forward is no part of the model and in no optimizer: recorded with its
    64x64+64 elements, its input carrying gradients, and built in the step (dead when the step
    ends: the probe's own records hold it weakly). One kept outside the model is recorded too,
    not as built; the model's own layers never."""
    calls = _stray_step(_HeadInForward())
    trained = 32 * 64 + 64
    assert calls.untrained is not None and len(calls.untrained) == 1, calls.untrained
    name, site, elements, held, whole, input_grad, built, stray, modules, holder = calls.untrained[0]
    assert (name, elements, held, whole, input_grad, built) == ("Linear", 64 * 64 + 64, trained, 1, 1, 1)
    assert (stray, modules, holder) == (1, 1, None)
    lines = Path(__file__).read_text().splitlines()
    assert site is not None and site.endswith(
        f"test_model_calls.py:{lines.index('        return head(self.body(x))') + 1}"), site
    kept = _stray_step(_HeadInForward(keep=torch.nn.Linear(64, 64)))
    assert kept.untrained is not None and [u[6:10] for u in kept.untrained] == [
        [0, 1, 1, "_HeadInForward.keep (a plain list)"]], kept.untrained


class _PlainList(torch.nn.Module):
    """Hidden layers in a plain Python list, which nn.Module does not register."""

    def __init__(self) -> None:
        super().__init__()
        self.inp = torch.nn.Linear(32, 64)
        self.hidden = [torch.nn.Linear(64, 64) for _ in range(3)]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.inp(x)
        for layer in self.hidden:
            h = layer(h)
        return h


def test_layers_in_a_plain_list_are_recorded_once_with_their_holder() -> None:
    """Three Linear layers called from one line of a loop over a plain list: one row for that line
    with their three modules' elements, kept across steps (not built), held in Net.hidden."""
    calls = _stray_step(_PlainList())
    assert calls.untrained is not None and len(calls.untrained) == 1, calls.untrained
    name, _, elements, held, _, _, built, stray, modules, holder = calls.untrained[0]
    assert (name, elements, held, built, stray, modules) == ("Linear", 3 * (64 * 64 + 64), 32 * 64 + 64,
                                                             0, 1, 3)
    assert holder == "_PlainList.hidden (a plain list)"


def test_each_line_of_outermost_calls_is_counted_with_its_rows_its_mode_and_its_time():
    """A bank encoded under no_grad inside the step (20,000 rows at one line) beside the training's
    calls on the batch: each line's calls, their most rows, autograd's mode at them and their time,
    most time first; the counted step's own seconds with them."""
    enc, bank, x = _model(), torch.randn(20000, 8), torch.randn(16, 8)

    def body() -> None:
        out = enc(x)
        with torch.no_grad():
            all_emb = enc(bank)
        (out.sum() + all_emb.mean()).backward()

    [calls] = [r for r in _counted(body) if isinstance(r, ModelCalls)]
    assert calls.sites is not None and calls.counted_s is not None and len(calls.sites) == 2
    text = Path(__file__).read_text().splitlines()
    bank_line = next(i for i, t in enumerate(text, 1) if t.strip() == "all_emb = enc(bank)")
    [site, name, n, rows, grad, seconds], train = calls.sites
    assert site.endswith(f"test_model_calls.py:{bank_line}") and (n, rows, grad) == (1, 20000, 0), calls.sites
    assert name in ("enc", "Sequential") and train[2:5] == [1, 16, 1], calls.sites
    assert 0 < train[5] <= seconds <= calls.counted_s


def test_many_alike_modules_called_one_by_one_from_one_line_are_siblings() -> None:
    """A depthwise convolution written as a list of Conv1d(1, 1, 7), each on one channel; heads on
    the very same features; experts each on its own rows (a mixture of experts); heads called
    through a subscript (`self.more[i](h)`); a stack of layers, each on the last one's output:
    recorded with their number, the first's input and configuration, whether all took the same
    tensor and whether all took one tensor's storage (slices of it)."""

    class PerChannel(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.convs = torch.nn.ModuleList(torch.nn.Conv1d(1, 1, 7, padding=3) for _ in range(16))
            self.heads = torch.nn.ModuleList(torch.nn.Linear(16, 2) for _ in range(8))
            self.experts = torch.nn.ModuleList(torch.nn.Linear(16, 16) for _ in range(8))
            self.more = torch.nn.ModuleList(torch.nn.Linear(16, 3) for _ in range(8))
            self.stack = torch.nn.ModuleList(torch.nn.Conv1d(16, 16, 3, padding=1) for _ in range(8))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            h = torch.cat([conv(x[:, c:c + 1]) for c, conv in enumerate(self.convs)], 1).mean(2)
            heads = [head(h) for head in self.heads]  # the same features
            rows = [expert(h[e::8]) for e, expert in enumerate(self.experts)]  # its own rows
            more = [self.more[i](h) for i in range(len(self.more))]
            y = x
            for layer in self.stack:
                y = torch.relu(layer(y))
            return torch.cat(heads + more, 1).sum() + sum(r.sum() for r in rows) + y.sum()

    outer = torch.nn.Sequential(PerChannel())
    x = torch.randn(16, 16, 32)
    [calls] = [r for r in _counted(lambda: outer(x)) if isinstance(r, ModelCalls)]
    found = {s[1]: s for s in calls.siblings or ()}
    assert set(found) == {"conv", "head", "expert", "self.more[i]", "layer"}, found
    conv, head, expert = found["conv"], found["head"], found["expert"]
    assert conv[:5] == ["Conv1d", "conv", conv[2], 16, 16] and conv[5] == [16, 1, 32]
    assert (conv[7], conv[8]) == (0, 1) and conv[9]["groups"] == 1 and conv[9]["in_channels"] == 1
    assert (head[3], head[7], head[9]["out_features"]) == (8, 1, 2)
    assert expert[7] == 0
    assert (conv[10], head[10], expert[10]) == (1, 1, 1)  # slices of x, h itself, rows of h
    more, stack = found["self.more[i]"], found["layer"]
    assert (more[3], more[7], more[9]["out_features"]) == (8, 1, 3)
    assert (stack[3], stack[7], stack[10]) == (8, 0, 0)  # each on the last one's output


def test_a_deep_ensembles_members_called_by_the_loop_on_one_batch_are_siblings() -> None:
    """`torch.stack([m(x) for m in members])` in the training loop: the members are the loop's own
    outermost calls, each once, all on the same batch: siblings too."""
    members = torch.nn.ModuleList(_model() for _ in range(10))
    x = torch.randn(16, 8)
    [calls] = [r for r in _counted(lambda: torch.stack([m(x) for m in members])) if isinstance(r, ModelCalls)]
    [s] = calls.siblings or []
    assert s[:4] == ["Sequential", "m", s[2], 10] and s[7:9] == [1, 1], s


def test_the_models_output_shape_is_recorded_not_a_loss_modules_called_more() -> None:
    """A loss module called once per time step outnumbers the model's one call: the recorded
    output shape is the model's (the first outermost module with parameters), its first tensor
    where it returns a tuple."""

    class Tagger(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.rnn = torch.nn.GRU(8, 16, batch_first=True)

        def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            return self.rnn(x)

    model, crit = Tagger(), torch.nn.MSELoss()
    x = torch.randn(4, 12, 8)

    def body() -> None:
        out, _ = model(x)
        loss = sum(crit(out[:, t], torch.zeros(4, 16)) for t in range(12))
        loss.backward()

    [calls] = [r for r in _counted(body) if isinstance(r, ModelCalls)]
    assert calls.module == "MSELoss" and calls.out_shape == [4, 12, 16], calls
