"""The table of frame patterns -> kind of work -> remedy (analysis/work_kinds.py), a test per row:
stacks taken from the real libraries at work (a callback inside json, copy and logging records
the Python stack as py-spy would see it), or built from the real modules' files and functions
where the work has no callback (PIL, the optimizer's loop, http.client). The spawn row's script is
tests/e2e/test_real_code.py's spawn_startup.py; CUDA's is test_startup_kinds.py."""

from __future__ import annotations

import concurrent.futures
import copy
import http.client
import importlib.util
import io
import json
import logging
import multiprocessing.pool
import multiprocessing.process
import sys
import traceback
from collections import Counter

import PIL.Image
import PIL.ImageFile
import torch
import torch.nn.utils.clip_grad as clip_grad
import torch.optim.adam as adam

from gpubottle.analysis.stacks import Frame
from gpubottle.analysis.work_kinds import (
    CHILDREN_WAIT,
    COPYING_MODEL,
    DEEPCOPY,
    LINE_KINDS,
    POOL_STARTS,
    WORK_KINDS,
    every_step,
    line_kind,
    refined,
    remedy,
    work_kind,
)


def _here() -> list[Frame]:
    """The Python stack at the caller, outermost first, as py-spy reports frames."""
    return [Frame(f.name, f.filename, f.lineno or 0) for f in traceback.extract_stack()[:-1]]


def test_json_encoding_and_parsing_from_the_real_encoder_and_decoder():
    seen: list[list[Frame]] = []

    def default(obj: object) -> str:
        seen.append(_here())
        return "x"

    json.dumps({"a": [object()]}, default=default)
    assert work_kind(seen[0]) == "encoding JSON (json.dumps)"

    def hook(obj: dict) -> dict:
        seen.append(_here())
        return obj

    json.loads('{"a": {"b": 1}}', object_hook=hook)
    assert work_kind(seen[-1]) == "parsing JSON (json.loads)"


def test_deep_copies_and_log_records_from_the_real_modules():
    seen: list[list[Frame]] = []

    class Leaf:
        def __deepcopy__(self, memo: dict) -> Leaf:
            seen.append(_here())
            return Leaf()

    copy.deepcopy({"state": [Leaf()]})
    assert work_kind(seen[0]) == "copying Python objects (copy.deepcopy)"

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            seen.append(_here())

    log = logging.getLogger("gpubottle-test-work-kinds")
    log.addHandler(Keep())
    log.warning("step %d", 1)
    assert work_kind(seen[-1]) == "writing log records (logging)"


def test_a_models_deep_copy_is_copying_the_model_where_its_parameters_are_cloned():
    """A deepcopy of a module, its stack taken (sys.setprofile) where torch's Parameter.__deepcopy__
    runs: copying the model; its samples in copy.py alone (each submodule's attributes) are the
    plain deepcopy's, counted as the model's where those are a fifth of the two or more."""
    seen: list[list[Frame]] = []

    def profile(frame, event, arg):  # type: ignore[no-untyped-def]
        if event == "call" and frame.f_code.co_name == "__deepcopy__" and \
                frame.f_code.co_filename.endswith("parameter.py") and not seen:
            seen.append([Frame(f.name, f.filename, f.lineno or 0) for f in traceback.extract_stack(frame)])

    model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU(), torch.nn.Linear(4, 2))
    sys.setprofile(profile)
    try:
        copy.deepcopy(model)
    finally:
        sys.setprofile(None)
    assert seen and work_kind(seen[0]) == COPYING_MODEL
    assert "torch._foreach_lerp_" in (remedy(COPYING_MODEL) or "")
    kinds: Counter[str | None] = Counter({COPYING_MODEL: 3, DEEPCOPY: 10, None: 2})
    assert refined(kinds) == Counter({COPYING_MODEL: 13, None: 2})
    assert refined(Counter({COPYING_MODEL: 1, DEEPCOPY: 10})) == Counter({COPYING_MODEL: 1, DEEPCOPY: 10})
    assert refined(Counter({DEEPCOPY: 10})) == Counter({DEEPCOPY: 10})


