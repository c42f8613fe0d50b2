// --random=N: valid problems drawn across the whole knob space, stratified so that rare forms
// appear (docs/knobs_run.md#random-cases---randomn). The case parser turns each into a case with the run knobs and
// the problem knobs the line gave; every drawn case is an ordinary Problem whose repro runs it.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/problem.hpp"
#include "driver/knobs.hpp"

namespace sdpa {

/// Upper bound on the FLOPs (core/flops.hpp) of a drawn problem: sequence lengths, then B, then
/// heads are halved until a draw is under it, so that 2000 cases run in minutes on two cores.
inline constexpr std::int64_t kRandomMaxFlops = 300'000'000;

// --random=N draws every problem knob of the case language (driver/knobs.hpp knob_table)
// but the --case graph rewrites; a knob the line gives explicitly is not drawn: the parser applies
// its value instead (fp8 and --fp8-descale only so: a drawn case is never fp8, whose vendors are GPUs).

/// Stratified draws over `count` cases from `seed`. For every drawn dimension with k strata,
/// case i's stratum is perm(i) mod k for a seeded bijection perm of [0, count) of its own, so over
/// the N cases each stratum of each knob appears floor(N/k) or ceil(N/k) times, independently
/// of the other knobs. Values inside a stratum come from splitmix64 (core/splitmix.hpp) of
/// (seed, i, dimension): the same on every platform.
class RandomDraws {
public:
    RandomDraws(std::uint64_t seed, std::uint64_t count) : seed_(seed), count_(count == 0 ? 1 : count) {}

