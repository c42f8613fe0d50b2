// Reads oneDNN graph JSON files (benchdnn --graph --case=FILE.json, oneDNN's graph dump) and
// turns an SDPA training graph into a Problem: the ops are put in topological order and
// matched against the forward pattern (MatMul -> Multiply|Divide -> [Add mask] -> SoftMax
// [+ stats] -> [Dropout -> [TypeCast]] -> MatMul) or the backward pattern (recompute
// P = Exp(scores - stats), [Dropout on P], dV, dP, [Dropout on dP], D = ReduceSum(O * dO) or
// SoftMaxBackward, dS, scale, dQ, dK, with ReduceSum over the group for the 5-D GQA form and
// optional TypeCasts).
//
// Dropout (oneDNN's Dropout op: src, seed s64, offset s64, probability f32, host scalars of
// shape [] or benchdnn's [1] tensors; core/dropout.hpp has the semantics): the file carries no
// values, so the importer chooses them. Unless the caller passes the case's --dropout
// (GraphRewrites::dropout), the problem gets Dropout{kImportDropoutP, the case's --seed,
// kImportDropoutOffset}: p = 0.1 is the attention dropout of the common training recipes (BERT's
// attention_probs_dropout_prob, GPT-2's attn_pdrop), large enough that a wrong mask shows in every
// row; offset 1 because offset 0 selects oneDNN's legacy generator path. The values follow from
// --seed alone, so an imported case's repro needs no --dropout.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/problem.hpp"
#include "core/status.hpp"

namespace sdpa {

/// benchdnn --graph rewriting knobs applied on import.
struct GraphRewrites {
    /// --dt: io dtype of the whole graph (Q, K, V, O, dO, dQ, dK, dV, mask, scale; stats and
    /// intermediates stay f32). nullopt keeps the file's types.
    std::optional<DType> dt;
    /// --in-shapes: "ID:SHAPE[*STRIDES|*TAG][+ID:...]" (benchdnn syntax; SHAPE "2x16x384x64");
    /// empty keeps the file's shapes. Strides are kept as given; a tag (benchdnn's letters, "acbd")
    /// gives a dim order; a shape alone keeps the tensor's memory order (benchdnn's rule).
    std::string in_shapes;
    /// --mb: batch B of every tensor that has one (0 keeps the file's). A mask whose batch
    /// dim is 1 stays broadcast.
    std::int64_t mb = 0;
    /// --dropout: the seed, offset and probability for the graph's Dropout ops; nullopt gives
    /// {kImportDropoutP, the import's seed, kImportDropoutOffset}. Ignored for a graph without
    /// Dropout ops (the graph, not the knob, says whether there is dropout).
    std::optional<Dropout> dropout{};
    /// benchdnn's per-tensor --dt=ID:DT[+ID:DT...] (empty: none), applied before the match
    /// (graph/json_rewrite.hpp rewrite_dtypes).
    std::string dt_ids{};
    /// benchdnn's --op-kind=ID:KIND[+ID:KIND...] (empty: none; KIND undef keeps the op).
    std::string op_kinds{};
    /// benchdnn's --tensor-property=ID:PROP[+ID:PROP...] (empty: none).
    std::string properties{};
    /// benchdnn's --op-attrs=ID:ATTR:VALUE[*ATTR:VALUE...][+ID:...] (empty: none), applied before
    /// the match (graph/json_rewrite.hpp rewrite_op_attrs).
    std::string op_attrs{};
};

/// The drop probability an imported graph's Dropout ops get when GraphRewrites::dropout is empty
/// (the file holds no values; see the header comment for the choice).
inline constexpr float kImportDropoutP = 0.1f;
/// The generator offset an imported graph's Dropout ops get when GraphRewrites::dropout is empty
/// (0 would select oneDNN's legacy generator path, core/dropout.hpp).
inline constexpr std::uint64_t kImportDropoutOffset = 1;

/// Result of an import: the problem (its strides those of the file's ports, canonical), or the
/// status (INVALID_ARGUMENTS: malformed file, not
/// an SDPA training graph, bad rewrite; UNIMPLEMENTED: an SDPA graph using an op, attribute,
/// layout or output sdpabench cannot express) and an error "FILE: error: MESSAGE" naming the
/// op (id, kind, name) or tensor (id) that broke the match.
struct GraphImport {
    std::optional<Problem> prb;
    Status status = Status::passed;
    std::string error;
};

/// The scale value an imported graph gets: benchdnn's power-of-two set for the scale input of
/// Multiply {0.25, 0.5, 1} or Divide {2, 4, 8}, one member picked by `seed`.
float benchdnn_scale(ScaleOp op, std::uint64_t seed);

/// Checks the syntax of an --in-shapes value; nullopt when valid, else a sentence.
std::optional<std::string> check_in_shapes(std::string_view text);

/// Why a per-id rewrite value ("ID:VALUE[+ID:VALUE...]", --dt and --op-kind) is malformed, or
/// nullopt when it parses.
std::optional<std::string> check_id_rewrites(std::string_view text);

/// Why an --op-attrs value ("ID:ATTR:VALUE[*ATTR:VALUE...][+ID:...]") is malformed, or nullopt
/// when it parses.
std::optional<std::string> check_op_attrs(std::string_view text);

/// Imports JSON text; `file` names it in errors. Inputs that come from outside the pattern
/// are filled as benchdnn fills them: the scale value is benchdnn_scale(op, seed); a mask whose S_q dim is 1 is a padding mask of zeros
/// (MaskFill::zero), any other mask is causal with the last row fully masked
/// (MaskFill::causal_last_row); Dropout ops get rw.dropout or {kImportDropoutP, seed,
/// kImportDropoutOffset}. The problem gets p.seed = seed and p.name = the file stem.
GraphImport import_onednn_json_text(std::string_view text, const std::string& file, const GraphRewrites& rw,
        std::uint64_t seed);

/// Reads `path` and imports it (INVALID_ARGUMENTS "FILE: error: cannot open ..." when it
/// cannot be read).
GraphImport import_onednn_json(const std::string& path, const GraphRewrites& rw, std::uint64_t seed);

}  // namespace sdpa
