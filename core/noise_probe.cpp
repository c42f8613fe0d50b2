#include "core/noise_probe.hpp"

#include <algorithm>
#include <array>
#include <barrier>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "core/timing_stats.hpp"

namespace sdpa {

namespace {

/// The calibration kernel's matrices are kCalibN x kCalibN f32; one repetition
/// is kCalibProducts products C = A.B of them (2 kCalibN^3 kCalibProducts FLOPs
/// per thread: 21 MFLOP).
constexpr int kCalibN = 128;
constexpr int kCalibProducts = 5;

/// One thread's matrices, filled with fixed values (small, so that no product
/// overflows).
struct CalibBuffers {
    std::vector<float> a, b, c;
    CalibBuffers() : a(kCalibN * kCalibN), b(kCalibN * kCalibN), c(kCalibN * kCalibN) {
        for (int i = 0; i < kCalibN * kCalibN; ++i) {
            a[static_cast<std::size_t>(i)] = static_cast<float>(i % 7) * (1.0f / kCalibN);
            b[static_cast<std::size_t>(i)] = static_cast<float>(i % 5) * 0.25f;
        }
    }
};

/// One repetition of the kernel on `m`: kCalibProducts products, row by row
/// (the inner loop over j vectorises); returns one element, so that the work is
/// not optimised away.
float calib_repetition(CalibBuffers& m) {
    float* c = m.c.data();
    const float* a = m.a.data();
    const float* b = m.b.data();
    for (int p = 0; p < kCalibProducts; ++p)
        for (int i = 0; i < kCalibN; ++i) {
            float* ci = c + i * kCalibN;
            std::fill(ci, ci + kCalibN, 0.0f);
            for (int k = 0; k < kCalibN; ++k) {
                const float aik = a[i * kCalibN + k];
                const float* bk = b + k * kCalibN;
                for (int j = 0; j < kCalibN; ++j) ci[j] += aik * bk[j];
            }
        }
    return c[(kCalibN + 1) * (kCalibN / 2)];
}

/// The first line of /proc/stat ("cpu  user nice system idle iowait irq softirq
/// steal guest guest_nice", in jiffies): (steal, total of the first eight), or
/// nullopt when unreadable. guest and guest_nice are left out of the total: the
/// kernel counts them in user and nice too.
std::optional<std::array<unsigned long long, 2>> cpu_jiffies() {
    std::ifstream in("/proc/stat");
    std::string line;
    if (!std::getline(in, line)) return std::nullopt;
    std::istringstream words(line);
    std::string name;
    std::array<unsigned long long, 8> v{};
    if (!(words >> name) || name != "cpu") return std::nullopt;
    for (auto& x : v)
        if (!(words >> x)) return std::nullopt;
    unsigned long long total = 0;
    for (const auto x : v) total += x;
    return std::array<unsigned long long, 2>{v[7], total};
}

}  // namespace

NoiseSample noise_sample(int threads) {
    NoiseSample s;
    if (double load[1]; ::getloadavg(load, 1) == 1) s.loadavg = load[0];
    const int n = std::max(1, threads);
    std::vector<CalibBuffers> buffers(static_cast<std::size_t>(n));
    std::vector<float> sinks(static_cast<std::size_t>(n), 0.0f);
    std::barrier sync(n);
    // Each repetition starts when every thread has arrived and ends when the
    // slowest has finished.
    const auto work = [&](int t) {
        for (int r = 0; r <= kNoiseCalibReps; ++r) {
            sync.arrive_and_wait();
            sinks[static_cast<std::size_t>(t)] += calib_repetition(buffers[static_cast<std::size_t>(t)]);
            sync.arrive_and_wait();
        }
    };
    std::vector<std::thread> others;
    for (int t = 1; t < n; ++t) others.emplace_back(work, t);
    const auto before = cpu_jiffies();
    std::vector<double> ms;
    using clock = std::chrono::steady_clock;
    for (int r = 0; r <= kNoiseCalibReps; ++r) {  // repetition 0 is the untimed warm-up
        sync.arrive_and_wait();
        const auto t0 = clock::now();
        sinks[0] += calib_repetition(buffers[0]);
        sync.arrive_and_wait();
        if (r > 0) ms.push_back(std::chrono::duration<double, std::milli>(clock::now() - t0).count());
    }
    const auto after = cpu_jiffies();
    for (auto& t : others) t.join();
    // The products' values are kept, so that no compiler drops the work.
    volatile float sink = 0;
    for (const float x : sinks) sink = sink + x;
    const TimingStats st = summarize(ms);
    s.calib_ms = st.median_ms;
    s.calib_cv = st.cv;
    s.calib_reps = st.runs;
    if (!ms.empty())
        s.calib_slow = static_cast<double>(std::count_if(ms.begin(), ms.end(),
                                                         [&](double x) { return x > kNoiseSlowRep * st.min_ms; })) /
                       static_cast<double>(ms.size());
    if (after) {
        s.steal_jiffies = (*after)[0];
        s.total_jiffies = (*after)[1];
    }
    if (before && after) {
        // Counters that went backwards (the kernel's idle and iowait may) count as
        // no time.
        const auto gain = [&](int k) { return (*after)[k] > (*before)[k] ? (*after)[k] - (*before)[k] : 0ULL; };
        const unsigned long long total = gain(1), steal = std::min(gain(0), total);
        s.steal = total > 0 ? static_cast<double>(steal) / static_cast<double>(total) : 0.0;
    }
    return s;
}

}  // namespace sdpa
