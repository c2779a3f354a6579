"""Which kernels the GPU time goes to, and in what precision the matmuls and convolutions run.

From kernel names only. Each name gets a family from a table of patterns checked against real names
(tests/unit/trace/test_kernels.py holds them: cuBLAS, cuBLASLt's Hopper `nvjet_*`, cuDNN, CUTLASS, sm80/sm90
xmma, FlashAttention, cuDNN SDPA, Triton/Inductor, ATen, NCCL). A name the table does not know is
"unclassified", and its share of kernel time is reported rather than guessed at.

For matmul, convolution and attention kernels the precision comes from the name's type tokens: a
float32 SIMT GEMM ("ampere_sgemm_128x64_nn") leaves the tensor cores idle, where TF32
("..._tf32_s1688gemm...") or half precision ("..._bf16_s16816gemm...") uses them; a name that says
none of this is "other".
"""

from __future__ import annotations

import re
from collections.abc import Mapping

# Order matters: the first family whose pattern matches wins (attention before the GEMM inside it,
# an implicit-GEMM convolution before GEMM, Inductor's templated matmul before its pointwise kernels).
_FAMILIES: tuple[tuple[str, re.Pattern[str]], ...] = tuple((fam, re.compile(p)) for fam, p in (
    ("communication", r"nccl|rccl"),
    ("attention", r"flash|fmha|sdpa|attention|attn"),
    ("convolution", r"conv(?!ert|ersion)|winograd|wgrad|dgrad|fprop|scudnn|hcudnn|cudnn_\d|im2col|col2im"),
    ("matmul", r"gemm|nvjet|cutlass|xmma|matmul|triton_tem_fused_(?:mm|addmm|bmm|baddbmm)|"
               r"cublaslt|splitkreduce|gemv"),
    ("normalization", r"layer_?norm|batch_?norm|group_?norm|rms_?norm|instance_?norm|bn_fw|bn_bw|"
                      r"softmax"),
    ("reduction", r"reduce|triton_red_|triton_per_|argmax|argmin|cumsum|scan|topk|sort"),
    ("elementwise", r"elementwise|triton_poi_|unrolled|vectorized|copy_kernel|fill_kernel|cast|"
                    r"scalepacked"),
    ("memory", r"index|gather|scatter|cat_|catarray|embedding|memcpy|memset|transpose|permute|"
               r"nchwtonhwc|nhwctonchw|computeoffsets|offsetskernel"),
    ("optimizer", r"multi_tensor_apply|adam|sgd|lamb"),
))
MATH_FAMILIES = ("matmul", "convolution", "attention")

# The first template argument or the name's type letters: half/bfloat16, TF32, then float32.
_HALF = ("bf16", "fp16", "f16", "h16", "half", "hmma", "s16816", "h1688", "h884", "s884", "hcudnn",
         "bfloat16", "e4m3", "e5m2", "fp8")
_TF32 = ("tf32", "s1688")
_FP32 = ("sgemm", "scudnn", "f32f32_f32f32", "fp32", "<float")


def kernel_family(name: str) -> str:
    """matmul | convolution | attention | normalization | reduction | elementwise | memory |
    optimizer | communication, or unclassified."""
    low = name.lower()
    for fam, pattern in _FAMILIES:
        if pattern.search(low):
            return fam
    return "unclassified"


def matmul_class(name: str) -> str | None:
    """half | tf32 | fp32 | other for a matmul, convolution or attention kernel, None for any other."""
    if kernel_family(name) not in MATH_FAMILIES:
        return None
    low = name.lower()
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


def unclassified_share(kernel_us: Mapping[str, float]) -> float | None:
    """Share of kernel time in kernels the family table does not know (None without kernels)."""
    total = sum(kernel_us.values())
    if total <= 0:
        return None
    unknown = sum(us for name, us in kernel_us.items() if kernel_family(name) == "unclassified")
    return round(unknown / total, 4)


def short_kernel_name(name: str) -> str:
    """Without the argument list: 'void cudnn::detail::dgrad_engine<float, 512, ...>'."""
    cut = name.rfind(">(")
    short = name[: cut + 1] if cut > 0 else name
    return short if len(short) <= 100 else short[:97] + "..."
