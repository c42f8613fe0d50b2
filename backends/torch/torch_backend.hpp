// The PyTorch backend: PyTorch's fused SDPA variants (--backend=torch:VARIANT) through libtorch's
// ATen operators, called by the plugin libsdpabench_torch.so (backends/torch/torch_abi.hpp), which
// this backend loads on first use. What each variant is and does is in kTorchVariants below and
// docs/torch.md.
#pragma once

#include <array>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

#include "backends/backend.hpp"
#include "core/enum_table.hpp"

namespace sdpa {

/// PyTorch's SDPA variants: math (the composite fallback), flash, memory-efficient, cuDNN.
enum class TorchVariant { math, flash, efficient, cudnn };

/// One variant's documented and measured conventions (the table of docs/torch.md#how-a-case-runs is
/// this table; each row's claims are held by a case of cases/torch/conventions.cases that fails if
/// the claim is wrong).
struct TorchVariantInfo {
    TorchVariant variant;
    std::string_view name;        ///< "math": --backend=torch:math
    std::string_view op;          ///< the ATen operator(s) called
    bool cpu;                     ///< runs on the CPU (this build's plugin links libtorch_cpu only)
    std::string_view causal;      ///< alignment of is_causal when S_q != S_kv
    std::string_view gqa;         ///< how H_kv < H_q is passed
    std::string_view lse;         ///< the log-sum-exp output: shape, type, masked-row value
    std::string_view backward;    ///< how the backward is computed
};

/// The four variants, in --help order.
extern const std::array<TorchVariantInfo, 4> kTorchVariants;

/// The variant called `name` ("math", "flash", "efficient", "cudnn"), or nullopt.
std::optional<TorchVariant> torch_variant(std::string_view name);

/// How one case maps onto a variant's operator arguments (torch_mapping).
struct TorchMapping {
    /// The attn_mask argument: none; the bias itself, in its broadcast shape and strides; or one
    /// dense additive mask of merged_mask_dims(p) (backends/strided_buffer.hpp merged_mask_values:
    /// the bias plus -inf for causal_br with S_q != S_kv, window masks and padding).
    enum class MaskArg { none, bias, merged };
    bool is_causal = false;       ///< causal_tl (and causal_br with S_q == S_kv): is_causal=True, top-left
    MaskArg mask = MaskArg::none;
    /// The operator's scale (multiplies QK^T); nullopt passes scale=None, the operator's default
    /// 1/sqrt(D_qk), which sdpabench uses for the default scale in f32.
    std::optional<double> scale;
    bool enable_gqa = false;      ///< math: enable_gqa=True for H_kv < H_q (flash groups natively)
    bool mask_grad = false;       ///< math backward with --dmask: autograd's gradient of the attn_mask
    friend bool operator==(const TorchMapping&, const TorchMapping&) = default;
};

/// The mapping of `p` onto variant `v`, or why `v` cannot run it: SKIPPED for the GPU variants in
/// this CPU build; UNIMPLEMENTED for what the operator has no argument for (dropout: PyTorch's own
/// generator; math has no log-sum-exp output for fwd_t; flash has no mask gradient). What the
/// operator itself rejects (flash with D_qk != D_v, a mask dtype it refuses) is left to PyTorch,
/// whose message becomes the UNIMPLEMENTED reason when the case runs.
std::variant<TorchMapping, Unsupported> torch_mapping(const Problem& p, TorchVariant v);

/// The backend for --backend=torch:VARIANT; nullptr for an unknown variant.
std::unique_ptr<Backend> make_torch_backend(std::string_view name);

}  // namespace sdpa
