"""The words the JSON contract, the rules, the gate and the docs share, written once.

The five categories are the verdicts the primary is chosen among; the other findings stand beside
them. Every name a rule can produce is in FINDINGS, so the gate can forbid any of them and the
README lists all of them (a test checks both).
"""

from __future__ import annotations

DATA_STARVED = "data-starved"
PREPROCESSING_BOUND = "preprocessing-bound"
TRANSFER_BOUND = "transfer-bound"
OOM_RISK = "oom-risk"
COMPUTE_BOUND = "compute-bound"
INCONCLUSIVE = "inconclusive"

CATEGORIES = (DATA_STARVED, PREPROCESSING_BOUND, TRANSFER_BOUND, OOM_RISK, COMPUTE_BOUND)

CPU_CONTENTION = "cpu-contention"
GIL_CONTENTION = "gil-contention"
LAUNCH_BOUND = "launch-bound"
SYNC_BOUND = "sync-bound"
COMMUNICATION_BOUND = "communication-bound"
STRAGGLER = "straggler"
THROTTLED = "throttled"
CHECKPOINT_BOUND = "checkpoint-bound"
STARTUP_BOUND = "startup-bound"
TEARDOWN_BOUND = "teardown-bound"
LOOP_OVERHEAD = "loop-overhead"
EVAL_BOUND = "eval-bound"
UNSHARDED_DATA = "unsharded-data"
UNEVEN_RANKS = "uneven-ranks"
DEBUG_MODE = "debug-mode"
EVAL_AUTOGRAD = "eval-autograd"
OPTIMIZER_REBUILT = "optimizer-rebuilt"
SUBNORMAL_MATH = "subnormal-math"
REPLAYED_BATCHES = "replayed-batches"
EVAL_MODE_TRAINING = "eval-mode-training"
DISCARDED_GRADIENTS = "discarded-gradients"
UNCLEARED_GRADIENTS = "uncleared-gradients"
UNTRAINED_LAYER = "untrained-layer"
EMULATED_MATH = "emulated-math"
RULE_ERROR = "rule-error"  # a rule that failed on this evidence: a gpubottle bug, reported not hidden

OTHER_FINDINGS = (CPU_CONTENTION, GIL_CONTENTION, LAUNCH_BOUND, SYNC_BOUND, COMMUNICATION_BOUND, STRAGGLER,
                  THROTTLED, CHECKPOINT_BOUND, STARTUP_BOUND, TEARDOWN_BOUND, LOOP_OVERHEAD, EVAL_BOUND,
                  UNSHARDED_DATA, UNEVEN_RANKS, DEBUG_MODE, EVAL_AUTOGRAD, OPTIMIZER_REBUILT, SUBNORMAL_MATH,
                  REPLAYED_BATCHES, EVAL_MODE_TRAINING, DISCARDED_GRADIENTS, UNCLEARED_GRADIENTS,
                  UNTRAINED_LAYER, EMULATED_MATH, RULE_ERROR)
FINDINGS = CATEGORIES + OTHER_FINDINGS

