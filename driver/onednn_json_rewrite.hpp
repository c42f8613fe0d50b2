// Internals of the oneDNN graph JSON import: benchdnn's --in-shapes rewrite
// ("ID:SHAPE[*STRIDES|*TAG][+ID:...]") and the dense-layout check.
#pragma once

#include "driver/onednn_json_graph.hpp"

namespace sdpa::graph_json {

/// One --in-shapes entry: tensor id, new shape (if given), tag or strides (if given).
struct ShapeRewrite {
    std::size_t id = 0;
    std::optional<dims_t> shape;
    std::string tag;                  ///< letters, or empty
    std::optional<dims_t> strides;
};

/// Parses an --in-shapes value (empty: no entries). On a syntax error returns {} and sets
/// `err` to a sentence quoting the bad entry.
std::vector<ShapeRewrite> parse_in_shapes(std::string_view text, std::string* err);

/// True when `stride` is dense row-major for `shape` (dims of size 1 may have any stride;
/// empty strides count as dense).
bool dense(const dims_t& shape, const dims_t& stride);

/// Applies --in-shapes to every occurrence of the named graph boundary tensors (dense strides);
/// INVALID_ARGUMENTS for unknown or internal ids, UNIMPLEMENTED for non-dense strides or tags.
void rewrite_shapes(std::vector<RawOp>& ops, std::string_view text);

}  // namespace sdpa::graph_json
