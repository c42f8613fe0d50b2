// The SDPA problem: dimensions, data types, mask, scale and fill of one case.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/dropout.hpp"
#include "core/dtype.hpp"
#include "core/enum_table.hpp"
#include "core/fp8.hpp"
#include "core/layout.hpp"

namespace sdpa {

/// Direction. fwd_i: O only; fwd_t: O and stats; bwd: dQ, dK, dV from Q, K, V, O, dO, stats
/// (O and stats displaced from the reference forward); fwd_bwd: the vendor's forward (checked
/// like fwd_t), then the vendor's backward fed with that forward's own O and stats (checked like
/// bwd against a reference backward fed the same O and stats). The driver chains the two.
enum class Dir { fwd_i, fwd_t, bwd, fwd_bwd };
/// Mask kind. causal_tl: key j visible to query i when j <= i; causal_br: when
/// j <= i + S_kv - S_q (FlashAttention 2 / cuDNN bottom-right alignment); bias: an explicit
/// additive tensor broadcast from BiasShape; window: sliding window with Problem::window_left /
/// window_right, bottom-right aligned exactly like FlashAttention's window_size=(left, right):
/// key j visible to query i when i + S_kv - S_q - left <= j <= i + S_kv - S_q + right.
enum class Mask { none, causal_tl, causal_br, bias, window };
/// Memory layout of the vendor's Q, K, V, O, dO, dQ, dK, dV buffers (host tensors stay bhsd):
/// bhsd dense [B,H,S,D]; bshd: the same dims with strides of a dense [B,S,H,D] buffer.
/// Problem::strides overrides it per tensor (core/layout.hpp, core/geometry.hpp).
enum class Layout { bhsd, bshd };
/// Broadcast shape of an additive bias [1|B, 1|H_q, 1|S_q, S_kv]: one [1,1,S_q,S_kv],
/// b [B,1,S_q,S_kv], bh [B,H_q,S_q,S_kv], h [1,H_q,S_q,S_kv]; the *_row forms have 1 for S_q
/// (one mask row for every query, e.g. a key-padding mask).
enum class BiasShape { one, b, bh, h, one_row, b_row, h_row, bh_row };
/// Values of the additive bias tensor. random: the --fill family (integers in [-4, 0] for
/// exact); zero: all 0 (benchdnn's fill of a padding mask, whose S_q dim is 1);
/// causal_last_row: 0 where j <= i, -inf elsewhere, and the last query row all -inf
/// (benchdnn's fill of an explicit causal mask: it checks that a fully masked row gives 0).
enum class MaskFill { random, zero, causal_last_row };
/// How the scale tensor is applied to QK^T: multiply (S = QK^T * v) or divide (S = QK^T / v).
enum class ScaleOp { mul, div };
/// Input fill family (fillers/fill.hpp documents each; docs/knobs_fill.md says which bug kind each targets).
enum class Fill { exact, normal, peaky, sparse, lse_underflow, spike_k, tile_spikes };

inline constexpr std::array<EnumName<Dir>, 4> kDirNames{
    {{Dir::fwd_i, "fwd_i"}, {Dir::fwd_t, "fwd_t"}, {Dir::bwd, "bwd"}, {Dir::fwd_bwd, "fwd_bwd"}}};
/// Mask names; `window` is spelled "window:L,R" in the case language (parse_window_mask).
inline constexpr std::array<EnumName<Mask>, 5> kMaskNames{{{Mask::none, "none"},
    {Mask::causal_tl, "causal_tl"}, {Mask::causal_br, "causal_br"}, {Mask::bias, "bias"}, {Mask::window, "window"}}};
inline constexpr std::array<EnumName<Layout>, 2> kLayoutNames{{{Layout::bhsd, "bhsd"}, {Layout::bshd, "bshd"}}};
inline constexpr std::array<EnumName<BiasShape>, 8> kBiasShapeNames{{{BiasShape::one, "1x1xSqxSkv"},
    {BiasShape::b, "Bx1xSqxSkv"}, {BiasShape::bh, "BxHqxSqxSkv"}, {BiasShape::h, "1xHqxSqxSkv"},
    {BiasShape::one_row, "1x1x1xSkv"}, {BiasShape::b_row, "Bx1x1xSkv"}, {BiasShape::h_row, "1xHqx1xSkv"},
    {BiasShape::bh_row, "BxHqx1xSkv"}}};
inline constexpr std::array<EnumName<MaskFill>, 3> kMaskFillNames{
    {{MaskFill::random, "random"}, {MaskFill::zero, "zero"}, {MaskFill::causal_last_row, "causal_last_row"}}};
inline constexpr std::array<EnumName<ScaleOp>, 2> kScaleOpNames{
    {{ScaleOp::mul, "mul"}, {ScaleOp::div, "div"}}};
inline constexpr std::array<EnumName<Fill>, 7> kFillNames{{{Fill::exact, "exact"}, {Fill::normal, "normal"},
    {Fill::peaky, "peaky"}, {Fill::sparse, "sparse"}, {Fill::lse_underflow, "lse_underflow"},
    {Fill::spike_k, "spike_k"}, {Fill::tile_spikes, "tile_spikes"}}};

inline std::string_view format_as(Dir v) { return enum_name(kDirNames, v); }

/// The vendor directions a case of direction `d` runs, in order: fwd_bwd is fwd_t, then bwd (the
/// driver's steps, driver/run_case.cpp; backends see only fwd_i, fwd_t and bwd); any other is itself.
inline std::vector<Dir> directions(Dir d) {
    if (d == Dir::fwd_bwd) return {Dir::fwd_t, Dir::bwd};
    return {d};
}
/// True when a case of direction `d` runs a backward (bwd, fwd_bwd): it needs dO and gives dQ, dK, dV.
inline bool has_backward(Dir d) { return d == Dir::bwd || d == Dir::fwd_bwd; }
inline std::string_view format_as(Mask v) { return enum_name(kMaskNames, v); }
inline std::string_view format_as(BiasShape v) { return enum_name(kBiasShapeNames, v); }
inline std::string_view format_as(MaskFill v) { return enum_name(kMaskFillNames, v); }
inline std::string_view format_as(ScaleOp v) { return enum_name(kScaleOpNames, v); }
inline std::string_view format_as(Fill v) { return enum_name(kFillNames, v); }
inline std::string_view format_as(Layout v) { return enum_name(kLayoutNames, v); }

/// Sizes of one SDPA problem, in the field's names. All must be positive;
/// H_q must be a multiple of H_kv (GQA when 1 < H_kv < H_q, MQA when H_kv = 1).
struct Dims {
    std::int64_t B = 1, H_q = 1, H_kv = 1, S_q = 1, S_kv = 1, D_qk = 1, D_v = 1;
    friend bool operator==(const Dims&, const Dims&) = default;
};

/// Parses a problem descriptor such as "b2hq8hkv2sq128skv256dqk64dv64" or
/// "b1hq32hkv8sq4096d128n=llama3-8b". Keys: b, hq, hkv, sq, skv, dqk, dv, d (both head
/// sizes), and a trailing n=NAME (letters, digits, '_', '-', '.'). Defaults: b 1, hq 1, hkv = hq, skv = sq, dv = dqk; sq and
/// dqk (or d) are required. On failure returns nullopt and sets `error` to a sentence naming
/// the offending part.
std::optional<Dims> parse_descriptor(std::string_view text, std::string* name, std::string* error);

/// Canonical descriptor: "b{B}hq{H_q}[hkv{H_kv}]sq{S_q}[skv{S_kv}]" then "d{D}" when
/// D_qk == D_v else "dqk{D_qk}dv{D_v}", then "n={name}" when named. Round-trips with
/// parse_descriptor.
std::string descriptor(const Dims& d, std::string_view name = {});

/// The attention kind of `d`'s heads: "MHA" (H_kv = H_q), "MQA" (H_kv = 1 < H_q) or "GQA"
/// (1 < H_kv < H_q).
std::string_view attention_kind(const Dims& d);

/// One fully specified case. Immutable once built by the case parser.
struct Problem {
    Dims dims;
    std::string name;                       ///< optional case name (n=...)
    Dir dir = Dir::fwd_t;
    DType dt = DType::f32;                  ///< io dtype of Q, K, V, O, dO, dQ, dK, dV
    /// fp8 io (--dt=e4m3|e5m2): the per-tensor descales (core/fp8.hpp; --fp8-descale).
    Fp8Descales fp8;
    Mask mask = Mask::none;
    BiasShape bias_shape = BiasShape::one;  ///< only with Mask::bias
    std::optional<DType> mask_dt;           ///< dtype of the additive mask; default: dt
    MaskFill mask_fill = MaskFill::random;  ///< values of the bias (only with Mask::bias)
    std::optional<DType> scale_dt;          ///< dtype of the scale tensor; default: dt
    std::optional<float> scale;             ///< scale tensor value; default 1/sqrt(D_qk) (mul) or sqrt(D_qk) (div)
    ScaleOp scale_op = ScaleOp::mul;
    /// The scale passed as a host scalar (rank 0, oneDNN's property_type host_scalar, as PyTorch's
    /// exported graphs pass it) instead of a [1] device tensor (--scale-property).
    bool scale_host_scalar = false;
    /// causal_tl / causal_br built inside the vendor graph (oneDNN's implicit causal mask:
    /// GenIndex on rows and columns, GreaterEqual, Select of -inf; for causal_br the row index
    /// plus S_kv minus S_q first) instead of a 0 / -inf mask tensor (--mask-form=implicit).
    bool implicit_mask = false;
    /// The Dropout ops' seed, offset and probability passed as [1] device tensors instead of
    /// host scalars (--dropout-property=tensor; benchdnn --tensor-property=ID:undef).
    bool dropout_device_scalars = false;
    /// The backward also outputs dMask, the gradient of the bias: dS = P o (dP - D) summed over
    /// the bias's broadcast dims, f32 in the bias's shape (--dmask; needs --mask=bias).
    bool dmask = false;
    Fill fill = Fill::exact;
    std::uint64_t seed = 1;
    /// Padding: valid query / key lengths per batch (B entries each; empty: S_q / S_kv for all).
    /// Rows and keys past them are masked out like causal ones.
    std::vector<std::int64_t> seq_len_q, seq_len_kv;
    /// Sliding window bounds (only with Mask::window): keys before / after the (bottom-right
    /// aligned) diagonal that stay visible; FlashAttention's window_left / window_right, whose -1
    /// (kWindowUnbounded) leaves that side unbounded.
    std::int64_t window_left = 0, window_right = 0;
    Layout layout = Layout::bhsd;  ///< vendor buffer layout of the io tensors (--layout)
    /// Per-tensor layouts overriding --layout and the dense defaults (--strides); canonical
    /// (core/geometry.hpp canonicalize_layouts) in every Problem the parser or importer builds.
    RoleLayouts strides;
    bool deterministic = false;    ///< ask the vendor for a deterministic backward
    /// Ragged (packed, "THD") io tensors (--ragged): Q, K, V, O, dO, dQ, dK, dV hold only the
    /// valid rows of each batch (seq_len_q for Q, O, dO, dQ; seq_len_kv for K, V, dK, dV), packed
    /// token-major one batch after another (core/geometry.hpp TensorGeom::ragged_offsets), as
    /// cuDNN's ragged offsets and FlashAttention's varlen interface take them. Needs padding
    /// lengths and --layout=bshd.
    bool ragged = false;
    /// Dropout on P (--dropout; core/dropout.hpp has the semantics); none when empty. p = 0
    /// still puts the dropout op in the vendor's graph (and must change nothing).
    std::optional<Dropout> dropout;