class _Recorded:
    """Unpickled by torch.load (weights_only=False) or numpy.load (allow_pickle): its __setstate__
    records the stack the loader's code is on, as py-spy would sample it there."""

    seen: list[list[Frame]] = []

    def __init__(self) -> None:
        self.state = 1  # (pickle calls __setstate__ only for an object with state)

    def __setstate__(self, state: dict) -> None:
        _Recorded.seen.append(_here())


class _Saved:
    """Pickled by torch.save: its __getstate__ records the stack the saver's code is on."""

    seen: list[list[Frame]] = []

    def __getstate__(self) -> dict:
        _Saved.seen.append(_here())
        return {"state": 1}


def test_files_read_one_per_sample_from_torch_load_and_numpy_load(tmp_path):
    import numpy
    import torch

    torch.save({"x": torch.zeros(2), "meta": _Recorded()}, tmp_path / "0.pt")
    torch.load(tmp_path / "0.pt", weights_only=False)
    assert work_kind(_Recorded.seen[-1]) == "reading tensors from files, one per sample (torch.load)"
    # Writing them is not reading them (a cache made a file per sample before training was
    # said as torch.load's work at the torch.save line).
    torch.save({"x": torch.zeros(2), "meta": _Saved()}, tmp_path / "1.pt")
    assert work_kind(_Saved.seen[-1]) == "writing tensors to files (torch.save)"
    numpy.save(tmp_path / "0.npy", numpy.array([_Recorded()], dtype=object), allow_pickle=True)
    numpy.load(tmp_path / "0.npy", allow_pickle=True)
    assert work_kind(_Recorded.seen[-1]) == "reading arrays from files (numpy.load)"


class _RecordingFile(io.BytesIO):
    """A compressed file whose reads record the stack the decompressing code is on."""

    seen: list[list[Frame]] = []

    def read(self, size: int | None = -1) -> bytes:
        _RecordingFile.seen.append(_here())
        return super().read(size)


def test_a_compressed_file_per_sample_is_decompressing_before_the_reader_above_it():
    import gzip

    import numpy

    raw = io.BytesIO()
    numpy.save(raw, numpy.zeros((4, 4), dtype=numpy.float32))
    with gzip.GzipFile(fileobj=_RecordingFile(gzip.compress(raw.getvalue())), mode="rb") as f:
        numpy.load(f)  # (numpy reads the header and the data through gzip's reader)
    kind = "decompressing a file for every sample (gzip, bz2, lzma)"
    assert work_kind(_RecordingFile.seen[-1]) == kind
    assert "mmap_mode='r'" in (remedy(kind) or "")


class _PyDecoded(PIL.ImageFile.ImageFile):
    """An image format whose pixels a Python decoder makes: PIL decodes it as it does a JPEG's, in
    ImageFile.load at the first pixel access, so the decoder sees the real stack above it."""

    format = "GBTEST"
    format_description = "gpubottle's test format"
    seen: list[list[Frame]] = []

    def _open(self) -> None:
        self._mode = "L"
        self._size = (4, 4)
        self.tile = [PIL.ImageFile._Tile("gbtest", (0, 0, 4, 4), 6, None)]


class _Decoder(PIL.ImageFile.PyDecoder):
    def decode(self, buffer: bytes) -> tuple[int, int]:
        _PyDecoded.seen.append(_here())
        self.set_as_raw(bytes(16))
        return -1, 0


