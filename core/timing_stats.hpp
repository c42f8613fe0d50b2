// Summary statistics of repeated timed runs, and the rates derived from them.
#pragma once

#include <cstdint>
#include <vector>

namespace sdpa {

/// Statistics of the timed runs of one case, in milliseconds. runs == 0 means "not timed".
struct TimingStats {
    int runs = 0;
    double min_ms = 0, median_ms = 0, mean_ms = 0, max_ms = 0;
    /// Coefficient of variation of the runs: sample standard deviation / mean (dimensionless;
    /// 0.05 = a 5% spread); NaN with fewer than 2 runs (no spread to measure).
    double cv = 0;
};

/// Min, median (mean of the two middle values for an even count), mean, max and coefficient of
/// variation (Boost.Math's mean_and_sample_variance) of `ms`. An empty vector gives runs == 0
/// and zeros.
TimingStats summarize(std::vector<double> ms);

/// Rate in units per second of `amount` done in `ms` milliseconds, scaled by 1e-9 (so FLOPs give
/// GFLOP/s and bytes give GB/s). 0 when ms <= 0.
double giga_per_second(double amount, double ms);

/// Everything a perf line reports for one case: timing, compile time, work and rates. The
/// driver fills it (reporters only print it).
struct PerfResult {
    TimingStats time;
    double compile_ms = 0;      ///< Plan::compile_ms(): building and compiling the vendor graph
    bool cold_cache = false;    ///< caches were flushed before every timed run
    /// GFLOP/s at the min, median and max time (index 0 = best rate, from the min time).
    double gflops_at_min = 0, gflops_at_median = 0, gflops_at_max = 0;
    double gbytes_per_s_at_median = 0;  ///< bytes_moved / median time, GB/s
    /// Every timed run's time in ms, in run order (for significance tests across runs:
    /// scripts/compare_runs.py).
    std::vector<double> samples_ms;
    /// The device's peak dense rate for the case's io type, TFLOP/s (Backend::peak_tflops); 0 when
    /// unknown (CPU backends), and then no percent of peak is reported.
    double peak_tflops = 0;
    /// time.cv is above the run's --noisy-cv threshold: the machine was too noisy for these
    /// timings to tell a small change (scripts/history says so beside any change it reports).
    bool noisy = false;
};

/// Fills the rate fields of a PerfResult from its timing, the case's FLOPs and bytes.
PerfResult make_perf_result(const TimingStats& t, double compile_ms, bool cold_cache, std::int64_t flops,
        std::int64_t bytes);

}  // namespace sdpa