    /// Stratum in [0, k) of case i for dimension `dim` (any small integer naming it).
    std::uint64_t stratum(std::uint64_t i, std::uint64_t dim, std::uint64_t k) const;
    /// Uniform integer in [lo, hi] for case i, dimension `dim` (lo <= hi).
    std::int64_t uniform(std::uint64_t i, std::uint64_t dim, std::int64_t lo, std::int64_t hi) const;

private:
    std::uint64_t seed_, count_;
};

/// The value streams of the generator's draws (RandomDraws' `dim`): each drawn choice has its own,
/// so that a choice added later leaves the others' values as they were. A knob's draw hook
/// (KnobHooks::draw) names its streams here, or draws from KnobDraw::own().
namespace draw_stream {
enum : std::uint64_t {
    dir = 1, dt, B, H_kv, group, S_q, S_q_value, S_kv, S_kv_value, D_qk, D_v, D_v_value, mask, window_left,
    window_left_value, window_right, window_right_value, bias_shape, mask_dt, mask_fill, implicit, padding, pad_value,
    scale, scale_value, scale_op, scale_dt, scale_property, fill, layout, strides, stride_role, stride_role2,
    stride_order, stride_order2, stride_gap, dmask, deterministic, dropout, dropout_p, dropout_offset,
    dropout_offset_value, dropout_seed, dropout_property, fill_seed, ragged,
    knob_base = 0x4000,  ///< KnobDraw::own(): knob_base + 0x10 * KnobId + sub
};
}  // namespace draw_stream

/// One drawn case as a knob's draw hook sees it: stratified choices and uniform values of case i.
struct KnobDraw {
    const RandomDraws& r;
    std::uint64_t i;  ///< the case's index in --random=N
    KnobId knob;      ///< the knob drawing (for own())
    /// Stratum in [0, k) of stream `dim` (RandomDraws::stratum), as an index.
    std::size_t pick(std::uint64_t dim, std::uint64_t k) const { return static_cast<std::size_t>(r.stratum(i, dim, k)); }
    /// Uniform integer in [lo, hi] of stream `dim`.
    std::int64_t uniform(std::uint64_t dim, std::int64_t lo, std::int64_t hi) const { return r.uniform(i, dim, lo, hi); }
    /// Stream `sub` (< 16) of the drawing knob: one no other knob and no existing draw uses.
    std::uint64_t own(std::uint64_t sub = 0) const {
        return draw_stream::knob_base + 0x10 * static_cast<std::uint64_t>(knob) + sub;
    }
};

/// A drawn case and the knobs its line gave, as a knob's needs hook (KnobHooks::needs) sees them.
struct KnobNeeds {
    const std::vector<KnobId>& given;
    const RandomDraws& r;
    std::uint64_t i;
    /// True when the line gave knob `k` (its value is not to be changed).
    bool has(KnobId k) const;
};

/// Drawn values the knobs' draw hooks share (driver/knobs.cpp): io types, scales for each scale
/// op, dropout probabilities.
inline constexpr std::array<DType, 3> kDrawnDTypes{DType::f32, DType::bf16, DType::f16};
inline constexpr std::array<float, 4> kDrawnMulScales{0.0625f, 0.125f, 0.5f, 1.f};
inline constexpr std::array<float, 4> kDrawnDivScales{1.f, 2.f, 8.f, 16.f};
inline constexpr std::array<float, 4> kDrawnDropoutPs{0.1f, 0.25f, 0.5f, 0.9f};

/// Per-batch valid lengths in [1, full] of case i (`salt` 0 for the queries, 1 for the keys).
std::vector<std::int64_t> draw_lengths(const RandomDraws& r, std::uint64_t i, std::uint64_t salt, std::int64_t B,
        std::int64_t full);

/// The --strides spelling of a drawn per-tensor layout of case i: none, one or two permuted roles,
/// packed QKV inputs, packed gradients, or one role with a row pitch past its last column (a gap).
std::string draw_strides(const RandomDraws& r, std::uint64_t i, const Problem& p);

/// Halves the largest sequence length, then B, then the heads, until flops(p) <= kRandomMaxFlops.
void cap_cost(Problem& p);

/// Problem i (0-based) of `--random=count --seed=seed`: dims (B 1-4; H_kv 1-3 with GQA ratios
/// 1, 2, 4, 7, 8; S_q and S_kv from the strata 1, 2-15, powers of two 16-256, tails 17-300; D_qk
/// from 1 to 256 with tails such as 17 and 72, D_v = D_qk or another of them), every direction,
/// dtype, mask kind (window bounds, every bias shape, mask dtype and fill), scale form, fill
/// family, padding, layout and per-tensor strides (permutations, packed QKV, row gaps), dMask,
/// determinism and dropout (p = 0 included, offset 0 included). Features that a drawn
/// combination does not allow are dropped (validate() holds for the result), and the cost is
/// held under kRandomMaxFlops. A draw keeps its signal: a sparse or tile_spikes fill over too few
/// terms per output element becomes exact, and a dropout p that would drop most of them is lowered
/// (random_cases.cpp keep_signal; docs/knobs_run.md). The fill seed is drawn too. Deterministic in
/// (seed, count, i).
Problem random_problem(std::uint64_t seed, std::uint64_t count, std::uint64_t i);

/// The knobs that belong to p.mask, drawn for case i (window bounds; bias shape, dtype and fill;
/// the implicit form of a causal mask); the others reset to their defaults. random_problem() calls
/// it, and the parser again when a given knob sets the mask kind.
void draw_mask_details(std::uint64_t seed, std::uint64_t count, std::uint64_t i, Problem& p);
/// draw_mask_details() with the draws of --random=count --seed=seed made.
void draw_mask_details(const RandomDraws& r, std::uint64_t i, Problem& p);

/// What each given knob needs (its row's KnobHooks::needs, in table order), brought into drawn
/// case i unless that is given too (`given`: the knobs the line gave): e.g. --dmask=true a bias, a
/// backward and no padding. The parser applies it after the given values.
void bring_prerequisites(Problem& p, const std::vector<KnobId>& given, const RandomDraws& draws, std::uint64_t i);

/// Drops the drawn features of `p` (not those of the knobs in `given`), one knob at a time back to
/// its default in the rows' drop order (KnobHooks::drop: strides, dropout property, dMask, ...),
/// until validate(p) holds. Returns validate(p)'s last error, nullopt when p is valid.
std::optional<std::string> make_valid(Problem& p, const std::vector<KnobId>& given);

}  // namespace sdpa