def test_pil_decoding_beneath_a_transform_and_a_transform_on_decoded_pixels():
    """A resize of an image just opened decodes it (the time is decoding's, whose remedies apply);
    a transform of pixels already there (an augmentation's, Image.point here) is not decoding: its
    remedy is resizing once ahead and batched tensor ops, never Image.draft."""
    PIL.Image.register_open(_PyDecoded.format, _PyDecoded, lambda prefix: prefix[:6] == b"GBTEST")
    PIL.Image.register_decoder("gbtest", _Decoder)
    opened = PIL.Image.open(io.BytesIO(b"GBTEST" + bytes(16)))
    assert not _PyDecoded.seen  # opening reads the header only
    opened.resize((2, 2))
    stack = _PyDecoded.seen[-1]
    assert [f.name for f in stack[-3:-1]] == ["resize", "load"]  # (the real stack: load under resize)
    assert work_kind(stack) == "decoding images (PIL)"
    # py-spy qualifies the names (ImageFile.load under Image.resize): the same kind
    spy = [Frame(f"Image.{f.name}" if f.file == PIL.Image.__file__ else
                 f"ImageFile.{f.name}" if f.file == PIL.ImageFile.__file__ else f.name, f.file, f.line)
           for f in stack]
    assert work_kind(spy) == "decoding images (PIL)"
    seen: list[list[Frame]] = []
    PIL.Image.new("L", (2, 2)).point(lambda v: seen.append(_here()) or v)
    kind = work_kind(seen[-1])
    assert kind is not None and kind.startswith("transforming images in PIL")
    assert "Image.draft" not in (remedy(kind) or "") and "tensor ops" in (remedy(kind) or "")
    assert work_kind(spy[:-2]) == kind  # the resize's own frames, its pixels decoded already


def test_rows_without_a_callback_match_their_real_files_and_functions():
    user = Frame("train_step", "/home/u/train.py", 12)
    cases = {
        "decoding images (PIL)": Frame("ImageFile.load", PIL.ImageFile.__file__, 250),
        # (a script that makes its images itself: Image.save is encoding, said apart)
        "encoding images (PIL: Image.save)": Frame("Image.save", PIL.Image.__file__, 2400),
        "the optimizer's per-tensor loop (foreach off)": Frame(
            "_single_tensor_adam", adam.__file__, 300),
        "network requests": Frame("getresponse", http.client.__file__, 1300),
        "clipping gradients (torch.nn.utils.clip_grad_*)": Frame(
            "clip_grad_norm_", clip_grad.__file__, 200),
        # (the file found without importing dynamo, which costs seconds)
        "compiling (torch.compile)": Frame("_compile", str(importlib.util.find_spec(
            "torch._dynamo.convert_frame").origin), 700),
        "updating a progress bar (tqdm)": Frame("tqdm.update", str(importlib.util.find_spec(
            "tqdm.std").origin), 1240),
        # (not installed here: their files as they lie in site-packages)
        "writing TensorBoard summaries": Frame(
            "SummaryWriter.add_histogram", "/venv/lib/python3.11/site-packages/torch/utils/"
            "tensorboard/writer.py", 500),
        "logging to Weights & Biases (wandb)": Frame(
            "Run.log", "/venv/lib/python3.11/site-packages/wandb/sdk/wandb_run.py", 1800),
        # (pandas 3.1's files, as a stack recorded inside df.iloc[i] showed them)
        "looking rows up in a pandas DataFrame, one at a time": Frame(
            "_iLocIndexer._getitem_axis", "/venv/lib/python3.11/site-packages/pandas/core/indexing.py",
            1700),
    }
    pool = importlib.util.find_spec("multiprocessing.pool").origin
    futures = importlib.util.find_spec("concurrent.futures.process").origin
    starts = [Frame("Pool.__init__", str(pool), 200), Frame("Pool.__exit__", str(pool), 740),
              Frame("ProcessPoolExecutor.shutdown", str(futures), 860)]
    assert hasattr(multiprocessing.pool.Pool, "terminate") and hasattr(
        concurrent.futures.ProcessPoolExecutor, "shutdown")
    for frame in starts:  # a pool made and closed in the loop (pool_each_step.py)
        assert work_kind([user, frame]) == POOL_STARTS, frame
    assert work_kind([user, Frame("Pool.map", str(pool), 360)]) is None  # its work handed over
    assert "before the loop" in (remedy(POOL_STARTS) or "")
    assert hasattr(adam, "_single_tensor_adam")
    for kind, frame in cases.items():
        assert work_kind([user, frame]) == kind
    # (a loop saving a new image each step: "encode once" alone is no fix for it)
    saving = remedy("encoding images (PIL: Image.save)") or ""
    assert "save fewer images" in saving and "background thread" in saving, saving
    assert work_kind([user, Frame("adam", adam.__file__, 10)]) is None  # not its loop
    assert work_kind([user, Frame("deepcopy", "/home/u/copy.py", 3)]) == (
        "copying Python objects (copy.deepcopy)")  # (a user's copy.py with deepcopy: the risk taken)
    assert work_kind([user]) is None
    # The backward's graph compiled at the first backward: no dynamo frame on that stack; a graph
    # compile_fx.py wraps running (cudagraphs' runner) is no compiling.
    compile_fx = str(importlib.util.find_spec("torch._inductor.compile_fx").origin)
    backward = Frame("Tensor.backward", "/venv/lib/python3.11/site-packages/torch/_tensor.py", 600)
    assert work_kind([user, backward, Frame("compile_fx_inner", compile_fx, 700)]) == (
        "compiling (torch.compile)")
    assert work_kind([user, backward, Frame("cudagraphify_impl.<locals>.run", compile_fx, 900)]) is None
    pandas = "/venv/lib/python3.11/site-packages/pandas/core/"
    assert work_kind([user, Frame("Series.__getitem__", pandas + "series.py", 1000)]) == (
        "looking rows up in a pandas DataFrame, one at a time")  # row[feature_columns]
    assert work_kind([user, Frame("NDFrame.to_csv", pandas + "generic.py", 3900)]) is None
    assert work_kind([user, Frame("DataFrame.to_dict", pandas + "frame.py", 2000)]) is None


