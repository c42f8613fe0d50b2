#include "compare/compare.hpp"
#include "compare/extra_checks.hpp"
#include "core/isa_clones.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <utility>

#include <fmt/format.h>

namespace sdpa {

bool structural(const Problem& p, Output out, const std::array<std::int64_t, 4>& idx) {
    switch (out) {
        case Output::O:
        case Output::dQ:
        case Output::stats: return row_fully_masked(p, idx[0], idx[2]);
        case Output::dK:
        case Output::dV: return key_never_visible(p, idx[0], idx[2]);
        case Output::dMask:
        case Output::amax: return false;
    }
    return false;
}

namespace {

/// True when dS_bij is 0 by construction: key j is hidden from query i, or query i sees one key.
bool ds_zero(const Problem& p, std::int64_t b, std::int64_t i, std::int64_t j) {
    const auto [lo, hi] = visible_keys(p, b, i);
    return j < lo || j >= hi || hi - lo == 1;
}

/// Without a mask that hides keys and without key padding every valid query sees all S_kv keys:
/// nothing is zero by construction unless S_kv = 1 (the common case, answered at once).
bool no_zero_by_construction(const Problem& p) {
    const bool hides_keys = p.mask != Mask::none && !(p.mask == Mask::bias && p.mask_fill != MaskFill::causal_last_row);
    return !hides_keys && p.seq_len_kv.empty() && p.dims.S_kv > 1;
}

}  // namespace

bool zero_by_construction(const Problem& p, Output out, const std::array<std::int64_t, 4>& idx) {
    if (no_zero_by_construction(p)) return false;
    const std::int64_t b = idx[0];
    switch (out) {
        case Output::dQ: {
            const auto [lo, hi] = visible_keys(p, b, idx[2]);
            return hi - lo == 1;
        }
        case Output::dK: {  // the queries that see key j are consecutive: each must see only j
            const std::int64_t j = idx[2];
            const auto first = first_query_seeing(p, b, j);
            if (!first) return false;  // structural
            for (std::int64_t i = *first; i < p.dims.S_q && visible(p, b, i, j); ++i)
                if (!ds_zero(p, b, i, j)) return false;
            return true;
        }
        case Output::dMask: {  // every (b, i) the bias element sums over (its broadcast dims)
            const auto dims = bias_dims(p);
            for (std::int64_t bb = 0; bb < p.dims.B; ++bb)
                for (std::int64_t i = 0; i < p.dims.S_q; ++i)
                    if ((dims[0] == 1 || bb == b) && (dims[2] == 1 || i == idx[2]) && !ds_zero(p, bb, i, idx[3]))
                        return false;
            return true;
        }
        default: return false;
    }
}

ZeroByConstruction zero_by_construction_sweep(const Problem& p, Output out, const std::array<std::int64_t, 4>& dims) {
    ZeroByConstruction z;
    if (no_zero_by_construction(p) || (out != Output::dQ && out != Output::dK && out != Output::dMask)) return z;
    const std::int64_t rows = dims[0] * dims[2];
    bool any = false;
    if (out != Output::dMask) {  // dQ, dK: one flag per (b, row), the element rule at column 0
        z.flags.resize(static_cast<std::size_t>(rows));
        for (std::int64_t r = 0; r < rows; ++r)
            any |= (z.flags[static_cast<std::size_t>(r)] = zero_by_construction(p, out, {r / dims[2], 0, r % dims[2], 0}));
    } else {
        // dMask element (a, c, j) sums dS over the (b, i) its broadcast dims cover; dS_bij can be
        // nonzero only where lo_bi <= j < hi_bi with hi_bi - lo_bi > 1 (ds_zero): mark the union
        // of those key ranges per dMask row (a difference array over the keys), the rest is zero.
        const std::int64_t S_kv = dims[3];
        z.width = S_kv;
        z.flags.assign(static_cast<std::size_t>(rows * S_kv), 0);
        std::vector<std::int64_t> cover(static_cast<std::size_t>(S_kv + 1));
        for (std::int64_t r = 0; r < rows; ++r) {
            const std::int64_t a = r / dims[2], c = r % dims[2];
            std::fill(cover.begin(), cover.end(), 0);
            for (std::int64_t b = 0; b < p.dims.B; ++b) {
                if (dims[0] != 1 && b != a) continue;
                for (std::int64_t i = 0; i < p.dims.S_q; ++i) {
                    if (dims[2] != 1 && i != c) continue;
                    const auto [lo, hi] = visible_keys(p, b, i);
                    if (hi - lo <= 1) continue;
                    ++cover[static_cast<std::size_t>(lo)];
                    --cover[static_cast<std::size_t>(hi)];
                }
            }
            std::int64_t depth = 0;
            for (std::int64_t j = 0; j < S_kv; ++j) {
                depth += cover[static_cast<std::size_t>(j)];
                any |= (z.flags[static_cast<std::size_t>(r * S_kv + j)] = depth == 0);
            }
        }
    }
    if (!any) z.flags.clear();
    return z;
}

bool unchecked(const Problem& p, Output out, const std::array<std::int64_t, 4>& idx, const TensorGeom* t,
        const Conventions& conv) {
    if (t && !t->present(idx[0], idx[2])) return true;
    switch (out) {
        case Output::O:
        case Output::stats: return conv.padded_rows_unspecified && idx[2] >= valid_q(p, idx[0]);
        case Output::dQ: return conv.padded_grad_rows_unspecified && idx[2] >= valid_q(p, idx[0]);
        case Output::dK:
        case Output::dV: return conv.padded_grad_rows_unspecified && idx[2] >= valid_kv(p, idx[0]);
        case Output::dMask:
        case Output::amax: return false;
    }
    return false;
}

const std::vector<std::int64_t>* OutputRule::sampled() const {
    if (!sample) return nullptr;
    const bool keys = output == Output::dK || output == Output::dV || output == Output::dMask;
    const std::vector<std::int64_t>& at = keys ? sample->kv : sample->q;
    const std::int64_t n = keys ? p.dims.S_kv : p.dims.S_q;
    return output == Output::amax || static_cast<std::int64_t>(at.size()) >= n ? nullptr : &at;
}

OutputRule output_rule(const Problem& p, Output out, const Conventions& conv, const TensorGeom* geom) {
    OutputRule r{p, out, conv, geom, tolerance(p.dt, out)};
    // fp8 outputs hold codes x descale: the absolute term in values, and the saturation (cuDNN's
    // conversion is satfinite, core/dtype.hpp): a reference value past the largest code x descale
    // is expected as that, and the check is then MISTRUSTED (the descale is too small to tell).
    r.descale = geom ? geom->descale : 1.f;
    r.tol.tiny *= r.descale;
    r.limit = max_finite(p.dt) * r.descale;
    if (geom && is_fp8(p.dt) && geom->type == elem_type(p.dt)) r.saturate = overflow_threshold(p.dt) * r.descale;
    return r;
}

std::vector<std::uint8_t> row_kinds(const OutputRule& rule, const std::array<std::int64_t, 4>& dims) {
    const std::int64_t rows = dims[0] * dims[2];
    std::vector<std::uint8_t> kinds(static_cast<std::size_t>(rows));
    // A sampled rule's rows in the sample's dims (fewer than the output's) stand for the sampled ones.
    const std::vector<std::int64_t>* at = rule.output == Output::dMask ? nullptr : rule.sampled();
    if (at && static_cast<std::int64_t>(at->size()) != dims[2]) at = nullptr;
    // key_never_visible is a binary search over the queries: parallel for long key lists.
#pragma omp parallel for schedule(static) if (rows >= 4096)
    for (std::int64_t r = 0; r < rows; ++r) {
        const std::int64_t c = r % dims[2];
        const std::array<std::int64_t, 4> idx{r / dims[2], 0, at ? (*at)[static_cast<std::size_t>(c)] : c, 0};
        kinds[static_cast<std::size_t>(r)] = static_cast<std::uint8_t>(
                (structural(rule.p, rule.output, idx) ? kRowStructural : 0) |
                (unchecked(rule.p, rule.output, idx, rule.geom, rule.conv) ? kRowUnchecked : 0));
    }
    return kinds;
}

namespace {

/// What one block of rows of one head contributes to an OutputCheck (flat element indices);
/// blocks are merged in flat order, so "first" and "worst" mean what one sequential pass gives.
struct Partial {
    double worst = -1;        ///< largest |err| / bound (-1: no element compared)
    std::size_t worst_at = 0; ///< the first element with it
    std::int64_t nonfinite = 0, ref_nonfinite = 0, mag_nonfinite = 0, saturated = 0, masked_bad = 0;
    std::size_t first_nonfinite = 0, first_mag_nonfinite = 0, first_masked_bad = 0;
    std::int64_t unchecked = 0, structural = 0;
    std::int64_t counted = 0, ref_zeros = 0, got_zeros = 0;  ///< zero trust over the compared elements
    HeadSquares sq;

