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

/// Where a variant's operator runs: the CPU, or CUDA device 0 (libtorch_cuda, loaded by the plugin
/// when the first CUDA case needs it).
enum class TorchDevice { cpu, cuda };

/// One variant on one device, with its documented and measured conventions (the table of
/// docs/torch.md#how-a-case-runs is this table; each row's claims are held by a case of
/// cases/torch/conventions.cases that fails if the claim is wrong).
struct TorchVariantInfo {
    TorchVariant variant;
    TorchDevice device;
    std::string_view name;        ///< "flash:cuda": --backend=torch:flash:cuda
    /// The ATen operators called: the forward's, the backward's ("autograd through ..." for math,
    /// whose backward is autograd's), and the torch.nn.attention.SDPBackend they belong to (sdpabench
    /// calls the operator itself, so the backend is the variant's, not a dispatcher's choice).
    std::string_view forward_op, backward_op, sdp_backend;
    std::string_view causal;      ///< alignment of is_causal when S_q != S_kv
    std::string_view gqa;         ///< how H_kv < H_q is passed
    std::string_view lse;         ///< the log-sum-exp output: shape, type, masked-row value
    std::string_view backward;    ///< how the backward is computed
    /// The io types the operator takes: bf16 and f16, and f32 when true (cuDNN's and
    /// FlashAttention-2's operators take 16-bit inputs only).
    bool takes_f32;
    /// The backward outputs the attn_mask gradient (--dmask): math's autograd and efficient's
    /// grad_bias do; flash's and cudnn's backward operators return none.
    bool takes_dmask;
    std::string_view dtype_note;  ///< what else the operator requires of its inputs ("" none)
    std::string_view knobs;       ///< which sdpabench knobs map to which operator arguments
    std::string_view cases;       ///< the case files in cases/torch/ that hold the row's claims
    /// The log-sum-exp the operator writes for a fully masked row (backends/backend.hpp Conventions).
    float masked_row_lse;
    /// Whether the row's conventions were measured on its device (false: read from PyTorch's
    /// sources and documentation, not yet run; docs/torch.md says so).
    bool measured;
};

/// "torch:flash:cuda": the row's --backend name (backends/registry.hpp kTorchPrefix + name).
std::string torch_backend_name(const TorchVariantInfo& v);

/// "FORWARD_OP (+ _backward)", or the forward operator alone when the backward is not its
/// "_backward" twin: the operator column of the table and of messages.
std::string torch_operators(const TorchVariantInfo& v);

/// The six rows: math and flash on the CPU, then the four variants on CUDA, in --help order.
extern const std::array<TorchVariantInfo, 6> kTorchVariants;

/// The row called `name` ("math", "flash", "efficient", "cudnn", "math:cuda", "flash:cuda"), or
/// nullptr.
const TorchVariantInfo* torch_variant(std::string_view name);

/// The rows as a markdown table (README's, between its torch-table markers; --list-torch-variants
/// prints it and scripts/readme_knobs.py keeps README equal to it): one row per backend name.
std::string torch_variant_table_md();

/// The row of variant `v` on device `d`, or nullptr (efficient and cudnn exist on CUDA only).
const TorchVariantInfo* torch_variant(TorchVariant v, TorchDevice d);

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
    /// efficient, cudnn: the plugin repeats K and V heads for H_kv < H_q (as enable_gqa does) and
    /// sums dK, dV over each group.
    bool expand_gqa = false;
    bool mask_grad = false;       ///< math backward with --dmask: autograd's gradient of the attn_mask
    friend bool operator==(const TorchMapping&, const TorchMapping&) = default;
};

/// The mapping of `p` onto variant `v` on device `d`, or why it cannot run it: UNIMPLEMENTED for
/// what the operator has no argument for (dropout: PyTorch's own generator; math has no
/// log-sum-exp output for fwd_t; a row without takes_dmask has no mask gradient; CUDA flash has no
/// attn_mask). What the operator itself rejects (flash with D_qk != D_v, a dtype or head size it
/// lacks) is left to PyTorch, whose message becomes the UNIMPLEMENTED reason when the case runs.
/// Whether a CUDA device is there is not the mapping's question (the backend asks the plugin).
/// Throws std::invalid_argument for a (variant, device) pair that has no row.
std::variant<TorchMapping, Unsupported> torch_mapping(const Problem& p, TorchVariant v,
        TorchDevice d = TorchDevice::cpu);

/// The backend for --backend=torch:VARIANT (backends/registry.hpp kTorchPrefix) for `variant`
/// (math, flash, efficient, cudnn, math:cuda, flash:cuda); nullptr for an unknown one.
std::unique_ptr<Backend> make_torch_backend(std::string_view variant);

}  // namespace sdpa