def test_work_the_training_needs_each_step_is_marked_so():
    """Never "call it every 10 steps" for these (clip_per_tensor.py's e2e test says it whole)."""
    assert every_step("clipping gradients (torch.nn.utils.clip_grad_*)")
    assert every_step("the optimizer's per-tensor loop (foreach off)")
    assert not every_step("writing log records (logging)") and not every_step(None)


def test_every_row_has_a_remedy_and_no_remedy_says_cache():
    for w in WORK_KINDS:
        assert remedy(w.kind) == w.remedy and w.remedy
    for call, kind, fix in LINE_KINDS:  # C calls named by the statement that makes them
        assert line_kind(f"    {call}1)") == kind and remedy(kind) == fix and "cach" not in fix
    assert line_kind("loss = crit(out, y)") is None
    assert "cach" not in remedy("starting worker processes (spawn: what each needs is pickled into it)")
    assert io  # (imported for the stream the handler test may grow into)


def test_a_library_module_being_imported_is_not_its_functions_work():
    """The first torch.optim optimizer imports torch._dynamo (Optimizer.__init__'s
    _disable_dynamo): samples inside that import, with convert_frame.py's module code on the stack,
    were named "compiling (torch.compile)" in a run that never compiled (0.05 s of its training)."""
    import torch._dynamo.convert_frame as cf

    site = Frame("_disable_dynamo.<locals>.inner", "/venv/lib/python3.11/site-packages/torch/_compile.py", 47)
    importing = [Frame("_find_and_load", "<frozen importlib._bootstrap>", 1176),
                 Frame("_call_with_frames_removed", "<frozen importlib._bootstrap>", 241)]
    assert work_kind([site, *importing, Frame("<module>", cf.__file__, 13)]) is None
    # The same file's functions at work (torch.compile tracing a frame) are compiling.
    assert work_kind([site, Frame("_compile", cf.__file__, 900)]) == "compiling (torch.compile)"


