#include "compare/extra_checks.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include <fmt/format.h>

namespace sdpa {

void check_head_norms(const Tensor& got, const Tensor& ref, const Tensor& mag, double c, double u_eff,
        double tiny, OutputCheck& r) {
    const std::int64_t B = ref.dims[0], H = ref.dims[1];
    const auto per_head = static_cast<std::size_t>(ref.dims[2] * ref.dims[3]);
    for (std::int64_t b = 0; b < B; ++b)
        for (std::int64_t h = 0; h < H; ++h) {
            const std::size_t base = ref.offset(b, h, 0, 0);
            double g2 = 0, e2 = 0, m2 = 0;
            for (std::size_t k = base; k < base + per_head; ++k) {
                g2 += static_cast<double>(got.data[k]) * got.data[k];
                e2 += static_cast<double>(ref.data[k]) * ref.data[k];
                m2 += static_cast<double>(mag.data[k]) * mag.data[k];
            }
            const double diff = std::fabs(std::sqrt(g2) - std::sqrt(e2));
            const double bound = c * (u_eff * std::sqrt(m2) + tiny * std::sqrt(static_cast<double>(per_head)));
            double ratio = bound > 0 ? diff / bound : (diff > 0 ? INFINITY : 0.0);
            if (std::isnan(ratio)) ratio = INFINITY;
            if (ratio > r.norm_worst) {
                r.norm_worst = ratio;
                r.norm_ratio = e2 > 0 ? std::sqrt(g2 / e2) : (g2 > 0 ? INFINITY : 1.0);
                r.norm_head = {b, h};
            }
        }
    if (r.pass && r.norm_worst > 1.0) {
        r.pass = false;
        r.worst_index = {r.norm_head[0], r.norm_head[1], 0, 0};
        r.failure = CheckFailure::norm;
        r.reason = fmt::format("norm of head (b,h) = ({},{}) is {:.6g} x the reference's (|diff| / bound {:.3g})",
                r.norm_head[0], r.norm_head[1], r.norm_ratio, r.norm_worst);
    }
}

void check_stats_sums(const Problem& p, const Tensor& got, const Tensor& ref, const Tensor& mag, OutputCheck& r) {
    const double u = unit_roundoff(DType::f32);
    std::size_t worst_i = 0;
    for (std::size_t k = 0; k < ref.size(); ++k) {
        const auto idx = ref.index(k);
        if (row_fully_masked(p, idx[0], idx[2])) continue;
        const double e = ref.data[k], g = got.data[k];
        const double sum = std::exp(e - g);  // sum_j exp(s_ij - g) given sum_j exp(s_ij - e) = 1
        const double m = std::max(std::fabs(e), static_cast<double>(mag.data[k]));
        double ratio = std::fabs(sum - 1.0) / (kStatsSumSlack + kStatsSumUlps * u * m);
        if (std::isnan(ratio)) ratio = INFINITY;
        if (ratio > r.stats_sum_worst) {
            r.stats_sum_worst = ratio;
            worst_i = k;
        }
    }
    if (r.pass && r.stats_sum_worst > 1.0) {
        const auto idx = ref.index(worst_i);
        r.pass = false;
        r.worst_index = idx;
        r.got = got.data[worst_i];
        r.expected = ref.data[worst_i];
        r.failure = CheckFailure::stats_sum;
        r.reason = fmt::format("softmax convention broken: sum_j exp(s_ij - stats_i) = {:.6g} at row (b,h,i) = "
                               "({},{},{}) (must be 1 +- {:.2g})",
                std::exp(static_cast<double>(r.expected) - r.got), idx[0], idx[1], idx[2],
                kStatsSumSlack + kStatsSumUlps * u * std::max(std::fabs(static_cast<double>(r.expected)),
                        static_cast<double>(mag.data[worst_i])));
    }
}

void check_zero_counts(const Problem& p, Output out, const Tensor& got, OutputCheck& r, const TensorGeom* geom,
        const Conventions& conv) {
    std::int64_t n_structural = 0, zeros = 0, counted = 0;
    for (std::size_t k = 0; k < got.size(); ++k) {
        const auto idx = got.index(k);
        if (unchecked(p, out, idx, geom, conv)) continue;
        if (structural(p, out, idx)) {
            ++n_structural;
            continue;
        }
        if (zero_by_construction(p, out, idx)) continue;  // zero trust has nothing to say there
        ++counted;
        zeros += got.data[k] == 0.f;
    }
    r.structural_zeros = n_structural;
    r.got_zero_fraction = counted > 0 ? static_cast<double>(zeros) / counted : 0.0;
    if (r.pass && r.got_zero_fraction > 0.5) r.mistrusted = true;
}

}  // namespace sdpa
