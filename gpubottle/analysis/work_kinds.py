"""What kind of work a stack sample is in, from the library frames beneath the user's code: the one
table of frame patterns -> kind of work -> remedies (issue 31.9). A finding that names a user's
line says the kind its time goes to and offers that kind's remedies, never one that contradicts
it (caching the result of a line whose time goes to starting processes).

A row is (file suffix, function names or None for any, kind, remedy). The first row that matches
a frame of the sample (outermost first) names it, the rows marked `beneath` tried first. The table
grows with every new kind seen; each row has a test on a script of that kind
(tests/unit/analysis/test_work_kinds.py, and the e2e tests named there).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, TypeVar

from gpubottle.analysis.tensor_loops import GRADS_LOOP, TENSOR_LOOP

K = TypeVar("K", str, str | None)


class _Frame(Protocol):
    name: str
    file: str


@dataclass(frozen=True)
class WorkKind:
    suffixes: tuple[str, ...]
    names: tuple[str, ...] | None
    kind: str
    remedy: str
    every_step: bool = False  # work the training needs at every step: never "call it less often"
    # Its remedy removes the work instead of spreading it (a file or a DataFrame row per sample):
    # said before more workers, which would only run the waste in parallel.
    wasted: bool = False
    # Matched at any depth before the outermost frame decides (a decode beneath a transform).
    beneath: bool = False
    # Not where a frame of these files is on the stack (a DataLoader joining its own workers).
    not_under: tuple[str, ...] = ()


CUDA_INIT = "CUDA initialisation (the GPU's context)"
# Reports of the run, not its output: fewer of them lose nothing a loop makes.
LOG_RECORDS = "writing log records (logging)"
TENSOR_TEXT = "formatting tensors as text (print, str, f-strings)"
_OPTIMIZERS = ("adam", "sgd", "adagrad", "adamax", "adadelta", "nadam", "radam", "rmsprop")
SPAWNING = "starting worker processes (spawn: what each needs is pickled into it)"
COMPILING = "compiling (torch.compile)"
CHILDREN_WAIT = "waiting for processes it started itself (multiprocessing.Process, subprocess)"
POOL_STARTS = ("starting and stopping a pool of worker processes (each new multiprocessing.Pool or "
               "ProcessPoolExecutor forks its processes, and its exit joins them)")
DEEPCOPY = "copying Python objects (copy.deepcopy)"
COPYING_MODEL = ("copying the model (copy.deepcopy of a module: every parameter cloned, every submodule "
                 "rebuilt)")
PROFILER_EVENTS = "turning the profiler's recorded events into Python objects (torch.profiler)"
DISTRIBUTION_CHECKS = ("checking torch.distributions' arguments as each is built (validate_args, on by "
                       "default)")
_DISTRIBUTION_CHECKS_FIX = ("turn the checks off once the model is known to give valid parameters: "
                            "torch.distributions.Distribution.set_default_validate_args(False) at the "
                            "start (or validate_args=False where each is built); on a GPU each check "
                            "also waits for the GPU. Try it and time it")
_COMPILING_FIX = ("paid on the first steps and at each recompilation: keep shapes steady (or "
                  "dynamic=True), and keep the compile caches between runs (TORCHINDUCTOR_CACHE_DIR)")
DECODING_IMAGES = "decoding images (PIL)"
_DECODING_FIX = ("decode at a lower resolution (Image.draft for JPEG), cache decoded samples, or decode "
                 "on the GPU")

_PANDAS_ROWS = "looking rows up in a pandas DataFrame, one at a time"
_PANDAS_FIX = ("turn the columns into arrays once, in __init__ (self.x = torch.tensor(df[features]"
               ".to_numpy(), dtype=torch.float32), the labels likewise) and index those in "
               "__getitem__: a row through .iloc with its columns picked cost 390 us on a test "
               "machine, an array row 0.7 us")

WORK_KINDS: tuple[WorkKind, ...] = (
    WorkKind(("torch/cuda/__init__.py",), ("_lazy_init", "init"), CUDA_INIT,
             "paid once per process: nothing in the script removes it"),
    # A spawned (or forkserver) process gets its target's arguments pickled into it: for DataLoader
    # workers, the whole dataset, once per worker, on the main thread before the first batch.
    WorkKind(("multiprocessing/popen_spawn_posix.py", "multiprocessing/popen_spawn_win32.py",
              "multiprocessing/popen_forkserver.py"), None, SPAWNING,
             "start the workers with fork where the platform has it, or give them a file to open "
             "themselves instead of the data"),
    # A pool made and closed inside the loop: every `with Pool(2) as pool:` forks its processes and
    # starts its three threads, and its exit terminates and joins them (pool_each_step.py: 67% of a
    # 39-ms step, the pool's own map a sample in 70).
    WorkKind(("multiprocessing/pool.py", "concurrent/futures/process.py"),
             ("Pool.__init__", "Pool.__exit__", "Pool.terminate", "Pool.close", "Pool.join",
              "ProcessPoolExecutor.__init__", "ProcessPoolExecutor.shutdown",
              "ProcessPoolExecutor._adjust_process_count", "ProcessPoolExecutor._launch_processes",
              "ProcessPoolExecutor._start_executor_manager_thread", "__init__", "__exit__",
              "terminate", "close", "join", "shutdown"),
             POOL_STARTS,
             "create the pool once, before the loop, and hand it each step's work (pool.map, "
             "executor.submit); or, where that work is small, do it in the loop's own process",
             wasted=True),
    # The main process waiting for processes it started itself (hogwild.py's `p.join()`: torch's
    # Hogwild example trains in two mp.Process children the whole run): the time is their work,
    # which the run does not follow; never the script's own start-up work to cache.
    WorkKind(("multiprocessing/process.py", "multiprocessing/popen_fork.py", "subprocess.py"),
             ("BaseProcess.join", "Popen.wait", "Popen.poll", "Popen._wait", "Popen.communicate"),
             CHILDREN_WAIT,
             "the time is those processes' own work, which gpubottle does not follow (it follows "
             "torch.multiprocessing.spawn's processes and torchrun's as ranks): start them with "
             "torch.multiprocessing.spawn, or run what they run under gpubottle to see it",
             not_under=("torch/utils/data/",)),
    # Dynamo's frame conversion is on the stack while a function is traced and compiled (its first
    # calls, each recompilation), not while compiled code runs (that is eval_frame's wrapper alone).
    WorkKind(("torch/_dynamo/convert_frame.py",), None, COMPILING, _COMPILING_FIX),
    # ...and inductor compiling a graph where dynamo is not on the stack: the backward's, compiled at
    # the first backward() (not while the compiled code runs: that is output code, not compile_fx).
    WorkKind(("torch/_inductor/compile_fx.py",), ("compile_fx", "compile_fx_inner", "_compile_fx_inner",
                                                  "fx_codegen_and_compile", "compile_fx_forward",
                                                  "compile_fx_backward", "_compile_fx_main"),
             COMPILING, _COMPILING_FIX, beneath=True),
    WorkKind(("json/encoder.py", "json/__init__.py"), ("encode", "iterencode", "dumps", "dump"),
             "encoding JSON (json.dumps)",
             "write it less often, or with a faster encoder (orjson, msgspec)"),
    WorkKind(("json/decoder.py",), None, "parsing JSON (json.loads)",
             "parse once and keep the result, or use a faster parser (orjson, msgspec)"),
    # A deepcopy of a module (its Parameters' own __deepcopy__, or Module.__setstate__ as copy
    # rebuilds each submodule): a model copied anew where one copy updated in place would do (an
    # EMA of the weights refreshed by deepcopy each step: 2.4 ms a step for 25 tensors of a 12-layer
    # MLP, the same EMA as one torch._foreach_lerp_ over lists kept once 0.14 ms).
    WorkKind(("torch/nn/parameter.py", "torch/nn/modules/module.py"), ("__deepcopy__", "__setstate__",
                                                                       "Parameter.__deepcopy__",
                                                                       "Module.__setstate__"),
             COPYING_MODEL, "keep one copy and update it in place where it is refreshed (an EMA of "
             "the weights: torch._foreach_lerp_(ema_params, params, 1 - decay) over lists of the two "
             "models' parameters made once; a best-so-far snapshot: the state_dict's tensors "
             ".detach().clone(), or copy_() into one kept copy)", beneath=True),
    WorkKind(("/copy.py",), ("deepcopy", "_deepcopy_dict", "_deepcopy_list", "_deepcopy_tuple",
                             "_reconstruct"), DEEPCOPY,
             "copy less often, or copy tensors (state_dict values .clone(), or to the CPU "
             "once) instead of deep-copying Python structures"),
    WorkKind(("logging/__init__.py", "logging/handlers.py"), None, LOG_RECORDS,
             "log less often, or hand the records to a background thread "
             "(logging.handlers.QueueHandler with a QueueListener)"),
    # PIL decodes a file's pixels in ImageFile.load, which its first pixel access calls: under
    # convert() or resize() of an image just opened. Found at any depth (beneath), so a transform
    # of a lazily opened image is its decoding; Image.open reads the header (the plugin's _open).
    WorkKind(("PIL/ImageFile.py",), ("ImageFile.load", "load"), DECODING_IMAGES, _DECODING_FIX,
             beneath=True),
    WorkKind(("PIL/Image.py",), ("open",), DECODING_IMAGES, _DECODING_FIX, beneath=True),
    # (a loop saving an image each step: 94% of a generator's 0.5-s step in PNG's compression)
    WorkKind(("PIL/Image.py",), ("Image.save", "save"), "encoding images (PIL: Image.save)",
             "save fewer images (every N steps), at the size they are made (not enlarged before "
             "saving), or in a background thread (PIL's encoders let go of the GIL while they "
             "compress); where the same image is saved again, encode it once and keep the bytes"),
    # Any other PIL work is on pixels already decoded (or made from an array): an augmentation's
    # rotate/resize/crop, a mode conversion, np.asarray(img). Decoding's remedies do not touch it.
    WorkKind(("PIL/",), None, "transforming images in PIL, one sample at a time (resize, rotate, "
             "crop, convert, np.asarray)",
             "resize once ahead where the size is fixed (keep the images at the size the model "
             "reads, or cache the resized arrays), and apply the random transforms to the whole "
             "batch as tensor ops (torch.flip, torch.nn.functional.interpolate, grid_sample) "
             "instead of one PIL image at a time; try it and time it"),
    # AdamW and the others call these; foreach=False (or a default that picked it) runs them.
    WorkKind(tuple(f"torch/optim/{o}.py" for o in _OPTIMIZERS),
             tuple(f"_single_tensor_{o}" for o in _OPTIMIZERS),
             "the optimizer's per-tensor loop (foreach off)",
             "fused=True (Adam, AdamW, SGD, Adagrad; on a CPU too) or foreach=True updates every "
             "tensor in a few calls", every_step=True),
    # clip_grad_norm_ called once per parameter in a loop: each call computes a norm and scales one
    # tensor (measured here, 162 tensors: a 27 ms step with per-tensor calls, 9-11 ms with one call).
    WorkKind(("torch/nn/utils/clip_grad.py",), None, "clipping gradients (torch.nn.utils.clip_grad_*)",
             "where it is called once per tensor (in a loop over the parameters), call it once per "
             "step over all of them: clip_grad_norm_(model.parameters(), max_norm) (one norm over "
             "all, the usual form, where per-tensor calls clip each by its own: check the loss "
             "still converges)",
             every_step=True),
    # One file opened and unpickled per sample (a folder of .pt or .npy files): measured here, 0.40 ms
    # a sample with torch.load against 4 us indexing one packed file mapped with mmap=True.
    # Writing them (a dataset's cache made before training, a file per sample) is torch.save's, not a
    # read: its remedy is fewer, larger files. (A checkpoint's save in the loop is probes/saves'.)
    WorkKind(("torch/serialization.py",), ("save", "_save", "_legacy_save"),
             "writing tensors to files (torch.save)",
             "write one file of many samples (a stacked tensor, or a few shards) instead of a file "
             "per sample, and load it back once with torch.load(path, mmap=True)"),
    WorkKind(("torch/serialization.py",), None, "reading tensors from files, one per sample (torch.load)",
             "pack the samples into one file (or a few shards of many samples each), load it once "
             "with torch.load(path, mmap=True) (mapped, not read whole) and index it in __getitem__",
             wasted=True),
    # safetensors' load_file of a file per sample (3x32x32 floats): 49 us a sample, 10 us sliced
    # from one packed file opened once with safe_open, 0.7 us indexing it loaded once (measured here).
    WorkKind(("safetensors/torch.py",), None, "reading tensors from files, one per sample (safetensors)",
             "pack the samples into one .safetensors file (a stacked tensor per key, or a few shards), "
             "open it once in __init__ with safe_open(path, 'pt') and slice it in __getitem__, "
             "f.get_slice('x')[i], or load it whole once where it fits in memory",
             wasted=True),
    # (An .npz opened in __getitem__ reads the whole member for one row: a 20,000 x 256 float32
    # member, 1.1 s of CPU a batch of 64 here.)
    WorkKind(("numpy/lib/npyio.py", "numpy/lib/_npyio_impl.py", "numpy/lib/format.py",
              "numpy/lib/_format_impl.py"), None, "reading arrays from files (numpy.load)",
             "pack the samples into one .npy file and open it once with numpy.load(path, "
             "mmap_mode='r'), indexing it in __getitem__, instead of a file per sample; where one "
             ".npz archive is opened for every sample, each d['x'] reads its whole member again: "
             "load it once in __init__ (self.x = np.load(path)['x']), or save the member as a .npy "
             "and map it so", wasted=True),
    # A file per sample kept compressed (gzip, bz2, lzma): each sample is decompressed in Python's
    # codecs at every epoch. Measured here, a 64x128 float32 array per .npy.gz: 288 us a sample
    # (decompressing 195 of them; the file saved 7% of the disk: floats compress little), 41 us as
    # a plain .npy per sample, 4.5 us indexed from one .npy opened with mmap_mode='r'. Beneath the
    # reader that parses what it decompresses (np.load, torch.load, pickle): the fix removes both.
    WorkKind(("/gzip.py", "/bz2.py", "/lzma.py", "/_compression.py"), None,
             "decompressing a file for every sample (gzip, bz2, lzma)",
             "decompress once, before training: keep the samples uncompressed, packed into one file "
             "(one .npy opened once with numpy.load(path, mmap_mode='r'), indexed in __getitem__); "
             "where the disk cannot hold them so, a faster codec (zstd, lz4) decompresses several "
             "times faster than gzip: time it", wasted=True, beneath=True),
    # A tabular dataset's __getitem__ looking its row up in the DataFrame (df.iloc[i], row[cols]):
    # measured with pandas 3.1, 390 us a sample through .iloc with its columns picked, 0.7 us from
    # arrays made once. (Not to_csv and the like: those are generic.py's, not a lookup.)
    WorkKind(("pandas/core/indexing.py",), None, _PANDAS_ROWS, _PANDAS_FIX, wasted=True),
    WorkKind(("pandas/core/frame.py", "pandas/core/series.py"),
             ("__getitem__", "DataFrame.__getitem__", "Series.__getitem__", "_get_value",
              "DataFrame._get_value", "Series._get_value"),
             _PANDAS_ROWS, _PANDAS_FIX, wasted=True),
    # A torch.profiler left on over the whole run: on leaving it (and key_averages(), table()) every
    # op it recorded is turned into Python objects. Measured here: a 400-step CPU loop profiled
    # throughout ran 32-42 s against 4.1-4.8 s unprofiled, 30 s of it after the last step; with a
    # schedule recording 5 steps, 3.9-4.5 s.
    WorkKind(("torch/autograd/profiler.py", "torch/autograd/profiler_util.py", "torch/profiler/"), None,
             PROFILER_EVENTS,
             "record a few steps, not the whole run: profile(..., schedule=torch.profiler.schedule("
             "wait=1, warmup=1, active=5)) with prof.step() at the end of each step (or leave the "
             "profiling to gpubottle's window)", wasted=True),
    # torch.distributions checks each distribution's arguments as it is built (validate_args, on by
    # default), and each value log_prob takes, in Python; on a GPU each check reads its result back
    # (`if not valid.all()`), waiting for the GPU. Measured here, a VAE building a Normal and a
    # Bernoulli each step: its training 3.1 s, 2.5 s with the checks off.
    WorkKind(("torch/distributions/distribution.py",),
             ("Distribution.__init__", "__init__", "Distribution._validate_sample", "_validate_sample"),
             DISTRIBUTION_CHECKS, _DISTRIBUTION_CHECKS_FIX, every_step=True),
    WorkKind(("torch/distributions/constraints.py",), None, DISTRIBUTION_CHECKS, _DISTRIBUTION_CHECKS_FIX,
             every_step=True),
    WorkKind(("torch/_tensor_str.py",), None, TENSOR_TEXT,
             "print a number (loss.item()) or a few values instead of whole tensors, and less often"),
    # Experiment trackers and progress bars the loop calls on its own line every step.
    WorkKind(("torch/utils/tensorboard/", "tensorboardX/", "tensorboard/"), None,
             "writing TensorBoard summaries",
             "write histograms, images and embeddings every N steps (scalars are cheap), and flush "
             "less often"),
    WorkKind(("wandb/",), None, "logging to Weights & Biases (wandb)",
             "log every N steps (wandb.log(..., commit=False) gathers values between them)"),
    WorkKind(("tqdm/",), None, "updating a progress bar (tqdm)",
             "redraw it less often: tqdm(..., mininterval=1) or miniters=N"),
    WorkKind(("http/client.py", "urllib3/", "requests/"), None, "network requests",
             # (a logger's POST each step as often as a fetch: "fetch" alone misread it)
             "send or fetch many values a request, from a background thread (a queue.Queue it "
             "drains), and cache what repeats"),
)
SLEEPING = "sleeping (time.sleep)"
# Calls into C that leave no Python frame of their own: a sample's innermost frame is the user's
# line itself, and its text says the kind (the statement holds the call).
LINE_KINDS: tuple[tuple[str, str, str], ...] = (
    ("gc.collect(", "a full garbage collection (gc.collect)",
     "Python collects garbage on its own, and a full collection walks every object torch and the "
     "script hold: leave it out of the loop (between epochs at most)"),
    ("empty_cache(", "releasing the CUDA allocator's cache (torch.cuda.empty_cache)",
     "leave it out of the loop: the next step allocates the same memory again, more slowly"),
    ("time.sleep(", SLEEPING, "remove the sleep from the loop"),
    *((call, "waiting for the disk to confirm the file's writes (os.fsync)",
       "each call waits for the storage to confirm every write since the last one: force them "
       "less often, or from a background thread (a crash then loses at most those lines)")
      for call in ("os.fsync(", "os.fdatasync(")),
)
_TENSOR_LOOP_FIX = ("torch._foreach_* functions take the whole list of tensors in one call (an EMA: "
                    "torch._foreach_lerp_(ema_tensors, tensors, 1 - decay), or torch.optim.swa_utils."
                    "AveragedModel(model, multi_avg_fn=get_ema_multi_avg_fn(decay)), which does so), "
                    "with the lists built once outside the step: state_dict() and parameters() walk "
                    "every module at each call")
# Measured on 64 tensors (a clip per tensor by its norm): 451 us a step as the loop, 155 us with
# torch._foreach_norm and _foreach_div_.
_GRADS_LOOP_FIX = ("torch._foreach_* functions take the whole list of gradients in one call: every "
                   "norm at once, norms = torch._foreach_norm(grads), then a clip per tensor, "
                   "torch._foreach_div_(grads, torch._foreach_clamp_min(norms, 1.0)) (or "
                   "torch.nn.utils.clip_grad_norm_(params, max_norm, foreach=True) where one norm over "
                   "all of them will do: a different clip), an update by hand "
                   "torch._foreach_add_(params, grads, alpha=-lr), with the lists built once outside "
                   "the step (parameters() walks every module at each call)")
# A statement of the loop whose value depends only on what the loop never changes (analysis/
# invariant.py): the same result at every step.
INVARIANT = "work that gives the same result at every step (it reads nothing the loop changes)"
_INVARIANT_FIX = ("compute it once, before the loop, and use the result in the loop: the steps then "
                  "do not pay for it")
# A whole array converted (or copied) again at every step, then indexed by what the loop changes
# (analysis/invariant.invariant_conversion): `xb = torch.FloatTensor(X_train)[i:i + bs]`. Measured
# here, a 200,000 x 100 float64 array and batches of 256: 63% of a 72-ms step on that line.
INVARIANT_CONVERSION = ("converting (or copying) a whole array again at every step, to keep the few "
                        "rows the step indexes")
_INVARIANT_CONVERSION_FIX = ("convert it once, before the loop (X_t = torch.FloatTensor(X_train)), and "
                             "index that in the loop (X_t[i:i + bs]); or index first and convert the "
                             "rows alone (torch.FloatTensor(X_train[i:i + bs])): the same batch")
# A dataset's method computing, for every sample, a value from what __init__ made and nothing of the
# sample's (analysis/invariant.sample_invariant): `mean = self.x.mean(axis=0)` in __getitem__.
# Measured here: a 20,000 x 24 array's statistics at each sample, 88 ms of CPU a batch of 64 in
# the workers; made once in __init__, 1.2 ms.
SAMPLE_INVARIANT = ("work that gives the same result for every sample (it reads only what __init__ "
                    "made, nothing of the sample's)")
_SAMPLE_INVARIANT_FIX = ("compute it once in __init__ (self.mean = ..., from the same attributes) and "
                         "use the result in the method: every sample, in every worker, pays for it "
                         "now. Try it and time it")
# A sampler's loop drawing one index per call from a weighted choice over the whole dataset
# (`yield int(np.random.choice(self.n, p=self.p))`): each call passes over every weight. Measured
# here, 200,000 weights: 1.45 ms an index, 185 ms a batch of 128; the epoch's 200,000 drawn in one
# call, 14 ms.
PER_INDEX_DRAW = ("drawing each index with its own weighted random call, each a pass over all the "
                  "weights")
_PER_INDEX_DRAW_FIX = ("draw the epoch's indices in one call where __iter__ starts, np.random.choice(n, "
                       "size=n, p=p) or torch.multinomial(weights, n, replacement=True) (what torch's "
                       "WeightedRandomSampler(weights, num_samples=n) does), and yield from that array: "
                       "one pass over the weights an epoch instead of one an index, the same "
                       "distribution. Try it and time it")
# A comprehension that indexes a tensor one element at a time with the values of another
# (`torch.stack([X[j] for j in idx])`): one Python index op and one small tensor per element, where
# `X[idx]` is one op. Measured here, batches of 256 rows of a 50,000 x 32 tensor: 21% of a 1.9-ms step.
GATHER = "indexing a tensor one element at a time in a Python comprehension"
_GATHER_FIX = ("index it once with the whole index instead: torch.stack([X[j] for j in idx]) is X[idx] "
               "(one op for the batch)")
# A database queried for each sample (analysis/db_queries.py): sqlite3, 20,000 rows of 34 columns,
# 9.9 us a row by id, 5.9 us a row a batch at a time, 0.37 us indexed from a tensor read once (0.14 s).
# A torch model run inside the data pipeline (a frozen encoder making features in __getitem__):
# each sample pays a forward of its own, in the loader's processes. Measured here, a 3-layer MLP
# encoder (512 -> 1024 -> 1024 -> 256) per sample in 2 workers: the run 6.4 s; 3.5 s with the
# encoder on each batch in the loop, 3.3 s with the features computed once in __init__.
MODEL_IN_LOADER = "running a torch model in the data pipeline (its forward in the loader's processes)"
_MODEL_IN_LOADER_FIX = ("run it on whole batches in the training loop instead, under torch.no_grad() "
                        "(x = encoder(x) once the batch arrives: one forward a batch, not one a "
                        "sample), or where the model is frozen and the samples do not change, "
                        "compute the features once for the whole dataset before training and keep "
                        "them (a frozen 3-layer encoder per sample in 2 workers on a test machine: "
                        "the run 6.4 s, 3.5 s on batches in the loop, 3.3 s computed once)")
# A pickled file per sample, unpickled by the C unpickler (no Python frame beneath the user's
# line): the open, the read and the rebuilding of every Python object the sample holds. Measured
# here, a dict of a 512-float array, 200 ints and a metadata dict: 17.3 us a sample (9.5 of it
# unpickling), 1.5 us indexed from one .npy of the arrays opened with mmap_mode='r'.
UNPICKLING = "reading a pickled file for every sample (pickle.load, unpickling in C)"
_UNPICKLING_FIX = ("pack what the training reads into arrays once, before training: one .npy per "
                   "field (np.stack of the samples' arrays, the labels as one array) opened with "
                   "numpy.load(path, mmap_mode='r') and indexed in __getitem__, instead of a file "
                   "rebuilt object by object for every sample (17.3 us a sample on a test machine, "
                   "1.5 us indexed); try it and time it")
DB_QUERY = "querying a database a row at a time (a DB-API execute, run in C)"
_DB_QUERY_FIX = ("read the table once (in __init__, or before the loop) where it fits in memory (rows = "
                 "con.execute('SELECT ... ORDER BY id').fetchall(), then self.x = torch.tensor(rows) "
                 "and index it), or query a whole batch at once: in a Dataset a __getitems__(self, "
                 "indices) method, which the DataLoader calls with the batch's indices, running one "
                 "`WHERE id IN (...)` (a 20,000-row table of 34 columns on a test machine: 9.9 us a "
                 "row queried by id, 5.9 us a row a batch at a time, 0.37 us a row indexed from the "
                 "table read once in 0.14 s). Try it and time it")
# A tensor built from a Python list at the user's line (`torch.tensor(xs)`, xs a list of arrays or
# numbers: analysis/list_tensor.py): torch reads it one value at a time. Measured here: a collate's
# batch of 128 arrays of 256 floats 3.2 ms, 0.05 ms through np.stack.
LIST_TENSOR = "building a tensor from a Python list, one value at a time (torch.tensor(list))"
_LIST_TENSOR_FIX = ("make the list one array first and hand torch that: torch.from_numpy(np.stack(xs)) "
                    "where it holds numpy arrays (torch.tensor reads such a list value by value), "
                    "np.asarray(xs, dtype=np.float32) where it holds Python numbers; or keep the "
                    "data as one array or tensor made once (in __init__, or before the loop). Try it "
                    "and time it")
# A sample's line that opens the same file again for every sample, its path not depending on the
# index (analysis/same_file.py). Measured here: a 5,000-line CSV read whole for each line, 41 ms a
# batch of 64; a zip of 3,000 members opened for each sample, 595 ms a batch.
SAME_FILE = "opening and reading the same file again for every sample (its path does not depend on the index)"
_SAME_FILE_FIX = ("read it once: keep what __getitem__ needs from it in __init__ (the lines as a list, "
                  "or their byte offsets to seek to), or open it once per process on first use and keep "
                  "the handle (a zipfile.ZipFile, an h5py.File, a sqlite3 connection, np.load(path, "
                  "mmap_mode='r')), so that __getitem__ only indexes; each DataLoader worker then "
                  "opens its own copy once. Try it and time it")
# A statement writing a tensor one element at a time at the loop variables' index (`out[i, j] = v`:
# analysis/element_writes.py). Measured here: 32 rows of 80-300 ids padded value by value 15.4 ms,
# a row at a time 0.9 ms.
ELEMENT_WRITES = ("writing a tensor one element at a time in Python loops (an indexing op for every "
                  "value)")
_ELEMENT_WRITES_FIX = ("write a row (or the whole tensor) in one op instead: out[i, :len(x)] = "
                       "torch.tensor(x) for each row, or torch.nn.utils.rnn.pad_sequence([torch.tensor(x) "
                       "for x in rows], batch_first=True) for rows of different lengths (a batch of 32 "
                       "rows of 80-300 ids padded value by value took 15.4 ms on a test machine, a row "
                       "at a time 0.9 ms); values at listed positions (a graph's edges, labels at "
                       "their indices) in one indexed write: e = torch.tensor(edges); out[e[:, 0], "
                       "e[:, 1]] = 1.0 (a collate building 32 graphs' adjacency edge by edge: the run "
                       "4.8 s, 3.3 s so); values computed from the loop's index (v[k] = math.sin(i + k)) "
                       "as one op over all of them: torch.sin(i + torch.arange(n)) (128 values: 262 us "
                       "a sample as the loop, 4.4 us so). Try it and time it")
# Adding into one element at a time (`cm[t, p] += 1`: analysis/element_writes.element_added).
ELEMENT_ADDS = ("adding into a tensor one element at a time in a Python loop (cm[t, p] += 1: an "
                "indexing op and an add for every value)")
_ELEMENT_ADDS_FIX = ("add them all in one op that sums repeated positions: torch.bincount(t * C + p, "
                     "minlength=C * C).view(C, C) added to a C x C count (a confusion matrix), or "
                     "out.index_put_((rows, cols), values, accumulate=True) (index_add_ for whole rows); "
                     "not out[rows, cols] += values, which counts a repeated position once. 256 "
                     "predictions a step counted one by one on a test machine: a 3,000-step run 8.1 s, "
                     "with bincount 3.6 s, the same counts. Try it and time it")
# A user function called once for every value of a tensor or array (analysis/element_calls.py:
# Tensor.apply_, np.vectorize). Measured here: a clip-and-scale applied to a sample's 256 values,
# 4.6-4.9 ms a batch of 64; as s.clamp(-1, 1) * 0.5, 0.5-0.8 ms.
# A class's indices found by scanning every label, a sample at a time (analysis/class_scan.py).
CLASS_SCAN = ("scanning every label the dataset holds for each sample, to find the indices of its "
              "class or of another (a comprehension over them, np.where(self.labels == y))")
_CLASS_SCAN_FIX = ("make the indices of each class once, in __init__ (self.by_class = {c: "
                   "np.flatnonzero(labels == c) for c in classes}), and draw from them: a positive "
                   "random.choice(self.by_class[y]) (again while it is the sample itself); a negative "
                   "from a class drawn first, weighted by the classes' sizes where the draw must stay "
                   "the same (rng.choice(others, p=sizes / sizes.sum())), then an index of it. On a "
                   "test machine 60,000 labels scanned a sample: 60 batches of 64 in 6.7 s, by class "
                   "2.1 s; 400,000 by np.where twice a sample, 6.2 s and 2.3 s. Try it and time it")
# A loop over a sequence's windows (analysis/window_loop.py): measured here, a 1-s clip's
# log-spectrogram framed by hand 0.93 ms a clip, at once 0.28 ms.
WINDOW_LOOP = ("a Python loop over a sequence's windows (x[i:i + n] for i in range(0, len(x), step)), "
               "the same calls on each")
_WINDOW_LOOP_FIX = ("take all the windows at once as a view, without copying: np.lib.stride_tricks."
                    "sliding_window_view(x, n)[::step] (a row a window; x.unfold(0, n, step) for a "
                    "tensor), then each call once over its rows (np.fft.rfft(frames * window, axis=-1), "
                    "frames.mean(axis=1); torch.stft frames and transforms a signal in one call). A "
                    "1-s clip's log-spectrogram, 400-sample frames every 160, on a test machine: "
                    "0.93 ms a clip by the loop, 0.28 ms at once, the same values. Try it and time it")
ELEMENT_CALLS = "calling a Python function once for every value (Tensor.apply_, np.vectorize)"
_ELEMENT_CALLS_FIX = ("write the function as ops over the whole tensor or array (torch.clamp, "
                      "torch.where, arithmetic on the tensor; numpy's own functions on the array): "
                      "apply_ and np.vectorize call it in Python once for every value (a clip-and-scale "
                      "over 256 values a sample took 4.6-4.9 ms a batch of 64 on a test machine, "
                      "0.5-0.8 ms as s.clamp(-1, 1) * 0.5). Try it and time it")
# A list searched value by value on the user's line (analysis/list_search.py): `vocab.index(w)`, `w in
# vocab`, `pos.remove(p)`. Measured here: a 5,002-word vocabulary, 40 words a sample, 130 ms a batch
# of 64 against 0.5 ms through a dict; random.choice and list.remove over 60,000 indices 3.9 s an
# epoch against 23 ms shuffled once.
LIST_SEARCH = ("searching a Python list value by value (list.index, `in`, list.count: each call a pass "
               "over the list)")
_LIST_SEARCH_FIX = ("look the values up in a dict or set made once (in __init__, or before the loop) "
                    "instead, one hash lookup each: for a list xs, ids = {v: i for i, v in "
                    "enumerate(xs)}, then ids[v] (or ids.get(v, default)) for xs.index(v) and `v in ids` "
                    "for `v in xs` (a 5,002-word vocabulary searched for 40 words a sample took 130 ms "
                    "a batch of 64 on a test machine, 0.5 ms through a dict). Try it and time it")
DEQUE_INDEX = ("indexing a collections.deque at positions anywhere in it (random.sample of it: each "
               "draw walks its blocks from the nearer end, over up to half of it)")
_DEQUE_INDEX_FIX = ("keep the items in a list used as a ring instead (append until it is full, then "
                    "buf[i] = item; i = (i + 1) % capacity, the oldest written over), or in arrays made "
                    "once at the capacity and indexed by np.random.randint(0, size, k): an index is then "
                    "one lookup (64 transitions drawn from 150,000 on a test machine: 541 us a step "
                    "from a deque, 57 us from a list). Try it and time it")
LIST_REMOVE = ("removing values from a Python list one at a time (list.remove: a search for each, then "
               "every later value moved down)")
_LIST_REMOVE_FIX = ("where values are drawn and then removed (random.choice, then list.remove: sampling "
                    "without replacement), shuffle the list once (random.shuffle) and take its values "
                    "in order, or draw them all at once (random.sample, np.random.permutation); "
                    "elsewhere keep a set of what is left (60,000 indices drawn and removed one at a "
                    "time took 3.9 s an epoch on a test machine, shuffled once 23 ms). Try it and time "
                    "it")
# A batch's indices picked by shuffling every index (analysis/random_picks.py): measured here, N =
# 1,000,000 and k = 256, 12 ms a call through np.random.choice(replace=False), 0.012 through randint.
SHUFFLE_TO_PICK = ("shuffling every index of the data to keep one batch of them (np.random.choice(N, k, "
                   "replace=False), torch.randperm(N)[:k])")
_SHUFFLE_TO_PICK_FIX = ("shuffle once an epoch instead: perm = torch.randperm(N) before the epoch's steps, "
                        "and perm[i * k:(i + 1) * k] at step i (each sample once an epoch, as a "
                        "DataLoader with shuffle=True gives them); or, where a sample may come again "
                        "before the epoch ends, torch.randint(N, (k,)) or np.random.default_rng()."
                        "choice(N, k, replace=False), which do not shuffle all N (N = 1,000,000 and k = "
                        "256 on a test machine: 12 ms a call through np.random.choice, 6.8 ms through "
                        "randperm, 0.012 ms through randint, 0.002 ms slicing a permutation made once)")
# The top k picked by sorting every value (analysis/random_picks.py): measured here, 400,000 scores
# and k = 256, 24 ms through np.argsort, 0.9 ms through torch.topk.
SORT_TO_PICK = "sorting every value to keep the top (or bottom) few (np.argsort(x)[-k:], sorted(xs)[:k])"
_SORT_TO_PICK_FIX = ("pick the k without sorting the rest: torch.topk(x, k) (largest=False for the "
                     "smallest), or np.argpartition(x, -k)[-k:] (unordered; sort those k alone where "
                     "their order matters), heapq.nlargest(k, xs) for a Python list (400,000 scores "
                     "and k = 256 on a test machine: 24 ms through np.argsort, 3.3 ms through "
                     "np.argpartition, 0.9 ms through torch.topk)")
# A list trimmed at its front in the loop (`buffer.pop(0)`: a replay buffer at its capacity): every
# later value moved down each time. Measured here, 200,000 transitions sampled with random.sample:
# 12.6 s with pop(0), 8.4 s as a ring, 11.4 s as a deque (random.sample indexes a deque from its ends).
LIST_FRONT_WORK = ("taking values off a Python list's front (list.pop(0), insert(0, v), del xs[0]: "
                   "every later value moved down each time)")
LIST_FRONT_FIX = ("keep a ring buffer instead: append until it holds N, then overwrite the oldest at an "
                  "index that wraps (buf[i] = item; i = (i + 1) % N), one slot written a step. "
                  "collections.deque(maxlen=N) drops the oldest itself, but indexing it (random.sample "
                  "does) walks from its ends: slower where it is sampled (a replay buffer of 200,000 on a "
                  "test machine: 12.6 s with pop(0), 8.4 s as a ring, 11.4 s as a deque)")
_BY_KIND = ({w.kind: w.remedy for w in WORK_KINDS} | {kind: fix for _, kind, fix in LINE_KINDS}
            | {TENSOR_LOOP: _TENSOR_LOOP_FIX, GRADS_LOOP: _GRADS_LOOP_FIX, INVARIANT: _INVARIANT_FIX,
               INVARIANT_CONVERSION: _INVARIANT_CONVERSION_FIX,
               GATHER: _GATHER_FIX, LIST_TENSOR: _LIST_TENSOR_FIX, DB_QUERY: _DB_QUERY_FIX,
               MODEL_IN_LOADER: _MODEL_IN_LOADER_FIX, UNPICKLING: _UNPICKLING_FIX,
               SAME_FILE: _SAME_FILE_FIX,
               SAMPLE_INVARIANT: _SAMPLE_INVARIANT_FIX, PER_INDEX_DRAW: _PER_INDEX_DRAW_FIX,
               ELEMENT_WRITES: _ELEMENT_WRITES_FIX, ELEMENT_ADDS: _ELEMENT_ADDS_FIX,
               ELEMENT_CALLS: _ELEMENT_CALLS_FIX, WINDOW_LOOP: _WINDOW_LOOP_FIX, CLASS_SCAN: _CLASS_SCAN_FIX,
               LIST_SEARCH: _LIST_SEARCH_FIX, LIST_REMOVE: _LIST_REMOVE_FIX, DEQUE_INDEX: _DEQUE_INDEX_FIX,
               SHUFFLE_TO_PICK: _SHUFFLE_TO_PICK_FIX, SORT_TO_PICK: _SORT_TO_PICK_FIX,
               LIST_FRONT_WORK: LIST_FRONT_FIX})
# (trimming a buffer less often would let it grow past its capacity)
# (nor a count added up a value at a time: counted every N steps it would count a tenth)
_EVERY_STEP = {w.kind for w in WORK_KINDS if w.every_step} | {LIST_FRONT_WORK, GRADS_LOOP, ELEMENT_ADDS}
_BENEATH = tuple(w for w in WORK_KINDS if w.beneath)
# (work the remedy removes: said before more workers, which would run it in parallel)
_WASTED = ({w.kind for w in WORK_KINDS if w.wasted}
           | {DB_QUERY, MODEL_IN_LOADER, UNPICKLING, LIST_TENSOR, SAME_FILE, SAMPLE_INVARIANT, ELEMENT_WRITES,
              ELEMENT_ADDS, ELEMENT_CALLS, LIST_SEARCH, LIST_REMOVE, DEQUE_INDEX, SHUFFLE_TO_PICK,
              SORT_TO_PICK, LIST_FRONT_WORK, WINDOW_LOOP, CLASS_SCAN, INVARIANT_CONVERSION})



# A kind that names the work more exactly than another where it shows in some of its samples only:
# a model's deepcopy is in its Parameters' __deepcopy__ for the tensors' copies, in copy.py alone
# for each submodule's attributes (12 of 19 samples on a 12-layer MLP; a model of many small
# modules has fewer). From this share of the two kinds' samples, the finer names them all.
REFINES = {COPYING_MODEL: DEEPCOPY}
REFINED_MIN_SHARE = 0.2


def refined(kinds: Counter[K]) -> Counter[K]:
    """`kinds` (samples per kind) with a coarse kind's samples counted as its refinement's, where
    that has REFINED_MIN_SHARE of the two."""
    out = Counter(kinds)
    for fine, coarse in REFINES.items():
        f = next((k for k in out if k == fine), None)
        c = next((k for k in out if k == coarse), None)
        if f is not None and c is not None and out[f] >= REFINED_MIN_SHARE * (out[f] + out[c]):
            out[f] += out.pop(c)
    return out


def line_kind(text: str) -> str | None:
    """The kind of work a statement's C call is (gc.collect(), ...), None when it is not one known."""
    return next((kind for call, kind, _ in LINE_KINDS if call in text), None)