def test_a_line_in_the_users_loop_over_the_models_tensors_is_that_kind():
    """ema_loop.py's ModelEma.update: its line in the walk over two state_dicts (ops in C, no frame
    beneath) is a loop over the model's tensors; the training loop's own lines are not (a `for`
    over range()), and neither is a sample inside a library's frames."""
    from pathlib import Path

    from gpubottle.analysis.loop_time import named_time
    from gpubottle.analysis.tensor_loops import TENSOR_LOOP, tensor_loop_kind, tensor_walk_kind

    script = Path(__file__).resolve().parents[2] / "scripts" / "real_code" / "ema_loop.py"
    lines = script.read_text().splitlines()
    copy_at = next(i for i, s in enumerate(lines, 1) if "ema_v.copy_(" in s)
    loss_at = next(i for i, s in enumerate(lines, 1) if "loss = model(x)" in s)
    assert tensor_loop_kind(str(script), copy_at) == TENSOR_LOOP
    assert tensor_loop_kind(str(script), loss_at) is None
    assert tensor_loop_kind(str(script), copy_at - 1) is None  # the `for` header itself
    main = Frame("main", str(script), loss_at + 5)
    update = [main, Frame("ModelEma.update", str(script), copy_at)]
    top = named_time([update] * 8 + [[main, Frame("forward", "/venv/torch/nn/modules/module.py", 1)]] * 2)[0]
    assert top.function == "ModelEma.update" and top.kind == TENSOR_LOOP and top.share == 0.8
    assert remedy(TENSOR_LOOP) is not None and "torch._foreach_lerp_" in str(remedy(TENSOR_LOOP))
    # Samples in the walk the loop's header makes (state_dict() in torch's module.py, beneath the
    # `for` line) are the same kind: the lists built once remove them too. With 5 of 10 samples
    # there the update's kind was lost to the majority (make check-fixes, once).
    walk = [main, Frame("ModelEma.update", str(script), copy_at - 1),
            Frame("Module.state_dict", "/venv/lib/python3.11/site-packages/torch/nn/modules/module.py", 2200)]
    top = named_time([update] * 5 + [walk] * 5)[0]
    assert top.function == "ModelEma.update" and top.kind == TENSOR_LOOP, top
    assert tensor_walk_kind(str(script), copy_at - 1) == TENSOR_LOOP
    assert tensor_walk_kind(str(script), copy_at) is None and tensor_walk_kind(str(script), loss_at) is None
    # heavy_logging.py's log_metrics walks named_parameters() too, reading values out for a log:
    # Python work that logging less often does fix, not this kind (the suite caught it).
    logging = Path(__file__).resolve().parents[2] / "scripts" / "phases" / "heavy_logging.py"
    text = logging.read_text().splitlines()
    for at in (i for i, s in enumerate(text, 1) if ".tolist()" in s or '"mean"' in s):
        assert tensor_loop_kind(str(logging), at) is None
    for at in (i for i, s in enumerate(text, 1) if s.lstrip().startswith("for ")):
        assert tensor_walk_kind(str(logging), at) is None  # (its body reads, updates nothing)


def test_torch_distributions_argument_checks_from_a_real_constraint_check() -> None:
    """A distribution built with validate_args (torch's default) checks each argument's constraint
    in Distribution.__init__: a constraint of the test's records the real stack there. Its kind's
    remedy turns the checks off; the distribution's own math (log_prob, a KL) is not this kind."""
    import torch
    from torch.distributions import Normal, constraints

    seen: list[list[Frame]] = []

    class Recorded(constraints.Constraint):
        def check(self, value: torch.Tensor) -> torch.Tensor:
            seen.append(_here())
            return torch.ones_like(value, dtype=torch.bool)

    class Checked(Normal):
        arg_constraints = {"loc": Recorded(), "scale": constraints.positive}

    Checked(torch.zeros(2), torch.ones(2), validate_args=True)
    kind = work_kind(seen[-1])
    assert kind is not None and kind.startswith("checking torch.distributions' arguments"), kind
    assert "set_default_validate_args(False)" in str(remedy(kind)) and every_step(kind)
    kl = Frame("_kl_normal_normal", str(importlib.util.find_spec("torch.distributions.kl").origin), 470)
    assert work_kind([Frame("<module>", "/home/u/vae.py", 20), kl]) is None


