#include "core/timing_stats.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include <boost/math/statistics/univariate_statistics.hpp>

namespace sdpa {

TimingStats summarize(std::vector<double> ms) {
    TimingStats t;
    if (ms.empty()) return t;
    std::sort(ms.begin(), ms.end());
    const std::size_t n = ms.size();
    t.runs = static_cast<int>(n);
    t.min_ms = ms.front();
    t.max_ms = ms.back();
    t.median_ms = n % 2 == 1 ? ms[n / 2] : 0.5 * (ms[n / 2 - 1] + ms[n / 2]);
    t.mean_ms = std::accumulate(ms.begin(), ms.end(), 0.0) / static_cast<double>(n);
    if (n < 2) {
        t.cv = std::numeric_limits<double>::quiet_NaN();
    } else {
        const auto [mean, variance] = boost::math::statistics::mean_and_sample_variance(ms);
        t.cv = mean > 0 ? std::sqrt(variance) / mean : std::numeric_limits<double>::quiet_NaN();
    }
    return t;
}

double giga_per_second(double amount, double ms) { return ms > 0 ? amount / (ms * 1e-3) * 1e-9 : 0.0; }

PerfResult make_perf_result(const TimingStats& t, double compile_ms, bool cold_cache, std::int64_t flops,
        std::int64_t bytes) {
    PerfResult r;
    r.time = t;
    r.compile_ms = compile_ms;
    r.cold_cache = cold_cache;
    const double f = static_cast<double>(flops);
    r.gflops_at_min = giga_per_second(f, t.min_ms);
    r.gflops_at_median = giga_per_second(f, t.median_ms);
    r.gflops_at_max = giga_per_second(f, t.max_ms);
    r.gbytes_per_s_at_median = giga_per_second(static_cast<double>(bytes), t.median_ms);
    return r;
}

}  // namespace sdpa
