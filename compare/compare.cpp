#include "compare/compare.hpp"
#include "compare/extra_checks.hpp"

#include <algorithm>
#include <cmath>
#include <map>

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

namespace {

/// Zeros of the reference outside the structural and unchecked elements, as a fraction: what zero
/// trust judges, known before any check of the output runs.
double reference_zero_fraction(const Problem& p, Output out, const Tensor& ref, const TensorGeom* t,
        const Conventions& conv) {
    std::int64_t zeros = 0, counted = 0;
    for (std::size_t i = 0; i < ref.size(); ++i) {
        const auto idx = ref.index(i);
        if (structural(p, out, idx) || unchecked(p, out, idx, t, conv)) continue;
        ++counted;
        zeros += ref.data[i] == 0.f;
    }
    return counted > 0 ? static_cast<double>(zeros) / counted : 0.0;
}

}  // namespace

OutputCheck check_output(const Problem& p, Output out, const Tensor& got, const Tensor& ref,
        const Tensor& mag, std::int64_t reduction_length, const Conventions& conv,
        const OutputIntegrity& integrity, const TensorGeom* geom) {
    OutputCheck r;
    r.output = out;
    r.zero_fraction = reference_zero_fraction(p, out, ref, geom, conv);  // set on every path, the early failures too
    if (integrity.touched_before > 0 || integrity.touched_after > 0) {
        r.pass = false;
        r.failure = CheckFailure::guard;
        r.reason = fmt::format("wrote outside {}: {} guard byte(s) before and {} after the buffer changed", out,
                integrity.touched_before, integrity.touched_after);
        r.located = false;
        return r;
    }
    if (integrity.gap_written > 0) {
        r.pass = false;
        r.failure = CheckFailure::stride_gap;
        r.reason = fmt::format("wrote into the stride gap of {} at {}: {} element(s) between its strided rows "
                               "changed", out, integrity.first_gap_where, integrity.gap_written);
        r.located = false;
        return r;
    }
    if (got.dims != ref.dims || got.size() != ref.size()) {
        r.pass = false;
        r.failure = CheckFailure::shape;
        r.reason = fmt::format("{} has shape [{}] but the reference has [{}]", out,
                fmt::join(got.dims, ","), fmt::join(ref.dims, ","));
        r.located = false;
        return r;
    }
    Tolerance tol = tolerance(p.dt, out);
    const double u = effective_u(tol, reduction_length);
    // fp8 outputs hold codes x descale: the absolute term in values, and the saturation (cuDNN's
    // conversion is satfinite, core/dtype.hpp): a reference value past the largest code x descale
    // is expected as that, and the check is then MISTRUSTED (the descale is too small to tell).
    const float descale = geom ? geom->descale : 1.f;
    tol.tiny *= descale;
    const double limit = max_finite(p.dt) * descale;  // the largest value the output can hold
    const double saturate = geom && is_fp8(p.dt) && geom->type == elem_type(p.dt) ? overflow_threshold(p.dt) * descale : INFINITY;
    double max_mag = 0;
    for (float m : mag.data)
        if (std::isfinite(m)) max_mag = std::max(max_mag, static_cast<double>(m));
    const double floor = max_mag / 1024.0;
    // The bound of element i (compare/README.md "Bound"): c (u_eff (M_i + max(M) / 1024) + tiny).
    const auto bound_at = [&](std::size_t i) { return tol.c * (u * (static_cast<double>(mag.data[i]) + floor) + tol.tiny); };

    std::int64_t masked_nonzero = 0;
    std::size_t first_bad_masked = 0, first_nonfinite = 0;
    double worst = -1;
    std::size_t worst_i = 0;
    for (std::size_t i = 0; i < got.size(); ++i) {
        const float g = got.data[i];
        float e = ref.data[i];
        const auto idx = ref.index(i);
        if (unchecked(p, out, idx, geom, conv)) {
            ++r.unchecked;
            continue;
        }
        if (structural(p, out, idx)) {
            // Hidden rows: exact zeros for O/dQ/dK/dV; the backend's convention for stats.
            const bool ok = out == Output::stats ? g == conv.masked_row_stats : g == 0.f;
            if (!ok && masked_nonzero++ == 0) first_bad_masked = i;
            continue;
        }
        if (!std::isfinite(e)) {
            ++r.ref_nonfinite;
            continue;
        }
        if (!std::isfinite(g) && std::isfinite(e)) {
            if (r.nonfinite++ == 0) first_nonfinite = i;
            continue;
        }
        if (std::fabs(e) >= saturate) {
            e = static_cast<float>(std::copysign(limit, e));
            ++r.saturated;
        }
        const double err = std::fabs(static_cast<double>(g) - e);
        const double bound = bound_at(i);
        double ratio = bound > 0 ? err / bound : (err > 0 ? INFINITY : 0.0);
        if (std::isnan(ratio)) ratio = INFINITY;  // a NaN anywhere must never look like a pass
        if (ratio > worst) {
            worst = ratio;
            worst_i = i;
        }
    }
    auto set_worst = [&](std::size_t i) {
        r.worst_index = ref.index(i);
        r.got = got.data[i];
        r.expected = std::fabs(ref.data[i]) >= saturate ? static_cast<float>(std::copysign(limit, ref.data[i])) : ref.data[i];
        r.err = std::fabs(static_cast<double>(r.got) - r.expected);
        r.bound = bound_at(i);
    };
    if (worst >= 0) {
        r.worst_ratio = worst;
        set_worst(worst_i);
    }
    if (integrity.unwritten > 0 && r.ref_nonfinite == 0) {
        r.pass = false;
        r.failure = CheckFailure::unwritten;
        r.reason = fmt::format("{} element(s) of {} not written (still the NaN prefill)", integrity.unwritten, out);
        r.located = false;
    } else if (r.ref_nonfinite > 0) {
        r.pass = false;
        r.failure = CheckFailure::ref_nonfinite;
        r.reason = fmt::format("the reference has {} non-finite value(s): the inputs overflow f32", r.ref_nonfinite);
    } else if (r.nonfinite > 0) {
        r.pass = false;
        set_worst(first_nonfinite);
        r.failure = CheckFailure::nonfinite;
        r.reason = fmt::format("{} non-finite value(s) where the reference is finite", r.nonfinite);
    } else if (masked_nonzero > 0) {
        r.pass = false;
        set_worst(first_bad_masked);
        r.failure = CheckFailure::masked_rows;
        r.reason = out == Output::stats
                ? fmt::format("{} fully masked row(s) whose stats are not the backend's convention {}",
                          masked_nonzero, conv.masked_row_stats)
                : fmt::format("{} element(s) of fully masked rows are not exactly 0", masked_nonzero);
    } else if (worst > 1.0) {
        r.pass = false;
        r.failure = CheckFailure::bound;
        r.reason = "error exceeds the bound";
    } else if (r.unchecked == static_cast<std::int64_t>(got.size())) {
        r.mistrusted = true;
        r.mistrust = fmt::format("{}: nothing checked: every row is absent (ragged) or left unspecified", out);
    } else if (r.saturated > 0) {
        r.mistrusted = true;
        r.mistrust = fmt::format("{}: {} reference value(s) past the {} range at descale {} (largest {:.6g}), expected "
                                 "saturated (a larger --fp8-descale={}:... tells more)", out, r.saturated, p.dt,
                descale, limit, out);
    } else if (r.zero_fraction > kZeroTrust) {
        r.mistrusted = true;
    }
    if (out == Output::stats) check_stats_sums(p, got, ref, mag, r);
    else if (r.nonfinite == 0 && r.ref_nonfinite == 0 && r.saturated == 0) {
        if (r.unchecked == 0) {
            check_head_norms(got, ref, mag, tol.c, u, tol.tiny, r);
        } else {  // the norms of the checked elements: the unchecked ones take the reference's value
            Tensor g = got;
            for (std::size_t i = 0; i < g.size(); ++i)
                if (unchecked(p, out, g.index(i), geom, conv)) g.data[i] = ref.data[i];
            check_head_norms(g, ref, mag, tol.c, u, tol.tiny, r);
        }
    }
    check_zero_counts(p, out, got, r, geom, conv);
    return r;
}

