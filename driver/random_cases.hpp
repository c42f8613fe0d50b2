// --random=N: valid problems drawn across the whole knob space, stratified so that rare forms
// appear (docs/knobs_run.md#random-cases---randomn). The case parser turns each into a case with the run knobs and
// the problem knobs the line gave; every drawn case is an ordinary Problem whose repro runs it.
#pragma once

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

/// What a given knob needs, brought into drawn case i unless that is given too (`given`: the
/// knobs the line gave), rule by rule in a fixed order: --dmask=true a bias and a backward;
/// a bias knob (--mask-shape, --mask-dt, --mask-fill) a bias; --mask-form=implicit a causal mask
/// (causal_tl or causal_br, drawn); dMask and the implicit form no padding; --dropout-property=
/// tensor a dropout (p 0.1, a drawn seed). The parser applies it after the given values.
void bring_prerequisites(Problem& p, const std::vector<KnobId>& given, const RandomDraws& draws, std::uint64_t i);

/// Drops the drawn features of `p` (not those of the knobs in `given`), one
/// at a time in a fixed order (strides, dropout, padding, dMask, mask form, mask fill and dtype,
/// scale), until validate(p) holds. Returns validate(p)'s last error, nullopt when p is valid.
std::optional<std::string> make_valid(Problem& p, const std::vector<KnobId>& given);

}  // namespace sdpa
