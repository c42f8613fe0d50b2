// What the cuDNN adapter sends to the cuDNN frontend for one problem, as plain data: tensor
// dims, strides, data types and uids, and the SDPA attributes. Pure (no cuDNN or CUDA headers),
// so the mapping is unit-tested on machines without a GPU; cudnn_backend.cpp turns it into a
// cudnn_frontend::graph::Graph.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/dropout.hpp"
#include "core/geometry.hpp"
#include "core/implementation.hpp"
#include "core/problem.hpp"

namespace sdpa::cudnn {

/// Fixed tensor uids of the variant pack (stable across graphs, used by the executor): the
/// tensors, the fp8 descale/scale scalars and amax outputs (Graph::sdpa_fp8, sdpa_fp8_backward),
/// and the ragged offsets of the packed tensors.
enum class Uid : std::int64_t {
    Q = 1, K, V, O, stats, dO, dQ, dK, dV, bias, seq_len_q, seq_len_kv,
    dropout_mask, dropout_scale, dropout_scale_inv,
    descale_q, descale_k, descale_v, descale_o, descale_dO, descale_s, descale_dP,
    scale_s, scale_o, scale_dQ, scale_dK, scale_dV, scale_dP,
    amax_s, amax_o, amax_dQ, amax_dK, amax_dV, amax_dP,
    ragged_Q, ragged_K, ragged_V, ragged_O, ragged_dO, ragged_dQ, ragged_dK, ragged_dV
};

/// One tensor as cuDNN sees it: its geometry role (4-D dims and strides in elements in cuDNN's
/// [B,H,S,D] order for every tensor, the layout living in the strides only; element type, s32
/// for the padding lengths) and its variant-pack uid and name. A ragged tensor (geom's
/// ragged_offsets) names the uid of its offsets tensor (GraphDesc::ragged).
struct TensorDesc {
    Uid uid = Uid::Q;
    std::string name;
    TensorGeom geom;
    std::optional<Uid> ragged;  ///< Tensor_attributes::set_ragged_offset with this input
};

/// A [1,1,1,1] f32 scalar: passed by value (a host pointer at execute(), the frontend's
/// Tensor_attributes::set_is_pass_by_value(true)), or, `by_value` false, as a 4-byte device
/// tensor (the fp8 descales and scales, as NVIDIA's fp8 samples bind them).
struct ScalarDesc {
    Uid uid = Uid::dropout_scale;
    std::string name;
    ElemType type = ElemType::f32;
    std::array<std::int64_t, 4> dims{1, 1, 1, 1};
    std::array<std::int64_t, 4> strides{1, 1, 1, 1};
    float value = 0.f;  ///< what the host pointer points at (type f32)
    bool by_value = true;
};

/// cuDNN's ragged offsets of one packed tensor: an input [B+1,1,1,1] of element offsets (s32, or
/// s64 once an offset passes 2^31 - 1) into the tensor's buffer, the first batch at 0
/// (TensorGeom::ragged_offsets).
struct RaggedDesc {
    Uid uid = Uid::ragged_Q;
    std::string name;
    ElemType type = ElemType::s32;
    std::vector<std::int64_t> offsets;
};

/// The byte alignment the cuDNN frontend declares for every tensor it is given (its
/// Tensor_attributes default, 16 bytes, which cuDNN may check at execute: a misaligned pointer is
/// CUDNN_STATUS_BAD_PARAM_MISALIGNED_POINTER). Device allocations are 256-byte aligned; a tensor
/// bound inside another allocation must start at a multiple of this.
inline constexpr std::size_t kTensorAlignment = 16;

/// One fp8 amax output: a [1,1,1,1] f32 tensor of cuDNN's bound at entry `index` of sdpabench's
/// amax role ([1,1,1,k], core/sdpa_tensors.hpp kAmaxFwd / kAmaxBwd), `byte_offset` bytes into the
/// payload of GraphDesc::amax_buffer (a multiple of kTensorAlignment).
struct AmaxDesc {
    Uid uid = Uid::amax_o;
    std::string name;
    std::int64_t index = 0;
    std::size_t byte_offset = 0;
};

/// cuDNN's diagonal alignment of the causal / sliding-window band.
enum class Alignment { top_left, bottom_right };

/// Everything the graph of one direction needs. fwd (fwd_i / fwd_t): inputs Q, K, V [, bias,
/// seq lens, dropout mask], outputs O [, stats]; bwd: inputs Q, K, V [, bias, seq lens, dropout
/// mask], O, dO, stats, outputs dQ, dK, dV; with dropout the by-value scalars dropout_scale
/// [, dropout_scale_inv (bwd)].
struct GraphDesc {
    bool backward = false;
    bool generate_stats = false;   ///< fwd_t: SDPA_attributes::set_generate_stats(true)
    float attn_scale = 1.f;        ///< multiplies QK^T (1/v for --scale-op=div)
    std::vector<TensorDesc> inputs, outputs;
    /// Dropout in cuDNN's caller-supplied-mask mode (p.dropout set, p = 0 included): the input
    /// Uid::dropout_mask (Z, dropout_mask_geom) and the scalars Uid::dropout_scale = 1/(1-p) and,
    /// backward only, Uid::dropout_scale_inv = 1-p, given to SDPA_attributes::set_dropout(mask,
    /// scale) / SDPA_backward_attributes::set_dropout(mask, scale, scale_inv).
    bool dropout = false;
    std::vector<ScalarDesc> scalars;
    std::optional<Alignment> alignment;           ///< set with a causal or window mask
    std::optional<std::int64_t> left_bound;       ///< cuDNN's left bound: keys j > i' - left_bound
    std::optional<std::int64_t> right_bound;      ///< keys j <= i' + right_bound
    bool padding = false;                         ///< set_padding_mask(true) + seq_len tensors
    std::vector<std::int32_t> seq_len_q, seq_len_kv;  ///< B values each when padding
    bool deterministic = false;                   ///< backward only
    /// fp8 io (Graph::sdpa_fp8 / sdpa_fp8_backward): the descale and scale scalars (device tensors,
    /// fwd: descale_q, k, v, s, scale_s, scale_o; bwd: descale_q, k, v, o, dO, s, dP, scale_s,
    /// dQ, dK, dV, dP; a scale is 1/descale in f32, core/fp8.hpp) and the amax outputs.
    bool fp8 = false;
    std::vector<AmaxDesc> amax;
    /// fp8: the one guarded buffer the amax outputs live in: the geometry's amax role ([1,1,1,k]
    /// f32) with each entry in a slot of its own kTensorAlignment bytes (the stride of dimension 3
    /// is 4 elements), so every amax pointer is 16-byte aligned and the 12 bytes after each entry
    /// are a stride gap the guards check (a kernel writing more than its 4 bytes is caught).
    std::optional<TensorGeom> amax_buffer;
    std::vector<RaggedDesc> ragged;               ///< --ragged: one offsets tensor per packed tensor