def test_network_requests_are_told_to_send_as_well_as_fetch_in_bulk():
    """A logger that POSTs each step's loss (remote_log-style, urllib) is the same kind as a fetch:
    its remedy speaks of both, and of a background thread."""
    said = remedy("network requests") or ""
    assert "send or fetch many values a request" in said and "background thread" in said


def test_a_wait_for_the_scripts_own_processes_is_theirs_but_a_loaders_join_of_its_workers_is_not():
    process = importlib.util.find_spec("multiprocessing.process").origin
    popen = importlib.util.find_spec("multiprocessing.popen_fork").origin
    sub = importlib.util.find_spec("subprocess").origin
    top = Frame("<module>", "/home/u/hogwild.py", 34)
    join = [top, Frame("BaseProcess.join", str(process), 149), Frame("Popen.wait", str(popen), 43),
            Frame("Popen.poll", str(popen), 27)]
    assert hasattr(multiprocessing.process.BaseProcess, "join")
    assert work_kind(join) == CHILDREN_WAIT and "not follow" in (remedy(CHILDREN_WAIT) or "")
    assert work_kind([top, Frame("run", str(sub), 550), Frame("Popen.communicate", str(sub), 1200)]) \
        == CHILDREN_WAIT
    loader = importlib.util.find_spec("torch.utils.data.dataloader").origin
    shutdown = [top, Frame("_MultiProcessingDataLoaderIter._shutdown_workers", str(loader), 1600), *join[1:]]
    assert work_kind(shutdown) is None  # a DataLoader joining its own workers (followed, said apart)


def test_a_files_writes_forced_to_disk_are_named_as_the_wait_they_are():
    """os.fsync / os.fdatasync on the loop's line: a wait for the storage, with a remedy that says
    so (a loop logging each step with fsync got "tensor ops on the whole batch" for it)."""
    for text in ("log.flush(); os.fsync(log.fileno())", "os.fdatasync(fh.fileno())"):
        kind = line_kind(text)
        assert kind is not None and "os.fsync" in kind, text
        assert "background thread" in remedy(kind) and "less often" in remedy(kind)
    assert line_kind("os.sync_file_range(fd, 0, 0, 0)") is None


def test_a_clip_by_hand_is_a_loop_over_the_gradients_named_by_its_header() -> None:
    """clip_by_hand.py at the script's top level: the clip's `norm = p.grad.norm()` (torch's Python
    beneath it) and `if norm > 1.0:` (in C) were no kind at all, and the loop's lines went unnamed
    (the account said "other code" alone): they are the clip loop's small ops, every step's, named
    by the loop's header; the EMA's loop beside it is the plain kind (measured on 64 tensors: the
    clip 451 us a step as the loop, 155 us foreach; the EMA 364 us, 41 us with _foreach_lerp_)."""
    from pathlib import Path

    from gpubottle.analysis.loop_time import named_time
    from gpubottle.analysis.tensor_loops import GRADS_LOOP, TENSOR_LOOP, tensor_loop_kind, tensor_walk_kind
    from gpubottle.analysis.work_kinds import every_step

    script = Path(__file__).resolve().parents[2] / "scripts" / "real_code" / "clip_by_hand.py"
    lines = script.read_text().splitlines()

    def at(text: str) -> int:
        return next(i for i, s in enumerate(lines, 1) if text in s)

    clip_for, norm_at, test_at, ema_at = (at("for p in model.parameters()"), at("norm = p.grad.norm()"),
                                          at("if norm > 1.0:"), at("pe.mul_(0.999)"))
    assert tensor_loop_kind(str(script), norm_at) == tensor_loop_kind(str(script), test_at) == GRADS_LOOP
    assert tensor_walk_kind(str(script), clip_for) == GRADS_LOOP
    assert tensor_loop_kind(str(script), ema_at) == TENSOR_LOOP
    assert tensor_loop_kind(str(script), at("loss = nn.functional")) is None
    assert every_step(GRADS_LOOP) and not every_step(TENSOR_LOOP)
    assert "torch._foreach_norm(grads)" in str(remedy(GRADS_LOOP))
    top_level = Frame("<module>", str(script), norm_at)
    torch_norm = Frame("norm", "/venv/lib/python3.11/site-packages/torch/functional.py", 1700)
    forward = [Frame("<module>", str(script), at("loss = nn.functional")),
               Frame("Module._call_impl", "/venv/lib/python3.11/site-packages/torch/nn/modules/module.py", 1)]
    samples = ([[top_level, torch_norm]] * 4 + [[Frame("<module>", str(script), test_at)]] * 4
               + [[Frame("<module>", str(script), ema_at)]] * 2 + [forward] * 10)
    named = named_time(samples)
    clip = named[0]
    assert clip.function == "for p in model.parameters():" and clip.kind == GRADS_LOOP, named
    assert clip.share == 0.4 and clip.location.endswith(f"clip_by_hand.py:{clip_for}"), clip
    assert any(n.kind == TENSOR_LOOP and n.function.startswith("for pe, pm in zip(") for n in named), named