    friend bool operator==(const Problem&, const Problem&) = default;
};

/// Data type of the additive mask tensor (explicit bias and the causal masks given as tensors):
/// --mask-dt, else the io dtype (f32 for fp8 io: an fp8 graph takes no fp8 mask).
inline DType mask_dtype(const Problem& p) { return p.mask_dt.value_or(is_fp8(p.dt) ? DType::f32 : p.dt); }

/// Data type of the scale tensor ([1], one value): --scale-dt, else the io dtype (f32 for fp8 io:
/// cuDNN's fp8 graphs take attn_scale as an f32 value).
inline DType scale_dtype(const Problem& p) { return p.scale_dt.value_or(is_fp8(p.dt) ? DType::f32 : p.dt); }

/// Value stored in the scale tensor, rounded to the scale dtype (the vendor graph keeps the
/// scale in the io dtype, as oneDNN's SDPA examples do; the reference uses the same value).
float scale_tensor_value(const Problem& p);

/// Valid query length of batch b (padding), S_q without padding.
inline std::int64_t valid_q(const Problem& p, std::int64_t b) {
    return p.seq_len_q.empty() ? p.dims.S_q : p.seq_len_q[static_cast<std::size_t>(b)];
}
/// Valid key length of batch b (padding), S_kv without padding.
inline std::int64_t valid_kv(const Problem& p, std::int64_t b) {
    return p.seq_len_kv.empty() ? p.dims.S_kv : p.seq_len_kv[static_cast<std::size_t>(b)];
}

/// True when key j (0 <= j < S_kv) is visible to query i (0 <= i < S_q) of batch b under
/// p.mask and the padding lengths. Bottom-right alignment (causal_br, window) uses the valid
/// lengths of b (cuDNN's and FlashAttention's convention with padding). Bias masks hide nothing
/// structurally (finite values), except the causal_last_row fill, whose -inf entries hide keys
/// like causal_tl plus the last row. Every mask leaves an interval of keys per row (see
/// visible_keys), which the FLOP count and the masked-row checks rely on.
/// FlashAttention's window bound -1: no bound on that side (--mask=window:L,-1).
inline constexpr std::int64_t kWindowUnbounded = -1;

/// A window bound as a count of keys: `bound`, or for kWindowUnbounded S_q + S_kv, which no row's
/// keys reach past (every use of a window bound reads it through this).
inline std::int64_t window_extent(const Problem& p, std::int64_t bound) {
    return bound == kWindowUnbounded ? p.dims.S_q + p.dims.S_kv : bound;
}

inline bool visible(const Problem& p, std::int64_t b, std::int64_t i, std::int64_t j) {
    const std::int64_t sq = valid_q(p, b), skv = valid_kv(p, b);
    if (i >= sq || j >= skv) return false;
    switch (p.mask) {
        case Mask::causal_tl: return j <= i;
        case Mask::causal_br: return j <= i + skv - sq;
        case Mask::bias: return p.mask_fill != MaskFill::causal_last_row || (j <= i && i != p.dims.S_q - 1);
        case Mask::window:
            return j >= i + skv - sq - window_extent(p, p.window_left) && j <= i + skv - sq + window_extent(p, p.window_right);
        default: return true;
    }
}

/// Half-open interval [first, last) of the keys visible to query i of batch b (empty when
/// first >= last); equals the set of j with visible(p, b, i, j).
std::pair<std::int64_t, std::int64_t> visible_keys(const Problem& p, std::int64_t b, std::int64_t i);

/// "window:L,R" -> (L, R), both non-negative integers; nullopt for any other text.
std::optional<std::pair<std::int64_t, std::int64_t>> parse_window_mask(std::string_view text);

/// True when query row i of batch b sees no key (O and dQ rows must then be exactly 0).
bool row_fully_masked(const Problem& p, std::int64_t b, std::int64_t i);
/// True when key j of batch b is visible to no query (dK and dV rows must then be exactly 0).
bool key_never_visible(const Problem& p, std::int64_t b, std::int64_t j);
/// The first query of batch b that sees key j (the queries that see it are consecutive from
/// there: both ends of every mask's band grow with the query), or nullopt when none does.
std::optional<std::int64_t> first_query_seeing(const Problem& p, std::int64_t b, std::int64_t j);

/// Number of visible score elements summed over the batch, per head: sum over b and i of the
/// visible keys (exact for both causal alignments, S_q != S_kv and padding). Used by the FLOP
/// convention (N in core/flops.hpp).
std::int64_t visible_scores(const Problem& p);

/// First broken rule as a sentence naming the rule and the values, or nullopt when valid.
std::optional<std::string> validate(const Problem& p);

}  // namespace sdpa
