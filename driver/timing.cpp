#include "driver/timing.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>

namespace sdpa {

CacheFlusher::CacheFlusher(std::size_t bytes) : buf_((bytes + 63) / 64 * 64, 0) {}

void CacheFlusher::flush() {
    ++flushes_;
    ++pass_;
    const std::int64_t lines = static_cast<std::int64_t>(buf_.size() / 64);
    unsigned char* p = buf_.data();
    const unsigned char v = pass_;
#pragma omp parallel for schedule(static)
    for (std::int64_t i = 0; i < lines; ++i) p[i * 64] = static_cast<unsigned char>(v + i);
}

namespace {

/// "32768K", "480M", "1G" (sysfs spelling) -> bytes; 0 when unreadable.
std::size_t parse_sysfs_size(const std::string& s) {
    std::size_t pos = 0;
    unsigned long long v = 0;
    try {
        v = std::stoull(s, &pos);
    } catch (...) {
        return 0;
    }
    const char unit = pos < s.size() ? s[pos] : ' ';
    if (unit == 'K') v <<= 10;
    else if (unit == 'M') v <<= 20;
    else if (unit == 'G') v <<= 30;
    return static_cast<std::size_t>(v);
}

}  // namespace

std::size_t last_level_cache_bytes() {
    std::size_t best = 0;
#ifdef _SC_LEVEL3_CACHE_SIZE
    if (long v = sysconf(_SC_LEVEL3_CACHE_SIZE); v > 0) best = std::max(best, static_cast<std::size_t>(v));
#endif
#ifdef _SC_LEVEL2_CACHE_SIZE
    if (long v = sysconf(_SC_LEVEL2_CACHE_SIZE); v > 0) best = std::max(best, static_cast<std::size_t>(v));
#endif
    if (best > 0) return best;
    std::error_code ec;
    const std::filesystem::path dir = "/sys/devices/system/cpu/cpu0/cache";
    for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
        std::ifstream f(e.path() / "size");
        std::string s;
        if (f >> s) best = std::max(best, parse_sysfs_size(s));
    }
    return best;
}

std::size_t cold_cache_flush_bytes() {
    return std::max<std::size_t>(2 * last_level_cache_bytes(), std::size_t{64} << 20);
}

std::vector<double> time_plan(Plan& plan, const TimingOptions& opt) {
    CacheFlusher* flusher = opt.cold_cache ? opt.flusher : nullptr;
    for (int i = 0; i < opt.warmup_runs; ++i) plan.execute();
    std::vector<double> ms;
    const auto t0 = std::chrono::steady_clock::now();
    const auto budget_left = [&] {
        return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() <
               opt.max_ms_per_case;
    };
    for (;;) {
        const int n = static_cast<int>(ms.size());
        if (opt.fix_times > 0 ? n >= opt.fix_times : n >= std::max(opt.min_runs, 1) && !budget_left()) break;
        if (opt.cold_cache) {  // the host's caches (a host plan), then the plan's own (a GPU's L2; no-op on the CPU)
            if (flusher && !plan.runs_on_device()) flusher->flush();
            plan.flush_caches();
        }
        ms.push_back(plan.execute_timed_ms());
    }
    return ms;
}

}  // namespace sdpa
