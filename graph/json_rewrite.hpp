// Internals of the oneDNN graph JSON import: benchdnn's --in-shapes rewrite
// ("ID:SHAPE[*STRIDES|*TAG][+ID:...]") and memory orders of strided tensors.
#pragma once

#include "graph/json_graph.hpp"

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

/// benchdnn's memory tag of `stride` ("acbd"): the dims sorted by decreasing stride, ties in
/// logical order (benchdnn's strides2memory_tag); "abcd..." when `stride` is empty or not one
/// value per dim.
std::string memory_tag(const dims_t& shape, const dims_t& stride);

/// Dense strides of `shape` in the dim order of benchdnn tag `tag` (letters a.. outermost
/// first, as oneDNN's format tags: "acbd" for a [B,H,S,D] tensor stored [B,S,H,D]).
dims_t tag_strides(const dims_t& shape, const std::string& tag);

/// Applies --in-shapes to every occurrence of the named graph boundary tensors, as benchdnn does:
/// explicit strides are kept as given, a tag gives that dim order, and a shape alone keeps the
/// tensor's memory order (memory_tag of its strides). INVALID_ARGUMENTS for unknown or internal
/// ids, a tag that is not a permutation of the shape's letters, strides of another rank.
void rewrite_shapes(std::vector<RawOp>& ops, std::string_view text);

/// One entry of benchdnn's per-id graph knobs (--dt=ID:DT+..., --op-kind=ID:KIND+...).
struct IdRewrite {
    std::size_t id = 0;
    std::string value;
};

/// Parses "ID:VALUE[+ID:VALUE...]" (empty: no entries; VALUE non-empty letters, digits, '_').
/// On a syntax error returns {} and sets `err` to a sentence quoting the bad entry.
std::vector<IdRewrite> parse_id_rewrites(std::string_view text, std::string* err);

/// benchdnn's --dt=ID:DT+...: every occurrence of logical tensor ID gets data type DT (a oneDNN
/// graph type: f32, bf16, f16, s8, u8, s32, s64, boolean, f8_e4m3, f8_e5m2, f4_e2m1, ...), as
/// benchdnn's graph rewriter does; the import then checks the result like any file.
/// INVALID_ARGUMENTS (benchdnn's "Rewriter failed") for an id no tensor has or an unknown type.
void rewrite_dtypes(std::vector<RawOp>& ops, std::string_view text);

/// benchdnn's --tensor-property=ID:PROP+...: every occurrence of logical tensor ID gets
/// property_type PROP (undef, variable, constant, host_scalar; the import then checks it against
/// what sdpabench binds). INVALID_ARGUMENTS for an id no tensor has or an unknown property.
void rewrite_properties(std::vector<RawOp>& ops, std::string_view text);

/// benchdnn's --op-kind=ID:KIND+...: op ID becomes KIND (e.g. the scale's Multiply <-> Divide);
/// KIND "undef" keeps the op as it is. INVALID_ARGUMENTS for an id no op has.
void rewrite_op_kinds(std::vector<RawOp>& ops, std::string_view text);

/// One attribute of a benchdnn --op-attrs entry: op id, attribute name, value as written.
struct AttrRewrite {
    std::size_t id = 0;
    std::string name, value;
};

/// Parses benchdnn's --op-attrs value "ID:ATTR:VALUE[*ATTR:VALUE...][+ID:...]" (empty: no
/// entries; ATTR letters, digits, '_'; VALUE non-empty letters, digits, '_', '-', '.'), one
/// AttrRewrite per attribute, in order. On a syntax error returns {} and sets `err` to a sentence
/// quoting the bad entry.
std::vector<AttrRewrite> parse_op_attrs(std::string_view text, std::string* err);

/// benchdnn's --op-attrs: attribute ATTR of op ID gets VALUE, typed like the attribute the op
/// already has (s64; bool 0/1 or true/false, written 0/1; f32; string; s64[] and f32[] written
/// AxBxC), else typed by the value (an integer: s64; integers joined by 'x': s64[]; a number: f32;
/// anything else: string) and added. INVALID_ARGUMENTS for an id no op has, a value that is not of
/// the attribute's type, or an attribute type sdpabench does not know.
void rewrite_op_attrs(std::vector<RawOp>& ops, std::string_view text);

}  // namespace sdpa::graph_json