def test_a_safetensors_file_per_sample_is_read_per_sample(tmp_path):
    """st_files.py-like: a dataset's __getitem__ calling safetensors' load_file on a file per
    sample was "its own lines, no Python library frame beneath them" (49 us a sample here, 10 us
    sliced from one packed file opened once, 0.7 us indexing it loaded once)."""
    import inspect

    import safetensors.torch as st
    import torch

    path = tmp_path / "0.st"
    st.save_file({"x": torch.zeros(3)}, str(path))
    assert st.load_file(str(path))["x"].shape == (3,)
    line = inspect.getsourcelines(st.load_file)[1]
    stack = [Frame("Files.__getitem__", "/home/u/train.py", 22), Frame("load_file", st.__file__, line + 2)]
    kind = work_kind(stack)
    assert kind == "reading tensors from files, one per sample (safetensors)", kind
    assert "safe_open(path, 'pt')" in str(remedy(kind)) and "get_slice('x')[i]" in str(remedy(kind))


_SITE = "/venv/lib/python3.11/site-packages"


def _in_worker(function: str, path: str, line: int) -> list[Frame]:
    """A DataLoader worker's stack down to the dataset's method at `path:line`."""
    return [Frame("_worker_loop", f"{_SITE}/torch/utils/data/_utils/worker.py", 349),
            Frame("_MapDatasetFetcher.fetch", f"{_SITE}/torch/utils/data/_utils/fetch.py", 52),
            Frame(function, path, line)]


class _Encoder(torch.nn.Module):
    """A module whose forward records the stack a real module call puts it on."""

    seen: list[list[Frame]] = []

    def forward(self, x):
        _Encoder.seen.append(_here())
        return x


def test_a_model_run_in_the_data_pipeline_is_named_for_its_forward(tmp_path):
    """model_in_dataset's shape: a frozen encoder making features in __getitem__, one sample a call,
    in the workers: "its own lines, no Python library frame beneath them" before (the module's
    frames were there); the run 6.4 s, 3.5 s with the encoder on batches in the loop."""
    from gpubottle.analysis.stack_users import stack_evidence
    from gpubottle.analysis.stacks import ThreadSamples
    from gpubottle.analysis.work_kinds import MODEL_IN_LOADER, model_in_loader_kind, wasted

    _Encoder()(torch.zeros(1))
    beneath = [f for f in _Encoder.seen[-1] if "torch/nn/modules" in f.file.replace("\\", "/")]
    assert beneath and work_kind(beneath) is None and model_in_loader_kind(beneath) == MODEL_IN_LOADER
    script = tmp_path / "data.py"
    script.write_text("class Feats:\n    def __getitem__(self, i):\n        return encoder(self.raw[i])\n")
    stack = _in_worker("Feats.__getitem__", str(script), 3) + beneath
    ev = stack_evidence({7: ThreadSamples(7, [stack] * 5)}, 1, {7}, None)
    assert [(h.function, h.kind) for h in ev.worker_hot] == [("Feats.__getitem__", MODEL_IN_LOADER)]
    assert wasted(MODEL_IN_LOADER) and "under torch.no_grad()" in (remedy(MODEL_IN_LOADER) or "")


