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
    return conv.padded_rows_unspecified && (out == Output::O || out == Output::stats) && idx[2] >= valid_q(p, idx[0]);
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

ElementBound element_bound(const Problem& p, Output out, const Tensor& mag, std::int64_t reduction_length,
        float descale) {
    const Tolerance tol = tolerance(p.dt, out);
    double max_mag = 0;
    for (float m : mag.data)
        if (std::isfinite(m)) max_mag = std::max(max_mag, static_cast<double>(m));
    return {tol.c, effective_u(tol, reduction_length), max_mag / 1024.0, tol.tiny * descale};
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
    // fp8 outputs hold codes x descale: the absolute term in values, and the saturation (cuDNN's
    // conversion is satfinite, core/dtype.hpp): a reference value past the largest code x descale
    // is expected as that, and the check is then MISTRUSTED (the descale is too small to tell).
    const float descale = geom ? geom->descale : 1.f;
    const ElementBound eb = element_bound(p, out, mag, reduction_length, descale);
    const double limit = max_finite(p.dt) * descale;  // the largest value the output can hold
    const double saturate = geom && is_fp8(p.dt) && geom->type == elem_type(p.dt) ? overflow_threshold(p.dt) * descale : INFINITY;
    const auto bound_at = [&](std::size_t i) { return eb.at(mag.data[i]); };

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
            check_head_norms(got, ref, mag, eb.c, eb.u_eff, eb.tiny, r);
        } else {  // the norms of the checked elements: the unchecked ones take the reference's value
            Tensor g = got;
            for (std::size_t i = 0; i < g.size(); ++i)
                if (unchecked(p, out, g.index(i), geom, conv)) g.data[i] = ref.data[i];
            check_head_norms(g, ref, mag, eb.c, eb.u_eff, eb.tiny, r);
        }
    }
    check_zero_counts(p, out, got, r, geom, conv);
    return r;
}

std::optional<std::string> observed_masked_rows(const Problem& p, const SdpaOutputs& got) {
    std::map<std::string, std::int64_t> stats;  // value spelling -> rows
    std::int64_t rows = 0, o_nan = 0, o_zero = 0, o_other = 0;
    const Dims& d = p.dims;
    const Geometry geo = geometry(p);
    const TensorGeom* o = geo.find(Role::O);  // a ragged O stores no row past the valid length
    for (std::int64_t b = 0; b < d.B; ++b)
        for (std::int64_t i = 0; i < d.S_q; ++i) {
            if (!row_fully_masked(p, b, i)) continue;
            for (std::int64_t h = 0; h < d.H_q; ++h) {
                ++rows;
                if (!got.stats.empty()) ++stats[fmt::format("{}", got.stats.at(b, h, i, 0))];
                if (got.O.empty() || i < valid_q(p, b) || (o && !o->present(b, i))) continue;
                for (std::int64_t k = 0; k < d.D_v; ++k) {
                    const float x = got.O.at(b, h, i, k);
                    (std::isnan(x) ? o_nan : x == 0.f ? o_zero : o_other)++;
                }
            }
        }
    if (rows == 0) return std::nullopt;
    std::string s = fmt::format("observed: {} fully masked (b,h,row)s", rows);
    if (!stats.empty()) {
        s += "; their stats:";
        for (const auto& [v, n] : stats) s += fmt::format(" {} x{}", v, n);
    }
    if (o_nan + o_zero + o_other > 0)
        s += fmt::format("; O past the valid query lengths: {} unwritten (NaN prefill), {} zero, {} other", o_nan, o_zero,
                o_other);
    return s;
}

std::vector<OutputCheck> check_outputs(const Problem& p, const SdpaOutputs& got,
        const RefForward* fwd, const RefBackward* bwd, const Conventions& conv) {
    const Geometry geo = geometry(p);
    std::vector<OutputCheck> checks;
    auto check = [&](Output o, const Tensor& ref, const Tensor& mag) {
        checks.push_back(check_output(p, o, got.of(o), ref, mag, reduction_length(p, o), conv, got.integrity_of(o),
                geo.find(role_of(o))));
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
        check(Output::dQ, bwd->dQ, bwd->M_dQ);
        check(Output::dK, bwd->dK, bwd->M_dK);
        check(Output::dV, bwd->dV, bwd->M_dV);
        if (p.dmask) check(Output::dMask, bwd->dMask, bwd->M_dMask);
        if (is_fp8(p.dt)) {
            check(Output::amax, bwd->amax, bwd->M_amax);
            name_amax_entry(kAmaxBwd);
            intermediate_range(bwd->amax.data[3], Fp8Tensor::dP, "scaled dS (Amax_dP)");
            intermediate_range(bwd->p_max, Fp8Tensor::S, "P");
        }
    } else {
        check(Output::O, fwd->O, fwd->M_O);
        if (p.dir == Dir::fwd_t) check(Output::stats, fwd->stats, fwd->M_stats);
        if (is_fp8(p.dt)) {
            check(Output::amax, fwd->amax, fwd->M_amax);
            name_amax_entry(kAmaxFwd);
            intermediate_range(fwd->amax.data[0], Fp8Tensor::S, "P (Amax_S)");
        }
    }
    return checks;
}

}  // namespace sdpa
