// Internals of the oneDNN graph JSON import: matching the SDPA training forward and backward
// patterns on a parsed graph (see graph/json_import.hpp for the patterns).
#pragma once

#include "graph/json_graph.hpp"

namespace sdpa::graph_json {

/// What the match found: the tensors at the pattern's ports and facts about the graph. With
/// Dropout ops, `in` holds the shared seed, offset and probability tensors at
/// GraphPort::dropout_seed, dropout_offset and dropout_p (one value each, checked by the caller).
struct Match {
    Dir dir = Dir::fwd_t;
    ScaleOp scale_op = ScaleOp::mul;
    /// causal_tl or causal_br when the graph builds the causal mask itself (GenIndex,
    /// GreaterEqual, Select; `in` then holds GraphPort::mask_fill and for causal_br
    /// GraphPort::causal_s_kv and causal_s_q).
    std::optional<Mask> implicit_causal;
    /// The Q*K^T MatMul takes K already transposed (transpose_b=false); `in` holds K with its last
    /// two dims and strides swapped back ([.., S_kv, D_qk]).
    bool k_transposed = false;
    std::map<GraphPort, RawTensor> in, out;
    std::vector<std::pair<const RawOp*, const RawTensor*>> io_typed;  ///< (op, its tensor) that must have the io dtype
    std::vector<std::pair<const RawOp*, std::size_t>> f32_typed;  ///< (op, output index) that must be f32
};

/// Matches the forward or backward SDPA training pattern, marking the ops it uses in `g`.
/// Dropout ops are accepted where describe_sdpa_graph() puts them: forward on the SoftMax output
/// P (then an optional TypeCast to the io dtype before the P*V MatMul); backward on P = Exp(...)
/// before the [TypeCast and] dV MatMul and on dP (the dO*V^T MatMul output) before the
/// subtraction of D, both or neither, all three sharing one seed, offset and probability tensor.
/// The implicit causal mask is accepted where describe_sdpa_graph() puts it: on the scaled
/// scores, Select(GreaterEqual(row [+ S_kv - S_q], column), scores, fill) with the row and
/// column from GenIndex on the scores' last two axes.
/// Throws ImportError naming the op (id, kind, name) that broke the match: UNIMPLEMENTED for a
/// Dropout anywhere else, with attributes or a mask output, or computed scalars.
Match match(Graph& g);

}  // namespace sdpa::graph_json
