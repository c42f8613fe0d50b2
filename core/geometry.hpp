// The geometry model: for a Problem, every tensor role's logical dims, strides and element type,
// computed here and nowhere else. Fill, validation, the memory estimate, the reference's input
// checks, the oneDNN graph, the cuDNN mapping, the JSON export and every backend's buffers read
// shapes from it (tests/unit/core/test_geometry.cpp holds each of them against it).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/dtype.hpp"
#include "core/layout.hpp"
#include "core/problem.hpp"
#include "core/sdpa_tensors.hpp"

namespace sdpa {

/// Element type of a role: the floating types of DType, s32 (padding lengths, cuDNN's ragged
/// offsets) or u8 (dropout mask); s64 for the dropout seed and offset scalars of a graph
/// (graph/sdpa_graph.hpp) and ragged offsets past 2^31.
enum class ElemType { f32, bf16, f16, s32, u8, s64, boolean, e4m3, e5m2 };
inline constexpr std::array<EnumName<ElemType>, 9> kElemTypeNames{{{ElemType::f32, "f32"},
    {ElemType::bf16, "bf16"}, {ElemType::f16, "f16"}, {ElemType::s32, "s32"}, {ElemType::u8, "u8"},
    {ElemType::s64, "s64"}, {ElemType::boolean, "boolean"}, {ElemType::e4m3, "e4m3"}, {ElemType::e5m2, "e5m2"}}};
inline std::string_view format_as(ElemType v) { return enum_name(kElemTypeNames, v); }

/// The ElemType of a floating DType.
constexpr ElemType elem_type(DType dt) {
    switch (dt) {
        case DType::bf16: return ElemType::bf16;
        case DType::f16: return ElemType::f16;
        case DType::e4m3: return ElemType::e4m3;
        case DType::e5m2: return ElemType::e5m2;
        default: return ElemType::f32;
    }
}
/// The DType of a floating ElemType; nullopt for the integer and boolean types.
constexpr std::optional<DType> float_type(ElemType t) {
    switch (t) {
        case ElemType::f32: return DType::f32;
        case ElemType::bf16: return DType::bf16;
        case ElemType::f16: return DType::f16;
        case ElemType::e4m3: return DType::e4m3;
        case ElemType::e5m2: return DType::e5m2;
        default: return std::nullopt;
    }
}
/// Bytes per element.
constexpr std::size_t size_of(ElemType t) {
    return t == ElemType::s64                         ? 8
           : t == ElemType::f32 || t == ElemType::s32 ? 4
           : t == ElemType::u8 || t == ElemType::boolean || t == ElemType::e4m3 || t == ElemType::e5m2 ? 1
                                                         : 2;
}

/// One tensor role of a problem: logical dims in [B, H, S, D] order, strides in elements in the
/// same order (what the vendor's buffer uses), element type, and whether the problem's
/// direction reads it (input) and/or writes it (output; fwd_bwd: O and stats are both).
struct TensorGeom {
    Role role = Role::Q;
    ElemType type = ElemType::f32;
    std::array<std::int64_t, 4> dims{1, 1, 1, 1};
    std::array<std::int64_t, 4> strides{1, 1, 1, 1};
    bool input = false, output = false;
    /// fp8 roles: the value of an element is its stored code times this (core/fp8.hpp); 1 otherwise.
    float descale = 1.f;
    /// Ragged (packed) storage (Problem::ragged): batch a's elements start at element
    /// ragged_offsets[a] (B + 1 entries, the last one the span) instead of at a * strides[0], and
    /// only its rows c < ragged_rows[a] of dimension 2 are stored (present()). Empty otherwise.
    std::vector<std::int64_t> ragged_offsets, ragged_rows;

