// What the cuDNN adapter sends to the cuDNN frontend for one problem, as plain data: tensor
// dims, strides, data types and uids, and the SDPA attributes. Pure (no cuDNN or CUDA headers),
// so the mapping is unit-tested on machines without a GPU; cudnn_backend.cpp turns it into a
// cudnn_frontend::graph::Graph.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/geometry.hpp"
#include "core/problem.hpp"

namespace sdpa::cudnn {

/// Fixed tensor uids of the variant pack (stable across graphs, used by the executor).
enum class Uid : std::int64_t { Q = 1, K, V, O, stats, dO, dQ, dK, dV, bias, seq_len_q, seq_len_kv };

/// One tensor as cuDNN sees it: its geometry role (4-D dims and strides in elements in cuDNN's
/// [B,H,S,D] order for every tensor, the layout living in the strides only; element type, s32
/// for the padding lengths) and its variant-pack uid and name.
struct TensorDesc {
    Uid uid = Uid::Q;
    std::string name;
    TensorGeom geom;
};

/// cuDNN's diagonal alignment of the causal / sliding-window band.
enum class Alignment { top_left, bottom_right };

/// Everything the graph of one direction needs. fwd (fwd_i / fwd_t): inputs Q, K, V [, bias,
/// seq lens], outputs O [, stats]; bwd: inputs Q, K, V, O, dO, stats [, bias, seq lens],
/// outputs dQ, dK, dV.
struct GraphDesc {
    bool backward = false;
    bool generate_stats = false;   ///< fwd_t: SDPA_attributes::set_generate_stats(true)
    float attn_scale = 1.f;        ///< multiplies QK^T (1/v for --scale-op=div)
    std::vector<TensorDesc> inputs, outputs;
    std::optional<Alignment> alignment;           ///< set with a causal or window mask
    std::optional<std::int64_t> left_bound;       ///< cuDNN's left bound: keys j > i' - left_bound
    std::optional<std::int64_t> right_bound;      ///< keys j <= i' + right_bound
    bool padding = false;                         ///< set_padding_mask(true) + seq_len tensors
    std::vector<std::int32_t> seq_len_q, seq_len_kv;  ///< B values each when padding
    bool deterministic = false;                   ///< backward only

    /// The tensor with `uid` among inputs and outputs, or nullptr.
    const TensorDesc* find(Uid uid) const;
};

/// The cuDNN graph for problem `p` (p.dir must be fwd_i, fwd_t or bwd; fwd_bwd is chained by the
/// driver). Every tensor is its role in geometry(p) (core/geometry.hpp), strides included: the
/// bias has bias_dims(p) for every --mask-shape, stats the stats role's strides. The sliding window `window:L,R` (FlashAttention's window_left/right, keys
/// i' - L <= j <= i' + R with i' = i + S_kv - S_q) maps to BOTTOM_RIGHT alignment, right bound R
/// and cuDNN left bound L + 1 (cuDNN keeps j > i' - left_bound, its band includes the diagonal).
/// Throws std::invalid_argument for fwd_bwd.
GraphDesc describe_graph(const Problem& p);

/// Why cuDNN's SDPA cannot take `p` before asking it (nullopt: ask cuDNN): f32 io (cuDNN SDPA
/// runs f16/bf16 only). The rest is left to cuDNN's own validate/check_support.
std::optional<std::string> cudnn_precheck(const Problem& p);

}  // namespace sdpa::cudnn