std::optional<std::string> observed_masked_rows(const Problem& p, const SdpaOutputs& got) {
    std::map<std::string, std::int64_t> stats;  // value spelling -> rows
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
                for (std::int64_t h = 0; h < d.H_q; ++h) ++stats[fmt::format("{}", got.stats.at(b, h, i, 0))];
        }
    std::string s = fmt::format("observed: {} fully masked (b,h,row)s", rows);
    if (!stats.empty()) {
        s += "; their stats:";
        for (const auto& [v, n] : stats) s += fmt::format(" {} x{}", v, n);
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
        const RefForward* fwd, const RefBackward* bwd, const Conventions& conv) {
    const Dims& d = p.dims;
    const std::int64_t group = d.H_q / d.H_kv;
    const Geometry geo = geometry(p);
    std::vector<OutputCheck> checks;
    auto check = [&](Output o, const Tensor& ref, const Tensor& mag, std::int64_t reduction) {
        checks.push_back(check_output(p, o, got.of(o), ref, mag, reduction, conv, got.integrity_of(o), geo.find(role_of(o))));
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
    if (p.dir == Dir::bwd) {
        check(Output::dQ, bwd->dQ, bwd->M_dQ, d.S_kv);
        check(Output::dK, bwd->dK, bwd->M_dK, d.S_q * group);
        check(Output::dV, bwd->dV, bwd->M_dV, d.S_q * group);
        if (p.dmask) {
            // Each dMask element sums dS over the (b, h, i) the bias broadcasts over; each dS
            // carries the dP = dO V^T dot product of length D_v.
            const auto& md = bwd->dMask.dims;
            const std::int64_t summed = (md[0] == 1 ? d.B : 1) * (md[1] == 1 ? d.H_q : 1) * (md[2] == 1 ? d.S_q : 1);
            check(Output::dMask, bwd->dMask, bwd->M_dMask, d.D_v + summed);
        }
        if (is_fp8(p.dt)) {
            check(Output::amax, bwd->amax, bwd->M_amax, 0);
            name_amax_entry(kAmaxBwd);
            intermediate_range(bwd->amax.data[3], Fp8Tensor::dP, "scaled dS (Amax_dP)");
            intermediate_range(bwd->p_max, Fp8Tensor::S, "P");
        }
    } else {
        check(Output::O, fwd->O, fwd->M_O, d.S_kv);
        if (p.dir == Dir::fwd_t) check(Output::stats, fwd->stats, fwd->M_stats, 0);
        if (is_fp8(p.dt)) {
            check(Output::amax, fwd->amax, fwd->M_amax, 0);
            name_amax_entry(kAmaxFwd);
            intermediate_range(fwd->amax.data[0], Fp8Tensor::S, "P (Amax_S)");
        }
    }
    return checks;
}

}  // namespace sdpa