    /// The tensor with `uid` among inputs and outputs, or nullptr.
    const TensorDesc* find(Uid uid) const;
    /// The scalar with `uid`, or nullptr.
    const ScalarDesc* find_scalar(Uid uid) const;
};

/// The tensors of graph `g` as cuDNN is given them: inputs, then outputs (name, element type,
/// 4-D dims and strides), then the scalars ([1,1,1,1]); ragged offsets as [B+1,1,1,1].
std::vector<BoundTensor> bound_tensors(const GraphDesc& g);

/// The cuDNN graph for problem `p` (p.dir fwd_i, fwd_t or bwd: a step's problem,
/// driver/run_case.hpp step_problem). Every tensor is its role in geometry(p) (core/geometry.hpp), strides included: the
/// bias has bias_dims(p) for every --mask-shape, stats the stats role's strides. The sliding
/// window `window:L,R` (FlashAttention's window_left/right, keys i' - L <= j <= i' + R with
/// i' = i + S_kv - S_q) maps to BOTTOM_RIGHT alignment, right bound min(R, S_q) and cuDNN left
/// bound min(L, S_kv) + 1 (cuDNN keeps j > i' - left_bound, its band includes the diagonal; the
/// clamps change no visible key and keep the bounds inside int). A bottom-right band (causal_br,
/// window) with S_q > S_kv and no padding turns padding on with full lengths (every batch S_q,
/// S_kv: the same band), because cuDNN refuses that band without a padding mask
/// (node/sdpa_support_surface.h, "Bottom right causal mask does not support max_s_q > max_s_kv").
/// With p.dropout, the mask and scale tensors of GraphDesc::dropout; with fp8 io its scalars and
/// amax outputs (GraphDesc::fp8, amax_buffer); with p.ragged the offsets of every packed tensor.
GraphDesc describe_graph(const Problem& p);

/// The dropout mask tensor cuDNN reads for `p` (nullopt without p.dropout): role dropout_mask,
/// dims [B, H_q, S_q, S_kv], dense row-major strides, element type the io dtype (not the u8 of
/// sdpabench's keep flags: NVIDIA's only caller-supplied-mask sample gives the mask the graph's io
/// type; see cudnn_mapping.cpp), an input of every direction that has dropout.
std::optional<TensorGeom> dropout_mask_geom(const Problem& p);

/// The device bytes of the mask tensor `t` (a dropout_mask_geom): t.span() elements of t.type,
/// Z = 1 (encoded in t.type: bf16 0x3F80, f16 0x3C00) where `m` keeps (b, h, i, j), else 0, at
/// t's offsets (gaps, if any, 0). Rows in parallel (OpenMP); `m` is the backend's declared mask
/// (Backend::dropout_mask), so the reference sees exactly what the kernel multiplies by.
std::vector<std::byte> dropout_mask_bytes(const TensorGeom& t, const DropoutMask& m);

/// Why cuDNN's SDPA cannot take `p` before asking it (nullopt: ask cuDNN): f32 io (cuDNN SDPA
/// runs f16/bf16 and, on Hopper and newer, fp8 only); dMask (the adapter does not wire dBias). The rest is left to cuDNN's own validate/check_support; with dropout
/// that rejects the bottom-right alignment (causal_br, window) and the left bound (window), see
/// cudnn_mapping.cpp. Dropout is accepted for every p in [0, 1), p = 0 included (the mask, all
/// ones but for 32-bit draws of exactly 0 (core/dropout.hpp philox_keeps), and scale 1 stay in
/// the graph, so the harness's p = 0 rule checks cuDNN's mask path).
std::optional<std::string> cudnn_precheck(const Problem& p);

}  // namespace sdpa::cudnn
