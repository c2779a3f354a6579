"""emulated-math: float16 math on a CPU without float16 instructions (CPU autocast to float16, a GPU
script's spelling run on a CPU, or model.half()). torch runs its float16 matmuls there on a slow
fallback whose cost grows with the matmuls: measured on an AMD EPYC with AVX-512 BF16 and no FP16,
one thread, a 3-layer MLP's training step (batch 64) 28.3 ms under float16 autocast, 2.7 ms in
float32, 2.0 ms in bfloat16 at width 512; 198 / 11.5 / 8.2 ms at width 1024 (5x at width 256); a
128x2048 @ 2048x2048 matmul 2.6 s against 7 ms. Said from the setting and the CPU alone, as
debug-mode is: a run too short for step statistics (2.9-s steps) still hears it
(tests/check_fixes holds the applied fix to a measurement)."""

from __future__ import annotations

from gpubottle import vocabulary as v
from gpubottle.evidence import Evidence
from gpubottle.report import Fact, Finding, Fix
from gpubottle.rules.common import uses_gpu

PARAMS_FP16 = "parameters"  # where: the model itself is float16 (model.half())


def fp16_emulated(ev: Evidence) -> str | None:
    """Where float16 math meets a CPU without float16 instructions: the autocast's line, or
    PARAMS_FP16 for float16 parameters; None otherwise (a GPU run, a CPU that has them or does not
    say)."""
    if ev.cpu is None or ev.cpu.fp16 is not False or uses_gpu(ev):
        return None
    site = next((m.site or "a line not known" for m in ev.math_in_use
                 if m.kind == v.MATH_AUTOCAST and m.detail == "cpu float16"), None)
    return site or (PARAMS_FP16 if ev.params_dtype == "float16" else None)


def fp16_fix(where: str, bf16: bool | None) -> Fix:
    if where == PARAMS_FP16:
        what = "the model's parameters are float16 (model.half())"
        to = ("model.float() with float32 inputs, and for faster math bfloat16 autocast over the "
              "float32 weights, torch.autocast('cpu', dtype=torch.bfloat16) (this CPU computes "
              "bfloat16 natively)" if bf16 else "model.float() with float32 inputs")
    else:
        what = f"autocast runs the math in float16 (at {where})"
        to = ("torch.autocast('cpu', dtype=torch.bfloat16) there (this CPU computes bfloat16 "
              "natively), or float32 (no autocast)" if bf16 else "float32: leave autocast out")
    return Fix(text=f"{what}, and this CPU has no float16 instructions (AVX-512 FP16 or AMX-FP16): "
                    "torch runs float16 matmuls on a slow fallback, slower the larger they are (a "
                    "3-layer MLP's step 10x slower than in float32 at width 512, 17x at width 1024, "
                    f"on a test machine). Use {to}; try it and time it",
               where=None if where == PARAMS_FP16 else where)


def emulated_math(ev: Evidence) -> list[Finding]:
    where = fp16_emulated(ev)
    if where is None:
        return []
    what = "model.half()" if where == PARAMS_FP16 else f"autocast to float16 at {where}"
    return [Finding(
        v.EMULATED_MATH, "warning", None,
        f"the math runs in float16 ({what}), which this CPU has no instructions for: torch runs its "
        "float16 matmuls on a slow fallback, many times slower than float32",
        [Fact(f"float16 math ({what}) on a CPU without AVX-512 FP16 or AMX-FP16", "cpu_fp16", False)],
        [fp16_fix(where, ev.cpu.bf16 if ev.cpu else None)])]


def fp16_first(where: str) -> Fix:
    """For compute-bound's fixes: before faster math, the precision this CPU emulates."""
    return Fix(text="first run the math in bfloat16 or float32: this CPU has no float16 instructions "
                    "and emulates it (emulated-math, below)",
               where=None if where == PARAMS_FP16 else where)