MEANING = {
    DATA_STARVED: "the loop waits for batches and the input pipeline leaves CPU unused: more loader "
                  "parallelism helps",
    PREPROCESSING_BOUND: "the loop waits for batches and the input pipeline already uses the CPU it "
                         "has: per-sample work must get cheaper",
    TRANSFER_BOUND: "host/device copies cost a large share of the step",
    OOM_RISK: "memory will run out or nearly did (host or GPU)",
    COMPUTE_BOUND: "the model's own arithmetic dominates: the healthy state",
    CPU_CONTENTION: "other programs, or more threads than cores, take the CPU the run needs",
    GIL_CONTENTION: "a Python thread of the script runs beside the loop, which waits for the interpreter "
                    "lock it holds",
    LAUNCH_BOUND: "the GPU idles with nothing submitted: the host does not keep it fed",
    SYNC_BOUND: "the host waits for the GPU in synchronising calls",
    COMMUNICATION_BOUND: "communication not hidden under compute costs a large share of the step",
    STRAGGLER: "one rank is slower than the rest, and they wait for it",
    THROTTLED: "the GPU lowered its clocks for heat or power",
    CHECKPOINT_BOUND: "saving checkpoints stops the loop for a large share of the run",
    STARTUP_BOUND: "the script's own start-up (before its first batch) is a large share of the run",
    TEARDOWN_BOUND: "the script's own work after its last training step is a large share of the run",
    LOOP_OVERHEAD: "the loop's own code outside the model (logging, metrics, bookkeeping) costs a "
                   "large share of the step or of the run",
    EVAL_BOUND: "an evaluation the script runs without a DataLoader (model.eval() ... model.train(), "
                "batches of its own) takes a large share of the run",
    UNSHARDED_DATA: "every rank of a job iterates the whole dataset (no DistributedSampler), or every "
                    "DataLoader worker the whole IterableDataset stream: the work is done once per "
                    "rank or worker",
    UNEVEN_RANKS: "the ranks of a job take different numbers of steps: the fast ones wait at the end, "
                  "or the job hangs",
    DEBUG_MODE: "a debugging switch left on slows every step (autograd anomaly detection, "
                "CUDA_LAUNCH_BLOCKING=1)",
    EVAL_AUTOGRAD: "an evaluation runs its model with autograd on (no torch.no_grad()): every forward "
                   "records a graph nothing runs backward, costing time, and memory where outputs are kept",
    OPTIMIZER_REBUILT: "the loop builds its optimizer anew at every step: its state (Adam's moment "
                       "estimates, SGD's momentum) starts over each step, so it does not train as set up",
    SUBNORMAL_MATH: "the steps slowed once values the CPU computes on became subnormal (smaller than "
                    "float32's smallest normal number, 1.2e-38), which an x86 CPU computes on many "
                    "times slower",
    REPLAYED_BATCHES: "the loop trains on batches itertools.cycle(loader) kept from the loader's first "
                      "pass and replays: the same batches in the same order, all held in memory",
    EVAL_MODE_TRAINING: "training steps run with the model left in eval mode after an evaluation "
                        "(no model.train() after model.eval()): dropout off, batch norm frozen",
    DISCARDED_GRADIENTS: "backward passes whose gradients a zero_grad() cleared before the optimizer "
                         "step used them (accumulation zeroed at every micro-batch)",
    UNCLEARED_GRADIENTS: "gradients never cleared between optimizer steps (no zero_grad()): each "
                         "backward adds to all the ones before it, so every step applies the sum of "
                         "the run's gradients so far",
    EMULATED_MATH: "the math runs in float16 on a CPU without float16 instructions (no AVX-512 FP16 "
                   "or AMX-FP16): torch computes it on a slow fallback, many times slower than float32",
    UNTRAINED_LAYER: "the model's forward calls a layer that is no part of the model (built anew at "
                     "every call, or kept in a plain list the model does not register): no "
                     "optimizer holds its weights, so they never train",
    RULE_ERROR: "a rule failed on this evidence (a bug in gpubottle)",
}

# The faster-math settings the probes see the script use (probes/math_modes.py), which no fix offers
# again (compute-bound) and whose compiling start-up weighs (startup-bound).
MATH_AUTOCAST = "autocast"
MATH_COMPILE = "torch.compile"
MATH_FLUSH_DENORMAL = "flush-denormal"  # torch.set_flush_denormal(True): subnormals computed as zeros

# How a torch optimizer's step() updates its parameters (probes/optimizer_info.py).
OPT_FOR_LOOP = "for-loop"  # a Python loop over the tensors, a few small ops each
OPT_FOREACH = "foreach"  # one multi-tensor op per operation
OPT_FUSED = "fused"  # one fused kernel per parameter group

# The debugging switches the probes watch (probes/debug_switches.py; debug-mode says them).
DEBUG_ANOMALY = "anomaly detection"
DEBUG_LAUNCH_BLOCKING = "CUDA_LAUNCH_BLOCKING=1"

# The parts of a profiled step, named as the retired TensorBoard profiler plugin named them.
BREAKDOWN_LABELS = {
    "kernel": "Kernel", "memcpy": "Memcpy", "memcpy_device": "Memcpy DtoD", "memset": "Memset",
    "communication": "Communication",
    "runtime": "Runtime", "dataloader": "DataLoader", "cpu_op": "CPU Exec", "other": "Other",
}

# The phases of a run's account (evidence/account.py), named for people.
PHASE_LABELS = {
    "startup": "start-up", "train": "training", "eval": "evaluation", "checkpoint": "checkpoints",
    "between-steps": "between steps", "teardown": "tear-down", "gpubottle": "gpubottle",
}

SEVERITIES = ("info", "warning", "critical")
SEVERITY_RANK = {s: i for i, s in enumerate(SEVERITIES)}
