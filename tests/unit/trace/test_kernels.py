"""Matmul precision from kernel names, and the math fixes it orders."""

from __future__ import annotations

import pytest

from gpubottle.evidence import GpuEvidence
from gpubottle.rules.gpu import decide as gd
from gpubottle.rules.gpu.decide import GpuCompute, math_order
from gpubottle.rules.gpu.words import math_fixes
from gpubottle.trace.kernels import kernel_family, kernel_mix, matmul_class, unclassified_share


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


def _math_fixes(g: GpuEvidence) -> list:
    return math_fixes(GpuCompute(g, 0.9, *math_order(g)))


def test_float32_matmuls_put_autocast_first_and_half_precision_puts_fusion_first():
    fp32 = GpuEvidence(source="trace", matmul_share=0.7, matmul_precision={"fp32": 0.9, "half": 0.1},
                       compute_capability="8.0")
    assert math_order(fp32) == (True, gd.FP32_MATMULS)
    fixes = _math_fixes(fp32)
    assert fixes[0].text.startswith("90% of matmul time runs in float32 without tensor cores")
    assert "bfloat16" in fixes[0].text and "allow_tf32" in fixes[1].text
    volta = GpuEvidence(source="trace", matmul_share=0.7, matmul_precision={"fp32": 0.9},
                        compute_capability="7.0")
    assert math_order(volta) == (False, gd.FP32_MATMULS)
    vf = _math_fixes(volta)
    assert "float16" in vf[0].text and "GradScaler" in vf[0].text
    assert not any("allow_tf32" in f.text for f in vf)  # no TF32 before Ampere
    half = GpuEvidence(source="trace", matmul_share=0.6, matmul_precision={"half": 0.95})
    assert math_order(half) == (True, gd.HALF_MATMULS)
    hf = _math_fixes(half)
    assert len(hf) == 1 and "already run in half precision" in hf[0].text and "40%" in hf[0].text


# Real kernel names (from Nsight/Kineto traces of PyTorch on Volta to Hopper, cuDNN, FlashAttention,
# Inductor and NCCL) with the family and precision they must get.
REAL_NAMES = [
    ("nvjet_tst_128x128_64x4_1x2_h_bz_coopA", "matmul", "other"),
    ("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k"
     "_off_kernel__5x_cublas", "matmul", "half"),
    ("cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_3_64x64x128_4x1x1_kernel0_0",
     "attention", "half"),
    ("void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4, false, false, "
     "cutlass::bfloat16_t, Flash_kernel_traits<128, 128, 64, 4, cutlass::bfloat16_t> >, false, true>"
     "(flash::Flash_fwd_params)", "attention", "half"),
    ("fmha_cutlassF_f16_aligned_64x64_rf_sm80(PyTorchMemEffAttention::AttentionKernel<cutlass::half_t, "
     "cutlass::arch::Sm80, true, 64, 64, 64, true, true>::Params)", "attention", "half"),
    ("triton_tem_fused_mm_0", "matmul", "other"),
    ("triton_tem_fused_addmm_relu_1", "matmul", "other"),
    ("triton_per_fused_convert_element_type_native_layer_norm_3", "normalization", None),
    ("triton_poi_fused_convert_element_type_2", "elementwise", None),
    ("triton_red_fused__to_copy_sum_4", "reduction", None),
    ("ampere_fp16_s16816gemm_fp16_128x128_ldg8_f2f_stages_32x5_nn", "matmul", "half"),
    ("sm80_xmma_gemm_f32f32_tf32f32_f32_nn_n_tilesize128x128x16_stage4_warpsize2x2x1_tensor16x8x8_kernel",
     "matmul", "tf32"),
    ("cutlass::Kernel2<cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_16x16_128x2_tn_align8>",
     "matmul", "half"),
    ("sm90_xmma_fprop_implicit_gemm_bf16bf16_bf16f32_f32_nhwckrsc_nhwc_tilesize128x128x64_warpgroupsize"
     "1x1x1_g1_execute_kernel__5x_cudnn", "convolution", "half"),
    ("void implicit_convolve_sgemm<float, float, 1024, 6, 7, 3, 3, 5, 1, false, true, true>(int, int)",
     "convolution", "fp32"),
    ("volta_scudnn_winograd_128x128_ldg1_ldg4_relu_tile148t_nt_v1", "convolution", "fp32"),
    ("void cudnn::winograd_nonfused::winogradForwardData4x4<float, float>(cudnn::winograd_nonfused::"
     "WinogradDataParams<float, float>)", "convolution", "fp32"),
    ("volta_sgemm_64x64_nt", "matmul", "fp32"),
    ("void splitKreduce_kernel<float, float, float, float>(cublasSplitKParams<float>, float const*)",
     "matmul", "fp32"),
    ("ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevComm*, unsigned long, ncclWork*)",
     "communication", None),
    ("void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<float, float>(int, float)",
     "normalization", None),
    ("void cudnn::bn_fw_tr_1C11_kernel_NCHW<float, float, 512, true, 1>(cudnnTensorStruct, float const*)",
     "normalization", None),
    ("void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, float, float, float, at::native::"
     "(anonymous namespace)::SoftMaxForwardEpilogue>(float*, float const*, int)", "normalization", None),
    ("void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, at::detail::"
     "Array<char*, 1> >(int, at::native::FillFunctor<float>, at::detail::Array<char*, 1>)",
     "elementwise", None),
    ("void at::native::reduce_kernel<512, 1, at::native::ReduceOp<c10::Half, at::native::func_wrapper_t"
     "<c10::Half, at::native::sum_functor<c10::Half, float, c10::Half>>>>", "reduction", None),
    ("void at::native::indexSelectLargeIndex<float, long, unsigned int, 2, 2, -2, true>(cuda::detail::"
     "TensorInfo<float, unsigned int>)", "memory", None),
    ("void at::native::(anonymous namespace)::CatArrayBatchedCopy<float, unsigned int, 4, 64, 64>(float*)",
     "memory", None),
    ("void nchwToNhwcKernel<float, float, float, true, false, (cudnnKernelDataType_t)0>(int, int)",
     "memory", None),
    ("void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::(anonymous namespace)"
     "::TensorListMetadata<4>, at::native::(anonymous namespace)::FusedAdamMathFunctor<float, 4>>",
     "optimizer", None),
    ("at::cuda::(anonymous namespace)::spin_kernel(long)", "unclassified", None),
]


@pytest.mark.parametrize(("name", "family", "precision"), REAL_NAMES)
def test_real_kernel_names_get_their_family_and_precision(name: str, family: str, precision: str | None):
    assert kernel_family(name) == family
    assert matmul_class(name) == precision


def test_the_share_no_family_claims_is_reported():
    assert unclassified_share({"volta_sgemm_64x64_nt": 70.0, "mystery_kernel_v2": 30.0}) == 0.3
    assert unclassified_share({}) is None