    /// Number of logical elements (product of dims; absent ragged rows included).
    std::int64_t elements() const { return dims[0] * dims[1] * dims[2] * dims[3]; }
    /// Elements a buffer for this tensor spans: 1 + the largest offset (0 without elements).
    /// Exact for validated geometries (non-negative strides, no overflow); INT64_MAX on overflow.
    std::int64_t span() const;
    /// Element offset of logical element (a, b, c, d) (of a present one, for ragged storage).
    std::int64_t offset(std::int64_t a, std::int64_t b, std::int64_t c, std::int64_t d) const {
        return (ragged_offsets.empty() ? a * strides[0] : ragged_offsets[static_cast<std::size_t>(a)]) +
               b * strides[1] + c * strides[2] + d * strides[3];
    }
    /// True when row c of batch a is stored (always, but for the rows past a ragged batch's length).
    bool present(std::int64_t a, std::int64_t c) const {
        return ragged_rows.empty() || c < ragged_rows[static_cast<std::size_t>(a)];
    }
    /// True when the strides are dense row-major over dims (strides of size-1 dims ignored).
    bool dense() const;
    /// Coordinates of element offset `off` by greedy division by the strides, largest first
    /// (for messages about a stride gap: one coordinate is then past its dim, e.g. d >= D).
    std::array<std::int64_t, 4> coords_of(std::int64_t off) const;
    friend bool operator==(const TensorGeom&, const TensorGeom&) = default;
};

/// a * b, or INT64_MAX (INT64_MIN for a negative product) when that overflows: strides of absurd
/// dims stay defined and the size rule then rejects them (validate_geometry).
std::int64_t saturating_mul(std::int64_t a, std::int64_t b);

/// Dense row-major strides of `dims` (elements); a general rank for the graph views.
std::vector<std::int64_t> dense_strides(const std::vector<std::int64_t>& dims);

/// Strides of `dims` laid out as `l` (qkv uses `qkv_pitch`, the row pitch of the packed buffer).
std::array<std::int64_t, 4> layout_strides(const std::array<std::int64_t, 4>& dims, const TensorLayout& l,
        std::int64_t qkv_pitch);

/// True when no two distinct logical elements of `t` share a memory offset: the sufficient
/// condition (sorted by stride, each dim starts past the extent of those inside it), else an
/// exact bitmap over the span when that is at most 2^28 elements (a larger interleaved layout
/// counts as overlapping). Outputs must satisfy it; inputs may alias (stride 0, overlapping rows).
bool non_overlapping(const TensorGeom& t);

/// The roles of one problem. The accessors that return references or pointers into it exist for
/// lvalues only (a temporary Geometry would leave them dangling); on a temporary, at() returns a copy.
class Geometry {
public:
    /// The role `r`; throws std::logic_error when the problem has no such tensor.
    const TensorGeom& at(Role r) const&;
    TensorGeom at(Role r) && { return static_cast<const Geometry&>(*this).at(r); }
    /// The role `r`, or nullptr when the problem has no such tensor.
    const TensorGeom* find(Role r) const& { return slots_[static_cast<std::size_t>(r)] ? &*slots_[static_cast<std::size_t>(r)] : nullptr; }
    const TensorGeom* find(Role r) && = delete;
    bool has(Role r) const { return slots_[static_cast<std::size_t>(r)].has_value(); }
    /// Every present role, in Role order.
    std::vector<const TensorGeom*> all() const&;
    std::vector<const TensorGeom*> all() && = delete;
    /// Present roles the direction reads / writes (a role can be both).
    std::vector<const TensorGeom*> inputs() const&;
    std::vector<const TensorGeom*> inputs() && = delete;
    std::vector<const TensorGeom*> outputs() const&;
    std::vector<const TensorGeom*> outputs() && = delete;
    /// The outputs the direction writes, in report order (kOutputNames): the one list every loop
    /// over a case's outputs reads (the checks, --mode=B's rerun, the dropout reruns).
    std::vector<Output> output_list() const;
    void set(TensorGeom t) { slots_[static_cast<std::size_t>(t.role)] = std::move(t); }

private:
    std::array<std::optional<TensorGeom>, kRoleCount> slots_;
};

/// The geometry of `p`: Q [B,H_q,S_q,D_qk], K [B,H_kv,S_kv,D_qk],
/// V [B,H_kv,S_kv,D_v] always (inputs); O [B,H_q,S_q,D_v] (output of fwd_i/fwd_t, input of bwd,
/// both for fwd_bwd); stats [B,H_q,S_q,1] f32 (fwd_t output, bwd input, fwd_bwd both); dO like O,
/// and dQ, dK, dV like Q, K, V (bwd, fwd_bwd); bias [1|B,1|H_q,1|S_q,S_kv] in the mask dtype
/// (--mask=bias, by --mask-shape); seq_len_q / seq_len_kv [B,1,1,1] s32 (padding); scores
/// [B,H_q,S_q,S_kv] f32 (the intermediate). Strides: --layout for the io roles (Q, K, V, O, dO,
/// dQ, dK, dV), dense bhsd for the others, then each --strides override (p.strides).
Geometry geometry(const Problem& p);

/// The symbolic shape of a role, e.g. "[B,H_kv,S_kv,D_qk]" for K (for messages).
std::string_view role_shape_name(Role r);

/// The row pitch of the packed QKV buffer in elements: H_q*D_qk + H_kv*D_qk + H_kv*D_v.
std::int64_t qkv_pitch(const Dims& d);

/// Dims [1|B, 1|H_q, 1|S_q, S_kv] of the additive bias tensor for p.bias_shape.
std::array<std::int64_t, 4> bias_dims(const Problem& p);

/// Dims of the single additive mask tensor a vendor without implicit masks consumes (the oneDNN
/// graph): the bias dims with --mask=bias, [1,1,S_q,S_kv] for causal and window masks, and with
/// padding B rows of S_q (padded queries and keys become -inf entries). Empty without any mask.
std::vector<std::int64_t> merged_mask_dims(const Problem& p);

/// First broken stride or size rule of `g` as "<rule> rule: ..." naming the tensor and the
/// values, or nullopt: strides non-negative (stride rule); every span and byte count within a
/// signed 64-bit integer, the f64 score matrices included (size rule); outputs non-overlapping
/// (overlap rule).
std::optional<std::string> validate_geometry(const Geometry& g);

/// Rewrites p.layout and p.strides into the canonical spelling of the same geometry, so that a
/// repro parses back to an equal Problem: explicit strides equal to those of a tag become that
/// tag (exact equality, size-1 dims included: the vendor sees the same numbers); --layout becomes bshd when more of the present io roles are bshd than bhsd;
/// overrides equal to the default, or for roles the direction lacks, are dropped.
void canonicalize_layouts(Problem& p);

}  // namespace sdpa
