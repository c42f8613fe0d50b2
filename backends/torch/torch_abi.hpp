// The interface between sdpabench and its libtorch plugin (libsdpabench_torch.so, built from
// backends/torch/torch_plugin.cpp by cmake/torch.cmake): plain structs and two C functions, so that
// the plugin needs no sdpabench code and sdpabench needs no libtorch header. The sdpabench side
// (backends/torch/torch_backend.cpp) decides everything a case means (which operator, which mask,
// which scale); the plugin only wraps the caller's buffers as ATen tensors, calls the operator and
// copies its results into the caller's output buffers.
#pragma once

#include <cstdint>

extern "C" {

/// Bumped when a struct below changes; the plugin refuses a call of another version.
inline constexpr std::int32_t kSdpaTorchAbi = 3;

/// PyTorch's fused SDPA variant: the ATen operator called.
/// math: at::_scaled_dot_product_attention_math (backward by autograd through it), CPU or CUDA;
/// flash: at::_scaled_dot_product_flash_attention_for_cpu and its _backward on the CPU,
///        at::_scaled_dot_product_flash_attention and its _backward on CUDA;
/// efficient: at::_scaled_dot_product_efficient_attention and its _backward (CUDA);
/// cudnn: at::_scaled_dot_product_cudnn_attention and its _backward (CUDA).
enum SdpaTorchVariant : std::int32_t { kSdpaTorchMath = 0, kSdpaTorchFlash = 1, kSdpaTorchEfficient = 2, kSdpaTorchCudnn = 3 };

/// Where the operator runs: the host's memory as is (CPU), or copies on CUDA device 0 with the
/// same dims and strides (the results are copied back into the output views).
enum SdpaTorchDevice : std::int32_t { kSdpaTorchCpu = 0, kSdpaTorchCuda = 1 };

/// Element types of the views (PyTorch's float, bfloat16, half, bool).
enum SdpaTorchDtype : std::int32_t { kSdpaTorchF32 = 0, kSdpaTorchBf16 = 1, kSdpaTorchF16 = 2, kSdpaTorchBool = 3 };

/// A strided tensor in the caller's memory: `rank` dims and strides in elements (rank <= 4).
/// data == nullptr: absent (no mask; an output the direction does not have).
struct SdpaTorchView {
    void* data = nullptr;
    std::int32_t dtype = kSdpaTorchF32;
    std::int32_t rank = 0;
    std::int64_t dims[4] = {0, 0, 0, 0};
    std::int64_t strides[4] = {0, 0, 0, 0};
};

/// One operator call. Forward: O (and, for the fused variants, the log-sum-exp, delivered as
/// [B,H_q,S_q] f32 whatever shape the operator returns it in) from Q, K, V and the optional
/// additive attn_mask. Backward: dQ, dK, dV (and, for math and efficient with mask_grad, the
/// mask's gradient, summed to the mask's shape) from dO; the fused variants read the given O and
/// log-sum-exp (on CUDA after an untimed forward that supplies the operator's other outputs: its
/// RNG state, sequence tensors and log-sum-exp layout), math recomputes its forward under autograd.
struct SdpaTorchCall {
    std::int32_t abi = kSdpaTorchAbi;
    std::int32_t variant = kSdpaTorchMath;
    std::int32_t device = kSdpaTorchCpu;
    std::int32_t backward = 0;
    std::int32_t threads = 1;      ///< at::set_num_threads
    std::int32_t is_causal = 0;    ///< the operator's is_causal
    std::int32_t enable_gqa = 0;   ///< math's enable_gqa (H_kv < H_q)
    /// efficient, cudnn: K and V heads repeated H_q / H_kv times (repeat_interleave, as enable_gqa
    /// does) before the call, and dK, dV summed over each group after it.
    std::int32_t expand_gqa = 0;
    std::int32_t has_scale = 0;    ///< 0: scale=None (the operator's default)
    std::int32_t mask_grad = 0;    ///< math backward: also the attn_mask's gradient
    double scale = 0.0;            ///< the operator's scale (multiplies QK^T) when has_scale
    double dropout_p = 0.0;        ///< math's dropout_p, with dropout_mask the keep flags it applies
    SdpaTorchView q, k, v, mask;   ///< inputs; mask.data == nullptr: attn_mask=None
    SdpaTorchView dropout_mask;    ///< math: bool [B,H_q,S_q,S_kv], true where kept (data == nullptr: none)
    SdpaTorchView o, d_o, lse;     ///< backward inputs (lse rank 3)
    /// Outputs: the results are copied here (converted to each view's dtype).
    SdpaTorchView out_o, out_lse, out_dq, out_dk, out_dv, out_dmask;
};

/// status: 0 ran; 1 PyTorch rejected the call (a c10::Error: its message, without backtrace);
/// 2 another error; 3 the device ran out of memory (c10::OutOfMemoryError: SKIPPED, as
/// backends/backend.hpp out_of_device_memory says). kernel_ms: host wall time of the operator call alone (CPU: synchronous; CUDA:
/// from a synchronized device to the device synchronized after the call), without the copies
/// between the views and the device. info: what the operator returned that the views do not show
/// (the log-sum-exp's own shape) and the warnings PyTorch issued during the call (kept off stderr),
/// for -v.
struct SdpaTorchResult {
    std::int32_t status = 2;
    double kernel_ms = 0.0;
    char message[2048] = {};
    char info[1024] = {};
};

/// The plugin's entry points (dlsym names "sdpabench_torch_abi", "sdpabench_torch_run",
/// "sdpabench_torch_version", "sdpabench_torch_cuda"). The ABI it speaks (kSdpaTorchAbi when it
/// was built), checked on load.
typedef std::int32_t (*SdpaTorchAbiFn)();
typedef void (*SdpaTorchRunFn)(const SdpaTorchCall* call, SdpaTorchResult* result);
/// libtorch's version, e.g. "2.15.0".
typedef const char* (*SdpaTorchVersionFn)();
/// Whether CUDA runs: loads libtorch_cuda.so from libtorch_cpu.so's folder once (its kernels
/// register with the dispatcher) and asks for a device. 1: yes, `what` holds the CUDA runtime,
/// cuDNN and device count; 0: no, `what` says why (the loader's error, or no device). `n` is the
/// size of `what`.
typedef std::int32_t (*SdpaTorchCudaFn)(char* what, std::int32_t n);

}  // extern "C"