def work_kind(frames: Sequence[_Frame]) -> str | None:
    """The kind of library work a sample (its frames, outermost first) is in, None when none matches.
    Beneath an import there is none: a library module being imported (torch._dynamo's
    convert_frame.py when the first optimizer imports dynamo) is importing, not its functions' work."""
    imported = next((i for i, f in enumerate(frames) if f.file.startswith("<frozen importlib")),
                    len(frames))
    for rows in (_BENEATH, WORK_KINDS):
        for f in frames[:imported]:
            path = f.file.replace("\\", "/")
            for w in rows:
                placed = path.endswith(w.suffixes) or any(s.endswith("/") and s in path for s in w.suffixes)
                if placed and (w.names is None or f.name in w.names) and not _under(frames, w.not_under):
                    return w.kind
    return None


def model_in_loader_kind(frames: Sequence[_Frame]) -> str | None:
    """MODEL_IN_LOADER where a torch module's call is beneath the data pipeline's user line."""
    return MODEL_IN_LOADER if any(f.file.replace("\\", "/").endswith("torch/nn/modules/module.py")
                                  for f in frames) else None


def _under(frames: Sequence[_Frame], files: tuple[str, ...]) -> bool:
    return bool(files) and any(x in f.file.replace("\\", "/") for f in frames for x in files)


def remedy(kind: str | None) -> str | None:
    return _BY_KIND.get(kind or "")


def function_and_kind(what: str) -> tuple[str, str]:
    """An account entry's `what` as (function, kind): "<function>: <kind>", a known kind alone, or
    a function alone (analysis/gaps.py: spent_on writes them); "" where either is not told."""
    if remedy(what):
        return "", what
    function, _, kind = what.partition(": ")
    return function, kind


def wasted(kind: str | None) -> bool:
    """Its remedy removes the work (WorkKind.wasted): it comes before more workers."""
    return kind in _WASTED


def every_step(kind: str | None) -> bool:
    """The training needs this kind of work at every step (clipping gradients, the optimizer's
    update): it must get cheaper, never run less often."""
    return kind in _EVERY_STEP
