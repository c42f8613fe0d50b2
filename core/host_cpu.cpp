#include "core/host_cpu.hpp"

#include <sched.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <omp.h>

namespace sdpa {

namespace {

/// The value of the first /proc/cpuinfo line whose key is `key` ("" when there is none).
std::string cpuinfo_value(const std::string& key) {
    std::ifstream in("/proc/cpuinfo");
    for (std::string line; std::getline(in, line);) {
        const auto colon = line.find(':');
        if (colon == std::string::npos) continue;
        std::string k = line.substr(0, colon);
        k.erase(k.find_last_not_of(" \t") + 1);
        if (k != key) continue;
        const auto v = line.find_first_not_of(" \t", colon + 1);
        return v == std::string::npos ? std::string() : line.substr(v);
    }
    return "";
}

}  // namespace

const std::string& cpu_model_name() {
    static const std::string name = cpuinfo_value("model name");
    return name;
}

const std::vector<std::string>& cpu_flags() {
    static const std::vector<std::string> flags = [] {
        std::istringstream in(cpuinfo_value("flags"));
        std::vector<std::string> out;
        for (std::string w; in >> w;) out.push_back(w);
        return out;
    }();
    return flags;
}

int process_cpus() {
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) != 0) return 1;
    return std::max(1, CPU_COUNT(&set));
}

std::string cpu_scaling_governor() {
    std::ifstream in("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor");
    std::string governor;
    in >> governor;  // one word; nothing when the file is absent
    return governor;
}

std::string limit_threads(int n) {
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) != 0)
        return fmt::format("--threads={}: sched_getaffinity failed: {}", n, std::strerror(errno));
    const int have = CPU_COUNT(&set);
    if (n < 1 || n > have)
        return fmt::format("--threads={}: this process may run on {} CPU(s) (its affinity mask; taskset and numactl "
                           "narrow it), so N must be 1 to {}", n, have, have);
    cpu_set_t keep;
    CPU_ZERO(&keep);
    for (int cpu = 0, kept = 0; cpu < CPU_SETSIZE && kept < n; ++cpu)
        if (CPU_ISSET(cpu, &set)) {
            CPU_SET(cpu, &keep);
            ++kept;
        }
    if (sched_setaffinity(0, sizeof keep, &keep) != 0)
        return fmt::format("--threads={}: sched_setaffinity failed: {}", n, std::strerror(errno));
    setenv("OMP_NUM_THREADS", std::to_string(n).c_str(), 1);
    omp_set_num_threads(n);
    return "";
}

}  // namespace sdpa
