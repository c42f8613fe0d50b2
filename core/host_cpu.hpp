// The host CPU as this process sees it: its model and flags (/proc/cpuinfo), the CPUs the process
// may run on (its affinity mask, which taskset and numactl set), and --threads, which narrows that
// mask so that every threading runtime in the process (the reference's OpenMP, oneDNN's TBB,
// libtorch's OpenMP) uses the same number of cores (docs/knobs_run.md#threads---threadsn).
#pragma once

#include <string>
#include <vector>

namespace sdpa {

/// /proc/cpuinfo's "model name" of the first CPU ("" when it cannot be read).
const std::string& cpu_model_name();

/// /proc/cpuinfo's "flags" of the first CPU, in its order (empty when it cannot be read).
const std::vector<std::string>& cpu_flags();

/// The number of CPUs in this process's affinity mask (sched_getaffinity); at least 1.
int process_cpus();

/// CPU 0's frequency governor (/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor, blanks
/// trimmed: "performance", "powersave", "schedutil", ...); "" when the file is absent (many VMs
/// have no cpufreq) or unreadable.
std::string cpu_scaling_governor();

/// Limits this process and every process it starts to `n` CPUs: its affinity mask is narrowed to
/// the first `n` CPUs of the current one (a runtime that starts later, such as TBB under oneDNN or
/// libtorch's OpenMP, sizes its pool from it), OMP_NUM_THREADS is set to n for runtimes that read
/// it at load time, and the already loaded OpenMP's thread count is set to n. Call it before any
/// vendor library runs. Returns "" on success, else why not (n < 1, more CPUs than the mask has,
/// sched_setaffinity failed), naming the values.
std::string limit_threads(int n);

}  // namespace sdpa
