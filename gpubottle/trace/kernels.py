"""Which kernels the GPU time goes to, and in what precision the matmuls and convolutions run.

From kernel names only (cuBLAS, cuDNN, CUTLASS and sm90 xmma name their tile shapes and types): a
float32 SIMT GEMM ("ampere_sgemm_128x64_nn", "implicit_convolve_sgemm") leaves the tensor cores idle,
where TF32 ("..._tf32_s1688gemm...") or half precision ("..._bf16_s16816gemm...") uses them. A name
that says none of this is "other"; nothing is guessed beyond what the name says.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

# Matmul and convolution kernels (cuDNN's batch-norm and tensor-reshaping kernels are not).
_MATMUL = ("gemm", "xmma", "cutlass", "conv", "matmul", "wgrad", "dgrad", "winograd", "scudnn",
           "hcudnn")
# The first template argument or the name's type letters: half/bfloat16, TF32, then float32.
_HALF = ("bf16", "fp16", "f16", "h16", "half", "hmma", "s16816", "h1688", "h884", "s884", "hcudnn",
         "bfloat16")
_TF32 = ("tf32", "s1688")
_CUDNN_TILE = re.compile(r"cudnn_\d")  # volta_scudnn_128x128..., volta_h884cudnn_256x128...
_FP32 = ("sgemm", "scudnn", "f32f32_f32f32", "fp32", "<float")


def matmul_class(name: str) -> str | None:
    """half | tf32 | fp32 | other for a matmul or convolution kernel, None for any other kernel."""
    low = name.lower()
    if not any(k in low for k in _MATMUL) and not _CUDNN_TILE.search(low):
        return None
    if any(k in low for k in _HALF):
        return "half"
    if any(k in low for k in _TF32):
        return "tf32"
    if any(k in low for k in _FP32):
        return "fp32"
    return "other"


def kernel_mix(kernel_us: Mapping[str, float]) -> tuple[float, dict[str, float], list[tuple[str, float]]]:
    """(matmul share of kernel time, matmul time by precision as shares of matmul time, the top
    kernels with their share of kernel time)."""
    total = sum(kernel_us.values())
    if total <= 0:
        return 0.0, {}, []
    by_class: dict[str, float] = {}
    for name, us in kernel_us.items():
        cls = matmul_class(name)
        if cls is not None:
            by_class[cls] = by_class.get(cls, 0.0) + us
    mm = sum(by_class.values())
    mix = {k: round(v / mm, 4) for k, v in sorted(by_class.items(), key=lambda kv: -kv[1])} if mm else {}
    top = sorted(kernel_us.items(), key=lambda kv: -kv[1])[:5]
    return round(mm / total, 4), mix, [(n, round(us / total, 4)) for n, us in top]


def short_kernel_name(name: str) -> str:
    """Without the argument list: 'void cudnn::detail::dgrad_engine<float, 512, ...>'."""
    cut = name.rfind(">(")
    short = name[: cut + 1] if cut > 0 else name
    return short if len(short) <= 100 else short[:97] + "..."