def test_a_pickled_file_per_sample_is_unpickling_at_the_line_or_its_with(tmp_path):
    """pickle_files' shape: `with open(path_i, "rb") as f: rec = pickle.load(f)` in __getitem__,
    the C unpickler leaving no frame: "its own lines, no Python library frame beneath them"
    before; every sample was at the `with` line (its open and close). 17.3 us a sample, 1.5 us
    indexed from one mapped .npy."""
    from gpubottle.analysis.source_kinds import unpickling_kind
    from gpubottle.analysis.stack_users import stack_evidence
    from gpubottle.analysis.stacks import ThreadSamples
    from gpubottle.analysis.work_kinds import UNPICKLING, wasted

    script = tmp_path / "data.py"
    script.write_text("import pickle\n\n\nclass Recs:\n    def __getitem__(self, i):\n"
                      "        with open(self.files[i], 'rb') as f:\n            rec = pickle.load(f)\n"
                      "        return rec['x']\n\n    def other(self, b):\n        return pickle.loads(b)\n"
                      "\n    def text(self, i):\n        with open(self.files[i]) as f:\n"
                      "            return f.read()\n")
    path = str(script)
    assert unpickling_kind(path, 6) == unpickling_kind(path, 7) == UNPICKLING
    assert unpickling_kind(path, 11) == UNPICKLING and unpickling_kind(path, 8) is None
    assert unpickling_kind(path, 14) is None  # a `with` whose body reads text
    ev = stack_evidence({7: ThreadSamples(7, [_in_worker("Recs.__getitem__", path, 6)] * 5)}, 1, {7}, None)
    assert [(h.function, h.kind) for h in ev.worker_hot] == [("Recs.__getitem__", UNPICKLING)]
    assert wasted(UNPICKLING) and "mmap_mode='r'" in (remedy(UNPICKLING) or "")


def test_a_library_of_no_known_kind_beneath_the_datasets_lines_is_named_not_its_own_lines(tmp_path):
    """memmap_getitem's shape before np.memmap had its kind: every sample in numpy's memmap.__new__
    beneath `__getitem__`, said as "its own lines, no Python library frame beneath them". A library
    gpubottle has no row for is said with the statement that calls it and its package (a
    decorator's wrapper, numpy's errstate inner, was all the frame said of `np.random.default_rng(i)`
    made per sample); the fallback stays for samples with nothing beneath."""
    from gpubottle.analysis.stack_users import stack_evidence
    from gpubottle.analysis.stacks import ThreadSamples
    from gpubottle.rules.input.fix_words import own_code_text

    script = tmp_path / "data.py"
    script.write_text("class Rows:\n    def __getitem__(self, i):\n        return thing.load(self.src, i)\n")
    loader = _in_worker("Rows.__getitem__", str(script), 3)
    lib = [*loader, Frame("Store.load", f"{_SITE}/thinglib/store.py", 88),
           Frame("_parse", f"{_SITE}/thinglib/p.py", 9)]
    ev = stack_evidence({7: ThreadSamples(7, [lib] * 6 + [loader] * 2)}, 1, {7}, None)
    [hot] = ev.worker_hot
    assert hot.kind is None and hot.beneath is not None
    assert hot.beneath.startswith("`return thing.load(self.src, i)` (") and hot.beneath.endswith(
        "data.py:3) and the thinglib code it calls"), hot.beneath
    text = own_code_text("Rows.__getitem__", "data.py:2", 0.9, 0.0, True, beneath=hot.beneath)
    assert f"most of it in {hot.beneath}" in text
    assert "no Python library frame" not in text
    ev = stack_evidence({7: ThreadSamples(7, [lib] * 2 + [loader] * 6)}, 1, {7}, None)
    assert ev.worker_hot[0].beneath is None  # mostly its own lines: the fallback is true
