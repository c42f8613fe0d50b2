// Structural rules of an SDPA training graph, checked before anything is allocated. The
// rules follow what ROCm hipDNN's SDPA backward node validates (rank-4 Q/K/V, batch equal,
// D_qk equal for Q and K, S_kv equal for K and V, head divisibility, dO shaped like O, bias
// rank and broadcast, dropout mask, padding lengths, one scale), applied to the tensor shapes
// a case states. The case language implies consistent shapes from one Problem; an imported
// graph (JSON) states each shape and can break any of them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/problem.hpp"

namespace sdpa {

/// One tensor as a graph states it: logical dims in bhsd order and its data type spelling
/// ("f32", "bf16", "f16", "s32", ...). `present` false: the graph has no such tensor.
struct TensorDesc {
    bool present = false;
    std::vector<std::int64_t> dims;
    std::string dt;
};

/// The tensors of one SDPA training graph (the field's names, core/geometry.hpp): Q [B,H_q,S_q,D_qk],
/// K [B,H_kv,S_kv,D_qk], V [B,H_v,S_kv,D_v], O and dO [B,H_q,S_q,D_v], stats [B,H_q,S_q,1],
/// optional bias (rank <= 4, broadcast to [B,H_q,S_q,S_kv]), dropout mask (rank 4,
/// broadcastable), padding lengths seq_len_q/seq_len_kv (s32 [B,1,1,1]); `scale_count`: how
/// many times a scale was given (tensor and attribute count separately).
struct GraphShapes {
    TensorDesc Q, K, V, O, dO, stats, bias, dropout_mask, seq_len_q, seq_len_kv;
    int scale_count = 1;
};

/// The shapes a Problem implies, read from its geometry (core/geometry.hpp): O/dO only for bwd
/// (inputs of the graph), stats for fwd_t and bwd, bias for --mask=bias with its BiasShape,
/// seq_len_* when padding lengths are given (s32 [B,1,1,1]).
GraphShapes shapes_of(const Problem& p);

/// First broken structural rule as "<rule> rule: ..." naming the values, or nullopt. Checks
/// every dimension positive first, then the hipDNN-style rules listed in this file's header.
std::optional<std::string> validate_shapes(const GraphShapes& g);

}  // namespace sdpa
