// Performance measurement of a prepared plan: warm-up, timed runs until a time budget (with a
// minimum count) or a fixed count, optional CPU cache flush between runs.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "backends/backend.hpp"
#include "core/timing_stats.hpp"

namespace sdpa {

/// Writes a buffer larger than the last-level cache so that the next run starts cold.
class CacheFlusher {
public:
    /// Allocates `bytes` (rounded up to 64) and touches it once.
    explicit CacheFlusher(std::size_t bytes);
    /// Writes every cache line of the buffer (OpenMP threads), evicting what earlier runs left.
    void flush();
    /// Size of the flush buffer in bytes.
    std::size_t bytes() const { return buf_.size(); }
    /// flush() calls so far.
    std::size_t flushes() const { return flushes_; }

private:
    std::vector<unsigned char> buf_;
    unsigned char pass_ = 0;
    std::size_t flushes_ = 0;
};

/// Size of the last-level CPU cache in bytes: the largest cache any level reports, from
/// sysconf(_SC_LEVEL{3,2}_CACHE_SIZE), else /sys/devices/system/cpu/cpu0/cache/index*/size;
/// 0 when neither says.
std::size_t last_level_cache_bytes();

/// Size used by --cold-cache: 2 x the last-level cache, at least 64 MiB.
std::size_t cold_cache_flush_bytes();

/// Global timing options (--max-ms-per-case, --min-runs, --fix-times, --cold-cache).
struct TimingOptions {
    double max_ms_per_case = 1000;  ///< wall-clock budget of the timed loop (flushes included)
    int min_runs = 5;               ///< at least this many timed runs, even past the budget
    int fix_times = 0;              ///< > 0: exactly this many timed runs, no budget
    int warmup_runs = 1;            ///< untimed runs before the first timed one
    bool cold_cache = false;        ///< flush caches before every run (needs `flusher`)
    CacheFlusher* flusher = nullptr;  ///< owned by the caller; used only when cold_cache
    /// --noisy-cv: a timed case whose runs' coefficient of variation (TimingStats::cv) is above
    /// this is marked noisy (PerfResult::noisy).
    double noisy_cv = 0.1;
};

/// Times `plan`: warmup_runs untimed executions, then Plan::execute_timed_ms() repeatedly
/// (flushing the caches before each run when cold_cache, outside the measured time: the host's
/// with `flusher` unless the plan runs on a device, then Plan::flush_caches()) until
/// fix_times runs, or until the loop's wall time reaches max_ms_per_case and at least
/// min_runs runs were made. Returns the per-run times (ms). Throws what Plan throws.
std::vector<double> time_plan(Plan& plan, const TimingOptions& opt);

}  // namespace sdpa
