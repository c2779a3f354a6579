"""Matmul precision from kernel names, and the math fixes it orders."""

from __future__ import annotations

from gpubottle.evidence import GpuEvidence
from gpubottle.rules.gpu import _math_fixes
from gpubottle.trace.kernels import kernel_mix, matmul_class


def test_kernel_names_say_their_precision():
    assert matmul_class("ampere_sgemm_128x64_nn") == "fp32"
    assert matmul_class("volta_sgemm_128x64_nt") == "fp32"
    assert matmul_class("void cudnn::detail::implicit_convolve_sgemm<float, float, 128>") == "fp32"
    assert matmul_class("ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_stages_32x5_nn") == "half"
    assert matmul_class("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64") == "half"
    assert matmul_class("cutlass_80_tensorop_s1688gemm_128x128_16x3_nn_align4") == "tf32"
    assert matmul_class("ampere_tf32_s1688gemm_tf32_128x128_nn") == "tf32"
    assert matmul_class("void at::native::vectorized_elementwise_kernel<4, ...>") is None
    assert matmul_class("sm80_xmma_gemm_i8i8_i8i32_f32") == "other"
    # cuDNN (a V100 trace's names): "s" in scudnn is single precision; batch norm is no matmul.
    assert matmul_class("volta_scudnn_128x128_stridedB_splitK_medium_nn_v1") == "fp32"
    assert matmul_class("volta_h884cudnn_256x128_ldg8_relu_exp_small_nhwc_tn_v1") == "half"
    assert matmul_class("void cudnn::detail::dgrad_engine<float, 512, 6, 5, 3, 3, 3, false>") == "fp32"
    assert matmul_class("void cudnn::cnn::wgrad_alg0_engine<__half, 128, 6, 7>") == "half"
    assert matmul_class("void cudnn::bn_bw_1C11_kernel_new<float, float, float2, 512>") is None


def test_mix_shares():
    mm, mix, top = kernel_mix({"ampere_sgemm_64x64_nn": 60.0, "elementwise_kernel": 30.0,
                               "ampere_bf16_s16816gemm": 10.0})
    assert mm == 0.7 and mix == {"fp32": 0.8571, "half": 0.1429}
    assert top[0] == ("ampere_sgemm_64x64_nn", 0.6)
    assert kernel_mix({}) == (0.0, {}, [])


def test_float32_matmuls_put_autocast_first_and_half_precision_puts_fusion_first():
    fp32 = GpuEvidence(source="trace", matmul_share=0.7, matmul_precision={"fp32": 0.9, "half": 0.1},
                       compute_capability="8.0")
    fixes = _math_fixes(fp32)
    assert fixes[0].text.startswith("90% of matmul time runs in float32 without tensor cores")
    assert "bfloat16" in fixes[0].text and "allow_tf32" in fixes[1].text
    volta = GpuEvidence(source="trace", matmul_share=0.7, matmul_precision={"fp32": 0.9},
                        compute_capability="7.0")
    vf = _math_fixes(volta)
    assert "float16" in vf[0].text and "GradScaler" in vf[0].text
    assert not any("allow_tf32" in f.text for f in vf)  # no TF32 before Ampere
    half = GpuEvidence(source="trace", matmul_share=0.6, matmul_precision={"half": 0.95})
    hf = _math_fixes(half)
    assert len(hf) == 1 and "already run in half precision" in hf[0].text and "40%" in hf[0].text
