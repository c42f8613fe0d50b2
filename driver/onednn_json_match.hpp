// Internals of the oneDNN graph JSON import: matching the SDPA training forward and backward
// patterns on a parsed graph (see driver/onednn_json_import.hpp for the patterns).
#pragma once

#include "driver/onednn_json_graph.hpp"

namespace sdpa::graph_json {

/// What the match found: the tensors at the pattern's ports and facts about the graph. With
/// Dropout ops, `in` holds the shared seed, offset and probability tensors at
/// GraphPort::dropout_seed, dropout_offset and dropout_p (one value each, checked by the caller).
struct Match {
    Dir dir = Dir::fwd_t;
    ScaleOp scale_op = ScaleOp::mul;
    std::map<GraphPort, RawTensor> in, out;
    std::vector<std::pair<const RawOp*, const RawTensor*>> io_typed;  ///< (op, its tensor) that must have the io dtype
    std::vector<std::pair<const RawOp*, std::size_t>> f32_typed;  ///< (op, output index) that must be f32
};

/// Matches the forward or backward SDPA training pattern, marking the ops it uses in `g`.
/// Dropout ops are accepted where describe_sdpa_graph() puts them: forward on the SoftMax output
/// P (then an optional TypeCast to the io dtype before the P*V MatMul); backward on P = Exp(...)
/// before the [TypeCast and] dV MatMul and on dP (the dO*V^T MatMul output) before the
/// subtraction of D, both or neither, all three sharing one seed, offset and probability tensor.
/// Throws ImportError naming the op (id, kind, name) that broke the match: UNIMPLEMENTED for a
/// Dropout anywhere else, with attributes or a mask output, or computed scalars.
Match match(Graph& g);

}  // namespace sdpa::graph_json