    void merge(const Partial& b) {
        if (b.worst > worst) {
            worst = b.worst;
            worst_at = b.worst_at;
        }
        if (nonfinite == 0 && b.nonfinite > 0) first_nonfinite = b.first_nonfinite;
        if (masked_bad == 0 && b.masked_bad > 0) first_masked_bad = b.first_masked_bad;
        nonfinite += b.nonfinite;
        masked_bad += b.masked_bad;
        ref_nonfinite += b.ref_nonfinite;
        if (mag_nonfinite == 0 && b.mag_nonfinite > 0) first_mag_nonfinite = b.first_mag_nonfinite;
        mag_nonfinite += b.mag_nonfinite;
        saturated += b.saturated;
        unchecked += b.unchecked;
        structural += b.structural;
        counted += b.counted;
        ref_zeros += b.ref_zeros;
        got_zeros += b.got_zeros;
        sq.got += b.sq.got;
        sq.ref += b.sq.ref;
        sq.mag += b.sq.mag;
    }
};

/// The one pass over an output: its rule's constants and the three arrays (same dims).
struct Scan {
    const float *got, *ref, *mag;
    std::int64_t D;
    ElementBound eb;           ///< the bound c (u_eff (M + floor) + tiny)
    double saturate, limit;    ///< OutputRule
    float masked_value;        ///< what a structural element must hold: 0, or the stats convention

    double bound(float m) const { return eb.at(m); }
    /// |err| / bound; a zero bound takes only a zero error, and NaN never looks like a pass.
    static double ratio(double err, double bound) {
        const double quotient = err / bound;  // unconditional, so that a loop of these vectorises
        const double q = bound > 0 ? quotient : (err > 0 ? INFINITY : 0.0);
        return q != q ? INFINITY : q;
    }

