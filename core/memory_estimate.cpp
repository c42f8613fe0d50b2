#include "core/memory_estimate.hpp"

#include <sys/resource.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>

#include <fmt/format.h>

namespace sdpa {

namespace {

/// Element counts of p's tensors, as doubles: products of valid dims fit in int64, sums may not.
struct Counts {
    double q, k, v, o, stats, bias, k_panels, v_panels;
    bool bwd;
    explicit Counts(const Problem& p) {
        const Dims& d = p.dims;
        q = double(d.B) * d.H_q * d.S_q * d.D_qk;
        k = double(d.B) * d.H_kv * d.S_kv * d.D_qk;
        v = double(d.B) * d.H_kv * d.S_kv * d.D_v;
        o = double(d.B) * d.H_q * d.S_q * d.D_v;
        stats = double(d.B) * d.H_q * d.S_q;
        bias = 0;
        if (p.mask == Mask::bias) {
            const auto bd = bias_dims(p);
            bias = double(bd[0]) * bd[1] * bd[2] * bd[3];
        }
        const double padded_keys = double(d.B) * d.H_kv * std::ceil(double(d.S_kv) / 64.0) * 64.0;
        k_panels = padded_keys * d.D_qk;
        v_panels = padded_keys * d.D_v;
        bwd = p.dir == Dir::bwd || p.dir == Dir::fwd_bwd;
    }
};

}  // namespace

double input_host_bytes(const Problem& p) {
    const Counts n(p);
    return 4 * (n.q + n.k + n.v + n.bias) + (n.bwd ? 4 * (2 * n.o + n.stats) : 0);
}

std::vector<MemoryItem> reference_host_items(const Problem& p, unsigned threads) {
    const Counts n(p);
    const Dims& d = p.dims;
    const double t = std::max(1u, threads);
    // Per thread: a few 64 x 64 tiles (f32 and f64) and 64-row panels of Q, dO and accumulators.
    const double scratch = t * (64.0 * 64 * 48 + 64.0 * (d.D_qk + d.D_v) * 48);
    std::vector<MemoryItem> items{{"reference forward (O, stats, magnitudes, K panels, scratch)",
        4 * (2 * n.o + 2 * n.stats) + 4 * n.k_panels + scratch}};
    if (n.bwd)
        items.push_back({"reference backward (dQ, dK, dV, magnitudes, K/V panels, D and r, scratch)",
            8 * (n.q + n.k + n.v) + 4 * (n.k_panels + n.v_panels) + 16 * n.stats + scratch});
    return items;
}

MemoryEstimate estimate_host_memory(const Problem& p, unsigned threads, const std::vector<MemoryItem>& backend_items) {
    const Counts n(p);
    MemoryEstimate e;
    auto add = [&e](const MemoryItem& item) {
        if (item.bytes <= 0) return;
        e.items.push_back(item);
        e.total += item.bytes;
    };
    add({"inputs (f32 host tensors)", input_host_bytes(p)});
    for (const MemoryItem& item : reference_host_items(p, threads)) add(item);
    add({"decoded backend outputs (f32)", n.bwd ? 4 * (n.q + n.k + n.v) : 4 * (n.o + n.stats)});
    for (const MemoryItem& item : backend_items) add(item);
    return e;
}

std::uint64_t available_memory_bytes() {
    std::ifstream in("/proc/meminfo");
    std::string key, unit;
    std::uint64_t value = 0;
    while (in >> key >> value) {
        std::getline(in, unit);  // " kB" (or nothing)
        if (key == "MemAvailable:") return value * 1024;
    }
    return 0;
}

std::uint64_t default_memory_limit() {
    std::uint64_t base = available_memory_bytes();
    if (base == 0) base = std::numeric_limits<std::uint64_t>::max();
    for (const int resource : {RLIMIT_AS, RLIMIT_DATA}) {
        rlimit rl{};
        if (getrlimit(resource, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
            base = std::min<std::uint64_t>(base, rl.rlim_cur);
    }
    if (base == std::numeric_limits<std::uint64_t>::max()) return 0;
    return base / 5 * 4;
}

std::string format_bytes(double bytes) {
    const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    std::size_t u = 0;
    while (bytes >= 1024 && u + 1 < std::size(units)) {
        bytes /= 1024;
        ++u;
    }
    return u == 0 ? fmt::format("{:.0f} B", bytes) : fmt::format("{:.3g} {}", bytes, units[u]);
}

}  // namespace sdpa
