// How noisy the machine is at one moment of a run: its load average, the CPU
// time a hypervisor stole, and the spread of a fixed calibration kernel's time.
// A run takes one sample before its first case and one after its last (the
// reports' context "noise" and end record:
// docs/perf_and_reports.md#reports---reportformatpath), so that a timing change
// can be told from a machine that was busy, throttled or shared while the run
// ran.
#pragma once

#include <optional>

namespace sdpa {

/// One noise sample (noise_sample()).
struct NoiseSample {
    /// The 1-minute load average (getloadavg, /proc/loadavg): runnable threads
    /// averaged over the last minute, all CPUs together; nullopt when it cannot
    /// be read.
    std::optional<double> loadavg;
    /// The fraction of CPU time stolen by the hypervisor while the calibration
    /// ran (0 to 1): the steal jiffies over the total jiffies of /proc/stat's
    /// first "cpu" line (user nice system idle iowait irq softirq steal), read
    /// before and after it; 0 when no jiffy passed; nullopt when /proc/stat
    /// cannot be read.
    std::optional<double> steal;
    /// /proc/stat's counters at the end of the sample, in jiffies since boot (all
    /// CPUs): the steal and the total (user nice system idle iowait irq softirq
    /// steal). Two samples of a run give its steal share over the whole run,
    /// which a sample's own 45 ms (a few jiffies) cannot; nullopt when /proc/stat
    /// cannot be read.
    std::optional<unsigned long long> steal_jiffies, total_jiffies;
    double calib_ms = 0;  ///< the median wall time of one calibration repetition, ms
    /// The repetitions' coefficient of variation (sample standard deviation /
    /// mean; NaN with fewer than 2: core/timing_stats.hpp summarize).
    double calib_cv = 0;
    /// The share of repetitions (0 to 1) that took more than kNoiseSlowRep times
    /// the fastest: those a time slice of another process interrupted. A median
    /// hides a busy machine from repetitions shorter than a slice (most fall
    /// between its slices); this share shows it: a few percent on a quiet
    /// machine, half with a busy loop per CPU beside the run.
    double calib_slow = 0;
    int calib_reps = 0;  ///< the timed repetitions (kNoiseCalibReps)
};

/// A calibration repetition slower than this times the fastest counts in
/// NoiseSample::calib_slow.
inline constexpr double kNoiseSlowRep = 1.5;

/// Timed repetitions of the calibration kernel in one sample (one untimed
/// warm-up before them).
inline constexpr int kNoiseCalibReps = 25;

/// Takes one noise sample: the load average, then kNoiseCalibReps repetitions
/// of the calibration kernel on `threads` threads (at least 1; the run's OpenMP
/// thread count), each thread computing the same fixed f32 products of small
/// matrices (three 128x128 f32 matrices per thread, 192 KiB, which stay in its
/// core's caches; 21 MFLOP a repetition: 1.7 ms on a 2-core Xeon VM, some 45 ms
/// a sample; compiled -O3 in every build type, so that it measures the machine,
/// not the build), with the /proc/stat steal over them. A repetition's time is
/// that of its slowest thread, so a process busy on any of the run's cores
/// slows it. The threads are std::threads started and joined here, not an
/// OpenMP region: a run that forks a child per case (--isolate,
/// --timeout-per-case, driver/isolation.hpp) takes a sample before its first
/// fork, and the GNU OpenMP runtime's thread pool, once started, hangs a forked
/// child's first parallel region. Deterministic work, the same for every thread
/// count; never throws for a missing /proc file.
NoiseSample noise_sample(int threads);

}  // namespace sdpa