    /// Compared rows (the n elements from `off`, whole rows of one head) whose values are all
    /// finite and unsaturated, vectorised: false (nothing changed) when they are not such rows,
    /// for rows_exact to take. `ratios` holds n doubles.
    SDPA_ISA_CLONES bool rows_fast(std::size_t off, std::int64_t n, double* ratios, Partial& q) const {
        const float *g = got + off, *e = ref + off, *m = mag + off;
        const float max = std::numeric_limits<float>::max();
        int odd = 0;
        std::int64_t gz = 0, ez = 0;
        double g2 = 0, e2 = 0, m2 = 0;
#pragma omp simd reduction(| : odd) reduction(+ : gz, ez, g2, e2, m2)
        for (std::int64_t d = 0; d < n; ++d) {
            const float gv = g[d], ev = e[d], mv = m[d];
            // NaN fails every comparison: a non-finite value, or a reference value to saturate, is odd.
            odd |= static_cast<int>(!(std::fabs(gv) <= max) | !(std::fabs(mv) <= max) |
                    !(std::fabs(static_cast<double>(ev)) < saturate));
            ratios[d] = ratio(std::fabs(static_cast<double>(gv) - static_cast<double>(ev)), bound(mv));
            gz += gv == 0.f;
            ez += ev == 0.f;
            g2 += static_cast<double>(gv) * gv;
            e2 += static_cast<double>(ev) * ev;
            m2 += static_cast<double>(mv) * mv;
        }
        if (odd) return false;
        double best = -1;
        std::int64_t at = 0;
        for (std::int64_t d = 0; d < n; ++d)
            if (ratios[d] > best) {
                best = ratios[d];
                at = d;
            }
        if (best > q.worst) {
            q.worst = best;
            q.worst_at = off + static_cast<std::size_t>(at);
        }
        q.counted += n;
        q.got_zeros += gz;
        q.ref_zeros += ez;
        q.sq.got += g2;
        q.sq.ref += e2;
        q.sq.mag += m2;
        return true;
    }

    /// Compared rows element by element: non-finite values counted (the first one kept), a
    /// reference value past the fp8 range taken as the saturated one, the bound otherwise.
    void rows_exact(std::size_t off, std::int64_t n, Partial& q) const {
        for (std::size_t i = off; i < off + static_cast<std::size_t>(n); ++i) {
            const float g = got[i], m = mag[i];
            float e = ref[i];
            ++q.counted;
            q.got_zeros += g == 0.f;
            q.ref_zeros += e == 0.f;
            q.sq.got += static_cast<double>(g) * g;
            q.sq.ref += static_cast<double>(e) * e;
            q.sq.mag += static_cast<double>(m) * m;
            if (!std::isfinite(e)) {
                ++q.ref_nonfinite;
                continue;
            }
            if (!std::isfinite(m)) {  // the bound there is not a number: no error would exceed it
                if (q.mag_nonfinite++ == 0) q.first_mag_nonfinite = i;
                continue;
            }
            if (!std::isfinite(g)) {
                if (q.nonfinite++ == 0) q.first_nonfinite = i;
                continue;
            }
            if (std::fabs(e) >= saturate) {
                e = static_cast<float>(std::copysign(limit, e));
                ++q.saturated;
            }
            const double r = ratio(std::fabs(static_cast<double>(g) - e), bound(m));
            if (r > q.worst) {
                q.worst = r;
                q.worst_at = i;
            }
        }
    }

    /// A row the mask hides: every element exactly masked_value.
    void row_structural(std::size_t off, Partial& q) const {
        for (std::size_t i = off; i < off + static_cast<std::size_t>(D); ++i) {
            const float g = got[i];
            if (!(g == masked_value) && q.masked_bad++ == 0) q.first_masked_bad = i;
            q.sq.got += static_cast<double>(g) * g;
            q.sq.ref += static_cast<double>(ref[i]) * ref[i];
            q.sq.mag += static_cast<double>(mag[i]) * mag[i];
        }
        q.structural += D;
    }

