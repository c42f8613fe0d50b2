#include "compare/extra_checks.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include <fmt/format.h>

namespace sdpa {

void check_head_norms(std::span<const HeadSquares> heads, std::int64_t per_batch, std::int64_t n, double c,
        double u_eff, double tiny, OutputCheck& r) {
    for (std::size_t k = 0; k < heads.size(); ++k) {
        const HeadSquares& s = heads[k];
        const double diff = std::fabs(std::sqrt(s.got) - std::sqrt(s.ref));
        const double bound = c * (u_eff * std::sqrt(s.mag) + tiny * std::sqrt(static_cast<double>(n)));
        double ratio = bound > 0 ? diff / bound : (diff > 0 ? INFINITY : 0.0);
        if (std::isnan(ratio)) ratio = INFINITY;
        if (ratio > r.norm_worst) {
            r.norm_worst = ratio;
            r.norm_ratio = s.ref > 0 ? std::sqrt(s.got / s.ref) : (s.got > 0 ? INFINITY : 1.0);
            const auto h = static_cast<std::int64_t>(k);
            r.norm_head = {h / per_batch, h % per_batch};
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

double stats_sum_ratio(double got, double ref, double mag) {
    const double sum = std::exp(ref - got);  // sum_j exp(s_ij - got) given sum_j exp(s_ij - ref) = 1
    const double m = std::max(std::fabs(ref), mag);
    const double ratio = std::fabs(sum - 1.0) / (kStatsSumSlack + kStatsSumUlps * unit_roundoff(DType::f32) * m);
    return std::isnan(ratio) ? INFINITY : ratio;
}

void check_stats_sums(const OutputRule& rule, const Tensor& got, const Tensor& ref, const Tensor& mag, OutputCheck& r) {
    const std::vector<std::uint8_t> kinds = row_kinds(rule, ref.dims);
    const std::int64_t H = ref.dims[1], S = ref.dims[2];
    std::size_t worst_i = 0;
    for (std::size_t k = 0; k < ref.size(); ++k) {
        const auto row = static_cast<std::int64_t>(k);  // stats rows hold one element
        if (kinds[static_cast<std::size_t>(row / S / H * S + row % S)] & kRowStructural) continue;  // fully masked
        const double ratio = stats_sum_ratio(got.data[k], ref.data[k], mag.data[k]);
        if (ratio > r.stats_sum_worst) {
            r.stats_sum_worst = ratio;
            worst_i = k;
        }
    }
    if (r.pass && r.stats_sum_worst > 1.0) {
        const auto idx = ref.index(worst_i);  // of ref: a sampled check's caller maps worst_index
        const auto* at = rule.sampled();
        const std::int64_t row = at ? (*at)[static_cast<std::size_t>(idx[2])] : idx[2];  // the output's own row
        r.pass = false;
        r.worst_index = idx;
        r.got = got.data[worst_i];
        r.expected = ref.data[worst_i];
        r.failure = CheckFailure::stats_sum;
        r.reason = fmt::format("softmax convention broken: sum_j exp(s_ij - stats_i) = {:.6g} at row (b,h,i) = "
                               "({},{},{}) (must be 1 +- {:.2g})",
                std::exp(static_cast<double>(r.expected) - r.got), idx[0], idx[1], row,
                kStatsSumSlack + kStatsSumUlps * unit_roundoff(DType::f32) *
                        std::max(std::fabs(static_cast<double>(r.expected)), static_cast<double>(mag.data[worst_i])));
    }
}

void check_column_sums(const OutputRule& rule, const SdpaOutputs& got, const RefBackward& ref, OutputCheck& r) {
    const bool dk = rule.output == Output::dK;
    const Tensor& want = dk ? ref.dK_sum : ref.dV_sum;
    const Tensor& mag = dk ? ref.M_dK_sum : ref.M_dV_sum;
    const Tensor& x = got.of(rule.output);
    if (want.empty() || x.dims[0] != want.dims[0] || x.dims[1] != want.dims[1] || x.dims[3] != want.dims[3]) return;
    std::array<std::int64_t, 4> worst{};
    double worst_sum = 0, worst_bound = 0;
    for (std::int64_t b = 0; b < x.dims[0]; ++b) {
        const std::int64_t n = valid_kv(rule.p, b);
        for (std::int64_t h = 0; h < x.dims[1]; ++h) {
            std::vector<double> sums(static_cast<std::size_t>(x.dims[3]));
            for (std::int64_t j = 0; j < n; ++j)
                for (std::int64_t e = 0; e < x.dims[3]; ++e) sums[static_cast<std::size_t>(e)] += x.at(b, h, j, e);
            for (std::int64_t e = 0; e < x.dims[3]; ++e) {
                const double sum = sums[static_cast<std::size_t>(e)];
                const double bound = r.bound_c * (r.bound_u_eff * (mag.at(b, h, 0, e) + static_cast<double>(n) * r.bound_floor) +
                        static_cast<double>(n) * r.bound_tiny);
                const double err = std::fabs(sum - want.at(b, h, 0, e));
                const double ratio = bound > 0 ? err / bound : (err > 0 ? INFINITY : 0.0);
                if (!(ratio <= r.column_sum_worst)) {  // NaN included
                    r.column_sum_worst = ratio != ratio ? INFINITY : ratio;
                    worst = {b, h, 0, e};
                    worst_sum = sum;
                    worst_bound = bound;
                }
            }
        }
    }
    if (!r.pass || r.column_sum_worst <= 1.0) return;
    r.pass = false;
    r.failure = CheckFailure::column_sum;
    r.located = false;
    r.reason = fmt::format("column identity broken: sum_j {}_j = {:.6g} at (b,h_kv,d) = ({},{},{}), expected {:.6g} "
            "(|err| {:.3g} > bound {:.3g}; docs/trust.md#sampled-checks)", rule.output, worst_sum, worst[0], worst[1],
            worst[3], want.at(worst[0], worst[1], 0, worst[3]), std::fabs(worst_sum - want.at(worst[0], worst[1], 0, worst[3])),
            worst_bound);
}

}  // namespace sdpa