    /// A row that is not checked: it enters the head norms with the reference's values.
    void row_unchecked(std::size_t off, Partial& q) const {
        for (std::size_t i = off; i < off + static_cast<std::size_t>(D); ++i) {
            const double e2 = static_cast<double>(ref[i]) * ref[i];
            q.sq.got += e2;
            q.sq.ref += e2;
            q.sq.mag += static_cast<double>(mag[i]) * mag[i];
        }
        q.unchecked += D;
    }
};

/// Elements per block of the pass (whole rows of one head): fixed, so the sums of squares are
/// added in the same order for any thread count.
constexpr std::int64_t kBlockElements = 1 << 13;
/// Outputs smaller than this are compared on one thread.
constexpr std::int64_t kParallelElements = 1 << 16;

/// The largest finite magnitude (the bound's floor is 1/1024 of it).
double max_finite_mag(const Tensor& mag) {
    const float* m = mag.data.data();
    const auto n = static_cast<std::int64_t>(mag.size());
    float mx = 0.f;
#pragma omp parallel for simd reduction(max : mx) schedule(static) if (n >= kParallelElements)
    for (std::int64_t i = 0; i < n; ++i)
        if (std::fabs(m[i]) <= std::numeric_limits<float>::max()) mx = std::max(mx, m[i]);
    return mx;
}

/// Zeros of the reference outside the structural and unchecked rows and the elements zero by
/// construction, as a fraction: what zero trust judges. For a check that fails before the pass
/// (guard bands, gaps, shape).
double reference_zero_fraction(const Tensor& ref, const std::vector<std::uint8_t>& kinds, const ZeroByConstruction& z) {
    const auto& dims = ref.dims;
    const auto D = static_cast<std::size_t>(dims[3]);
    std::int64_t zeros = 0, counted = 0;
    for (std::int64_t bh = 0; bh < dims[0] * dims[1]; ++bh)
        for (std::int64_t c = 0; c < dims[2]; ++c) {
            const std::int64_t row = bh / dims[1] * dims[2] + c;
            if (kinds[static_cast<std::size_t>(row)]) continue;
            const float* e = &ref.data[static_cast<std::size_t>(bh * dims[2] + c) * D];
            for (std::size_t j = 0; j < D; ++j) {
                if (z.any() && z.at(row, static_cast<std::int64_t>(j))) continue;
                ++counted;
                zeros += e[j] == 0.f;
            }
        }
    return counted > 0 ? static_cast<double>(zeros) / counted : 0.0;
}

/// Takes the elements zero by construction of the compared rows out of the pass's zero-trust
/// counts (they are held to the bound, which the pass did, but say nothing about trust); returns
/// how many there were. Runs only for outputs that have such elements.
std::int64_t exclude_zero_by_construction(Partial& t, const ZeroByConstruction& z, const Tensor& got, const Tensor& ref,
        const std::vector<std::uint8_t>& kinds) {
    const auto& dims = ref.dims;
    const std::int64_t D = dims[3];
    std::int64_t n = 0;
    for (std::int64_t bh = 0; bh < dims[0] * dims[1]; ++bh)
        for (std::int64_t c = 0; c < dims[2]; ++c) {
            const std::int64_t row = bh / dims[1] * dims[2] + c;
            if (kinds[static_cast<std::size_t>(row)]) continue;
            const auto off = static_cast<std::size_t>((bh * dims[2] + c) * D);
            for (std::int64_t j = 0; j < D; ++j) {
                if (!z.at(row, j)) continue;
                ++n;
                t.ref_zeros -= ref.data[off + static_cast<std::size_t>(j)] == 0.f;
                t.got_zeros -= got.data[off + static_cast<std::size_t>(j)] == 0.f;
            }
        }
    t.counted -= n;
    return n;
}

/// The failure of a buffer that the guard bands, the stride gaps or the shape already condemn,
/// before any value is compared; nullopt when there is none.
std::optional<std::pair<CheckFailure, std::string>> buffer_failure(Output out, const Tensor& got, const Tensor& ref,
        const OutputIntegrity& integrity) {
    if (integrity.touched_before > 0 || integrity.touched_after > 0)
        return std::pair{CheckFailure::guard, fmt::format("wrote outside {}: {} guard byte(s) before and {} after the "
                "buffer changed", out, integrity.touched_before, integrity.touched_after)};
    if (integrity.gap_written > 0)
        return std::pair{CheckFailure::stride_gap, fmt::format("wrote into the stride gap of {} at {}: {} element(s) "
                "between its strided rows changed", out, integrity.first_gap_where, integrity.gap_written)};
    if (got.dims != ref.dims || got.size() != ref.size())
        return std::pair{CheckFailure::shape, fmt::format("{} has shape [{}] but the reference has [{}]", out,
                fmt::join(got.dims, ","), fmt::join(ref.dims, ","))};
    return std::nullopt;
}

/// The pass: every block of rows of every head, in parallel, merged in flat order; the per-head
/// sums of squares into `heads` (dims[0] x dims[1] entries).
Partial scan_output(const Scan& s, const std::array<std::int64_t, 4>& dims, const std::vector<std::uint8_t>& kinds,
        std::vector<HeadSquares>& heads) {
    const std::int64_t H = dims[1], S = dims[2], D = dims[3], nheads = dims[0] * H;
    const std::int64_t rows_per_block = std::max<std::int64_t>(1, kBlockElements / std::max<std::int64_t>(D, 1));
    const std::int64_t blocks = (S + rows_per_block - 1) / rows_per_block;
    std::vector<Partial> parts(static_cast<std::size_t>(nheads * blocks));
#pragma omp parallel if (nheads * S * D >= kParallelElements)
    {
        std::vector<double> ratios(static_cast<std::size_t>(rows_per_block * D));
#pragma omp for schedule(static)
        for (std::int64_t item = 0; item < nheads * blocks; ++item) {
            const std::int64_t bh = item / blocks, c0 = item % blocks * rows_per_block;
            const std::int64_t c1 = std::min(S, c0 + rows_per_block);
            const std::uint8_t* kind = &kinds[static_cast<std::size_t>(bh / H * S)];  // this batch's rows
            Partial& q = parts[static_cast<std::size_t>(item)];
            for (std::int64_t c = c0; c < c1;) {
                const auto off = static_cast<std::size_t>((bh * S + c) * D);
                std::int64_t end = c + 1;
                if (kind[c] & kRowUnchecked) {
                    s.row_unchecked(off, q);
                } else if (kind[c] & kRowStructural) {
                    s.row_structural(off, q);
                } else {  // a run of compared rows, contiguous in memory: one call for all of them
                    while (end < c1 && kind[end] == 0) ++end;
                    if (!s.rows_fast(off, (end - c) * D, ratios.data(), q)) s.rows_exact(off, (end - c) * D, q);
                }
                c = end;
            }
        }
    }
    Partial total;
    heads.assign(static_cast<std::size_t>(nheads), HeadSquares{});
    for (std::size_t item = 0; item < parts.size(); ++item) {
        total.merge(parts[item]);
        HeadSquares& h = heads[item / static_cast<std::size_t>(blocks)];
        h.got += parts[item].sq.got;
        h.ref += parts[item].sq.ref;
        h.mag += parts[item].sq.mag;
    }
    return total;
}

/// The pass's counts into r: non-finite values, magnitudes and references, saturated and
/// unchecked elements, the output's `elements` and the reference's zero fraction.
void take_counts(const Partial& t, std::int64_t elements, OutputCheck& r) {
    r.nonfinite = t.nonfinite;
    r.ref_nonfinite = t.ref_nonfinite;
    r.mag_nonfinite = t.mag_nonfinite;
    r.saturated = t.saturated;
    r.unchecked = t.unchecked;
    r.elements = elements;
    r.zero_fraction = t.counted > 0 ? static_cast<double>(t.ref_zeros) / t.counted : 0.0;
}

/// What an OutputCheck says about one element: its index, got, expected (as the pass compared
/// it: an fp8 reference past the range saturated), err, bound and magnitude.
struct WorstElement {
    const OutputRule& rule;
    const Tensor& got;
    const RefOutput& ref;
    const Scan& s;

    /// Makes flat element i r's located element.
    void set(OutputCheck& r, std::size_t i) const {
        const Tensor& e = ref.value;
        r.worst_index = e.index(i);
        r.got = got.data[i];
        r.expected = std::fabs(e.data[i]) >= rule.saturate ? static_cast<float>(std::copysign(rule.limit, e.data[i]))
                                                           : e.data[i];
        r.err = std::fabs(static_cast<double>(r.got) - r.expected);
        r.bound = s.bound(ref.mag.data[i]);
        r.bound_mag = ref.mag.data[i];
    }
};

/// The pass's verdict into r, the first that applies: FAILED for unwritten elements, a non-finite
/// reference, a non-finite magnitude, non-finite values, masked rows that are not the convention,
/// an error past the bound (each with its reason, and the element where there is one); else
/// MISTRUSTED when nothing was checked, when fp8 values saturate, or for zero trust of the reference.
void judge(const Partial& t, const OutputIntegrity& integrity, const WorstElement& worst, OutputCheck& r) {
    const Output out = r.output;
    const OutputRule& rule = worst.rule;
    if (integrity.unwritten > 0 && r.ref_nonfinite == 0) {
        r.pass = false;
        r.failure = CheckFailure::unwritten;
        r.reason = fmt::format("{} element(s) of {} not written (still the NaN prefill)", integrity.unwritten, out);
        r.located = false;
    } else if (r.ref_nonfinite > 0) {
        r.pass = false;
        r.failure = CheckFailure::ref_nonfinite;
        r.reason = fmt::format("the reference has {} non-finite value(s): the inputs overflow f32", r.ref_nonfinite);
    } else if (r.mag_nonfinite > 0) {
        r.pass = false;
        worst.set(r, t.first_mag_nonfinite);
        r.failure = CheckFailure::mag_nonfinite;
        r.reason = fmt::format("the reference's magnitude is not finite at {} element(s) where the reference is: the "
                               "bound is not defined there (the inputs overflow f32 in the magnitudes)", r.mag_nonfinite);
    } else if (r.nonfinite > 0) {
        r.pass = false;
        worst.set(r, t.first_nonfinite);
        r.failure = CheckFailure::nonfinite;
        r.reason = fmt::format("{} non-finite value(s) where the reference is finite", r.nonfinite);
    } else if (t.masked_bad > 0) {
        r.pass = false;
        worst.set(r, t.first_masked_bad);
        r.failure = CheckFailure::masked_rows;
        r.reason = out == Output::stats
                ? fmt::format("{} fully masked row(s) whose stats are not the backend's convention {}",
                          t.masked_bad, rule.conv.masked_row_stats)
                : fmt::format("{} element(s) of fully masked rows are not exactly 0", t.masked_bad);
    } else if (t.worst > 1.0) {
        r.pass = false;
        r.failure = CheckFailure::bound;
        r.reason = "error exceeds the bound";
    } else if (r.unchecked == static_cast<std::int64_t>(worst.got.size())) {
        r.mistrusted = true;
        r.mistrust = fmt::format("{}: nothing checked: every row is absent (ragged) or left unspecified", out);
    } else if (r.saturated > 0) {
        r.mistrusted = true;
        r.mistrust = fmt::format("{}: {} reference value(s) past the {} range at descale {} (largest {:.6g}), expected "
                                 "saturated (a larger --fp8-descale={}:... tells more)", out, r.saturated, rule.p.dt,
                rule.descale, rule.limit, out);
    } else if (r.zero_fraction > kZeroTrust) {
        r.mistrusted = true;
    }
}

}  // namespace

ElementBound element_bound(const OutputRule& rule, const Tensor& mag, std::int64_t reduction_length) {
    return {rule.tol.c, effective_u(rule.tol, reduction_length), max_finite_mag(mag) / 1024.0, rule.tol.tiny};
}

std::int64_t reduction_length(const Problem& p, Output out) {
    const Dims& d = p.dims;
    const std::int64_t group = d.H_q / d.H_kv;
    switch (out) {
        case Output::O:
        case Output::dQ: return d.S_kv;
        case Output::dK:
        case Output::dV: return d.S_q * group;
        case Output::dMask: {
            const auto md = bias_dims(p);
            return d.D_v + (md[0] == 1 ? d.B : 1) * (md[1] == 1 ? d.H_q : 1) * (md[2] == 1 ? d.S_q : 1);
        }
        case Output::stats:
        case Output::amax: return 0;
    }
    return 0;
}

namespace {

/// check_output on `got` and `ref` of the same dims with the rows' kinds (row_kinds) and the
/// elements zero by construction (`zbc`, in those dims) given.
OutputCheck check_rows(const OutputRule& rule, const Tensor& got, const RefOutput& ref, const OutputIntegrity& integrity,
        const std::vector<std::uint8_t>& kinds, const ZeroByConstruction& zbc) {
    const Output out = rule.output;
    const Tensor& e = ref.value;
    OutputCheck r;
    r.output = out;
    if (auto f = buffer_failure(out, got, e, integrity)) {
        r.zero_fraction = reference_zero_fraction(e, kinds, zbc);  // set on every path, the early failures too
        r.pass = false;
        r.failure = f->first;
        r.reason = std::move(f->second);
        r.located = false;
        return r;
    }
    const ElementBound eb = element_bound(rule, ref.mag, ref.reduction_length);
    const Scan s{got.data.data(), e.data.data(), ref.mag.data.data(), e.dims[3], eb, rule.saturate, rule.limit,
        out == Output::stats ? rule.conv.masked_row_stats : 0.f};
    std::vector<HeadSquares> heads;
    Partial t = scan_output(s, e.dims, kinds, heads);
    if (zbc.any()) r.zero_by_construction = exclude_zero_by_construction(t, zbc, got, e, kinds);
    take_counts(t, static_cast<std::int64_t>(got.size()), r);
    const WorstElement worst{rule, got, ref, s};
    r.bound_c = eb.c;
    r.bound_u_eff = eb.u_eff;
    r.bound_floor = eb.floor;
    r.bound_tiny = eb.tiny;
    if (t.worst >= 0) {
        r.worst_ratio = t.worst;
        worst.set(r, t.worst_at);
    }
    judge(t, integrity, worst, r);
    if (out == Output::stats) check_stats_sums(rule, got, e, ref.mag, r);
    else if (r.nonfinite == 0 && r.ref_nonfinite == 0 && r.mag_nonfinite == 0 && r.saturated == 0)
        check_head_norms(heads, e.dims[1], e.dims[2] * e.dims[3], eb.c, eb.u_eff, eb.tiny, r);
    // Zero trust against the structure: the kernel's zeros among the compared elements (the
    // structural ones apart) beyond kZeroTrust make a pass MISTRUSTED; a kernel that writes zeros
    // where the reference is tiny can pass the bound.
    r.structural_zeros = t.structural;
    r.got_zero_fraction = t.counted > 0 ? static_cast<double>(t.got_zeros) / t.counted : 0.0;
    if (r.pass && r.got_zero_fraction > kZeroTrust) r.mistrusted = true;
    return r;
}

/// What the rows of `got` (the whole output) outside a sample say without a reference: indices `at`
/// of dimension `dim` are the sample's; `kinds` the output's row kinds (row_kinds at got's dims).
struct Unsampled {
    std::int64_t nonfinite = 0, masked_bad = 0;  ///< non-finite values; structural rows' elements not masked_value
    std::int64_t first_nonfinite = -1, first_masked_bad = -1;  ///< flat indices (-1: none)
    /// The elements zero trust counts (not structural, unchecked or zero by construction) and the
    /// zeros among them.
    std::int64_t counted = 0, zeros = 0;
};

/// The rows outside the sample: unchecked rows skipped, structural rows held to `masked_value`
/// exactly (as check_rows holds them), every other element to being finite; the zeros of the
/// elements `z` (zero by construction, at got's dims) leaves to zero trust counted.
Unsampled scan_unsampled(const Tensor& got, int dim, const std::vector<std::int64_t>& at,
        const std::vector<std::uint8_t>& kinds, const ZeroByConstruction& z, float masked_value) {
    std::vector<std::uint8_t> in(static_cast<std::size_t>(got.dims[static_cast<std::size_t>(dim)]), 0);
    for (const std::int64_t k : at) in[static_cast<std::size_t>(k)] = 1;
    const std::int64_t D = got.dims[3], H = got.dims[1], S = got.dims[2], rows = got.dims[0] * H * S;
    Unsampled u;
    const auto first = [](std::int64_t& f, std::int64_t i) { f = f < 0 ? i : std::min(f, i); };
    std::int64_t counted = 0, zeros = 0;
#pragma omp parallel for schedule(static) reduction(+ : counted, zeros) if (rows * D >= kParallelElements)
    for (std::int64_t row = 0; row < rows; ++row) {
        const std::int64_t c = row % S;
        if (dim == 2 && in[static_cast<std::size_t>(c)]) continue;  // a sampled row: compared
        const std::int64_t krow = row / (H * S) * S + c;
        const std::uint8_t kind = kinds[static_cast<std::size_t>(krow)];
        if (kind & kRowUnchecked) continue;
        const float* x = &got.data[static_cast<std::size_t>(row * D)];
        Unsampled mine;
        for (std::int64_t j = 0; j < D; ++j) {
            if (dim == 3 && in[static_cast<std::size_t>(j)]) continue;
            if (kind & kRowStructural) {
                if (std::bit_cast<std::uint32_t>(x[j]) != std::bit_cast<std::uint32_t>(masked_value) && !(x[j] == masked_value)) {
                    ++mine.masked_bad;
                    first(mine.first_masked_bad, row * D + j);
                }
            } else if (!std::isfinite(x[j])) {
                ++mine.nonfinite;
                first(mine.first_nonfinite, row * D + j);
            } else if (!(z.any() && z.at(krow, j))) {
                ++mine.counted;
                mine.zeros += x[j] == 0.f;
            }
        }
        counted += mine.counted;
        zeros += mine.zeros;
        if (mine.nonfinite + mine.masked_bad == 0) continue;
#pragma omp critical(sdpa_unsampled)
        {
            u.nonfinite += mine.nonfinite;
            u.masked_bad += mine.masked_bad;
            if (mine.first_nonfinite >= 0) first(u.first_nonfinite, mine.first_nonfinite);
            if (mine.first_masked_bad >= 0) first(u.first_masked_bad, mine.first_masked_bad);
        }
    }
    u.counted = counted;
    u.zeros = zeros;
    return u;
}

/// True when every element of an output with dims `dims` is in a structural or unchecked row
/// (`kinds`) or zero by construction (`z`, for those dims): a full check of it compares only zeros.
bool all_zero_by_structure(const std::vector<std::uint8_t>& kinds, const ZeroByConstruction& z,
        const std::array<std::int64_t, 4>& dims) {
    for (std::int64_t r = 0; r < dims[0] * dims[2]; ++r) {
        if (kinds[static_cast<std::size_t>(r)]) continue;
        if (!z.any()) return false;
        for (std::int64_t j = 0; j < z.width; ++j)
            if (!z.at(r, j)) return false;
    }
    return true;
}

/// check_output of a sampled check: the reference holds the sample's rows (dMask: columns) only;
/// `got` is compared there, its worst element named by its own index, and the rest of it scanned
/// for non-finite values.
OutputCheck check_sampled(const OutputRule& rule, const Tensor& got, const RefOutput& ref,
        const OutputIntegrity& integrity, const std::vector<std::int64_t>& at) {
    const int dim = rule.output == Output::dMask ? 3 : 2;
    const auto k = static_cast<std::size_t>(dim);
    const auto n = static_cast<std::int64_t>(at.size());
    std::array<std::int64_t, 4> full = ref.value.dims;
    full[k] = dim == 3 ? rule.p.dims.S_kv : got.dims[k];
    if (got.dims != full || ref.value.dims[k] != n)  // the shape check names it
        return check_rows(rule, got, ref, integrity, row_kinds(rule, ref.value.dims), {});
    // The elements zero by construction at the sample's rows (dQ, dK: one flag per row) or columns.
    ZeroByConstruction z = zero_by_construction_sweep(rule.p, rule.output, full), zs;
    if (z.any()) {
        zs.width = dim == 3 ? n : 1;
        const std::int64_t rows = full[0] * (dim == 3 ? full[2] : n);
        for (std::int64_t r = 0; r < rows; ++r)
            for (std::int64_t c = 0; c < zs.width; ++c)
                zs.flags.push_back(dim == 3 ? z.at(r, at[static_cast<std::size_t>(c)])
                                            : z.at(r / n * full[2] + at[static_cast<std::size_t>(r % n)], 0));
    }
    OutputCheck r = check_rows(rule, gather(got, dim, at), ref, integrity, row_kinds(rule, ref.value.dims), zs);
    r.worst_index[k] = at[static_cast<std::size_t>(r.worst_index[k])];
    r.sampled = n;
    r.sample_of = full[k];
    const std::vector<std::uint8_t> kinds = row_kinds(rule, got.dims);
    if (r.pass && !r.mistrusted && r.elements == r.structural_zeros + r.unchecked + r.zero_by_construction &&
            !all_zero_by_structure(kinds, z, full)) {
        r.mistrusted = true;  // every compared element is 0 by the mask's structure, and the output has others
        r.mistrust = fmt::format("{}: nothing checked: the sampled {} hold only elements the mask makes 0 (a larger "
                "--check=sample:N tells more)", rule.output, dim == 3 ? "columns" : "rows");
    }
    const float masked = rule.output == Output::stats ? rule.conv.masked_row_stats : 0.f;
    const Unsampled u = scan_unsampled(got, dim, at, kinds, z, masked);
    r.unsampled_nonfinite = u.nonfinite;
    if (r.pass && r.mistrust.empty() && u.counted > 0) {
        // Zero trust over every element: the sampled rows' reference and the output elsewhere (a
        // pass makes them the same to the bound), as a full check counts it; the sampled rows'
        // own fraction swings past kZeroTrust on fills near it.
        const auto c = static_cast<double>(r.elements - r.structural_zeros - r.unchecked - r.zero_by_construction);
        const auto all = c + static_cast<double>(u.counted);
        r.zero_fraction = (r.zero_fraction * c + static_cast<double>(u.zeros)) / all;
        r.got_zero_fraction = (r.got_zero_fraction * c + static_cast<double>(u.zeros)) / all;
        r.mistrusted = r.zero_fraction > kZeroTrust || r.got_zero_fraction > kZeroTrust;
    }
    if (!r.pass || u.nonfinite + u.masked_bad == 0) return r;
    const bool nonfinite = u.nonfinite > 0;
    const auto i = static_cast<std::size_t>(nonfinite ? u.first_nonfinite : u.first_masked_bad);
    const auto idx = got.index(i);
    r.pass = false;
    r.mistrusted = false;
    r.failure = nonfinite ? CheckFailure::nonfinite : CheckFailure::masked_rows;
    r.located = false;
    r.reason = fmt::format("{} {} outside the sampled rows (the whole output is scanned), the first at (b,h,i,j) = "
            "({},{},{},{}): {}", nonfinite ? u.nonfinite : u.masked_bad,
            nonfinite ? "non-finite value(s)" : fmt::format("element(s) of fully masked rows not {}", masked), idx[0],
            idx[1], idx[2], idx[3], got.data[i]);
    return r;
}

}  // namespace

OutputCheck check_output(const OutputRule& rule, const Tensor& got, const RefOutput& ref,
        const OutputIntegrity& integrity) {
    if (const auto* at = rule.sampled()) return check_sampled(rule, got, ref, integrity, *at);
    return check_rows(rule, got, ref, integrity, row_kinds(rule, ref.value.dims),
            zero_by_construction_sweep(rule.p, rule.output, ref.value.dims));
}

std::optional<std::string> observed_masked_rows(const Problem& p, const SdpaOutputs& got) {
    std::map<std::uint32_t, std::int64_t> stats;  // value bits -> rows (spelled once, at the end)
    std::int64_t rows = 0;
    const Dims& d = p.dims;
    const Geometry geo = geometry(p);
    // What output `out` holds in the rows past the valid lengths (valid_q for O and dQ, valid_kv for
    // dK and dV), rows a ragged output does not store left out: NaN prefill, 0, anything else.
    struct Past {
        std::int64_t nan = 0, zero = 0, other = 0;
    };
    auto past = [&](Output out) {
        Past c;
        const Tensor& t = got.of(out);
        const TensorGeom* g = geo.find(role_of(out));  // a ragged output stores no row past the valid length
        if (t.empty() || !g) return c;
        const bool q_rows = out == Output::O || out == Output::dQ;
        for (std::int64_t b = 0; b < t.dims[0]; ++b)
            for (std::int64_t h = 0; h < t.dims[1]; ++h)
                for (std::int64_t i = q_rows ? valid_q(p, b) : valid_kv(p, b); i < t.dims[2]; ++i) {
                    if (!g->present(b, i)) continue;
                    for (std::int64_t k = 0; k < t.dims[3]; ++k) {
                        const float x = t.at(b, h, i, k);
                        (std::isnan(x) ? c.nan : x == 0.f ? c.zero : c.other)++;
                    }
                }
        return c;
    };
    for (std::int64_t b = 0; b < d.B; ++b)
        for (std::int64_t i = 0; i < d.S_q; ++i) {
            if (!row_fully_masked(p, b, i)) continue;
            rows += d.H_q;
            if (!got.stats.empty())
                for (std::int64_t h = 0; h < d.H_q; ++h) ++stats[std::bit_cast<std::uint32_t>(got.stats.at(b, h, i, 0))];
        }
    std::string s = fmt::format("observed: {} fully masked (b,h,row)s", rows);
    if (!stats.empty()) {
        std::map<std::string, std::int64_t> spelled;  // NaNs of other bits spell alike
        for (const auto& [v, n] : stats) spelled[fmt::format("{}", std::bit_cast<float>(v))] += n;
        s += "; their stats:";
        for (const auto& [v, n] : spelled) s += fmt::format(" {} x{}", v, n);
    }
    bool padded = false;
    for (const Output out : {Output::O, Output::dQ, Output::dK, Output::dV}) {
        const Past c = past(out);
        if (c.nan + c.zero + c.other == 0) continue;
        padded = true;
        s += fmt::format("; {} past the valid {} lengths: {} unwritten (NaN prefill), {} zero, {} other", out,
                out == Output::O || out == Output::dQ ? "query" : "key", c.nan, c.zero, c.other);
    }
    if (rows == 0 && !padded) return std::nullopt;
    return s;
}

std::vector<OutputCheck> check_outputs(const Problem& p, const SdpaOutputs& got,
        const RefForward* fwd, const RefBackward* bwd, const Conventions& conv, const RowSample* sample) {
    const Geometry geo = geometry(p);
    std::vector<OutputCheck> checks;
    auto check = [&](Output o, const Tensor& ref, const Tensor& mag) {
        OutputRule rule = output_rule(p, o, conv, geo.find(role_of(o)));
        rule.sample = sample;
        checks.push_back(check_output(rule, got.of(o), {ref, mag, reduction_length(p, o)}, got.integrity_of(o)));
        if (sample && bwd && (o == Output::dK || o == Output::dV))
            check_column_sums(rule, got, *bwd, checks.back());
    };
    // An amax failure names its entry (Amax_S, ..., kAmaxFwd / kAmaxBwd order) before the reason.
    auto name_amax_entry = [&](auto names) {
        OutputCheck& c = checks.back();
        const auto k = static_cast<std::size_t>(c.worst_index[3]);
        if (!c.pass && c.located && k < names.size()) c.reason = fmt::format("Amax_{} {}", names[k], c.reason);
    };
    // The graph's own quantisations: P (Amax_S) and the scaled dS (Amax_dP) past their fp8 range
    // saturate inside the kernel (and the reference): MISTRUSTED, they tell little.
    auto intermediate_range = [&](float amax, Fp8Tensor t, std::string_view what) {
        OutputCheck& c = checks.back();
        const double limit = overflow_threshold(p.dt) * p.fp8.of(t);
        if (!c.pass || amax < limit) return;
        ++c.saturated;
        c.mistrusted = true;
        c.mistrust += fmt::format("{}amax: the largest {} {} is past the {} range at descale_{} {} (largest {:.6g}): it "
                "saturates (a larger --fp8-descale={}:... tells more)", c.mistrust.empty() ? "" : "; ", what, amax, p.dt,
                t, p.fp8.of(t), max_finite(p.dt) * p.fp8.of(t), t);
    };
    for (const Output o : geo.output_list()) {  // the direction's outputs, in report order
        switch (o) {
            case Output::O: check(o, fwd->O, fwd->M_O); break;
            case Output::stats: check(o, fwd->stats, fwd->M_stats); break;
            case Output::dQ: check(o, bwd->dQ, bwd->M_dQ); break;
            case Output::dK: check(o, bwd->dK, bwd->M_dK); break;
            case Output::dV: check(o, bwd->dV, bwd->M_dV); break;
            case Output::dMask: check(o, bwd->dMask, bwd->M_dMask); break;
            case Output::amax:
                if (sample) break;  // a maximum over every row: a sampled check has none (docs/trust.md)
                if (bwd) {
                    check(o, bwd->amax, bwd->M_amax);
                    name_amax_entry(kAmaxBwd);
                    intermediate_range(bwd->amax.data[3], Fp8Tensor::dP, "scaled dS (Amax_dP)");
                    intermediate_range(bwd->p_max, Fp8Tensor::S, "P");
                } else {
                    check(o, fwd->amax, fwd->M_amax);
                    name_amax_entry(kAmaxFwd);
                    intermediate_range(fwd->amax.data[0], Fp8Tensor::S, "P (Amax_S)");
                }
                break;
        }
    }
    return checks;
}

}  // namespace sdpa
