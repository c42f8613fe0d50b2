#include "core/memory_estimate.hpp"

#include "core/geometry.hpp"

#include <sys/resource.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>

#include <fmt/format.h>

namespace sdpa {

namespace {

/// Element counts of p's tensors (from its geometry), as doubles: products of valid dims fit in
/// int64, sums may not. Absent roles count 0.
struct Counts {
    double q, k, v, o, stats, bias, k_panels, v_panels;
    bool bwd;
    explicit Counts(const Problem& p) {
        const Geometry g = geometry(p);
        auto n = [&](Role r) { return g.has(r) ? static_cast<double>(g.at(r).elements()) : 0.0; };
        q = n(Role::Q);
        k = n(Role::K);
        v = n(Role::V);
        o = n(Role::O);
        const auto& rows = g.at(Role::scores).dims;  // the reference keeps one stats value per query row
        stats = double(rows[0]) * double(rows[1]) * double(rows[2]);
        bias = n(Role::bias);
        // The reference keeps K (and V) transposed in panels of 64 keys.
        const double padded = std::ceil(double(p.dims.S_kv) / 64.0) * 64.0 / double(p.dims.S_kv);
        k_panels = k * padded;
        v_panels = v * padded;
        bwd = g.has(Role::dQ);
    }
};

}  // namespace

double input_host_bytes(const Problem& p) {
    const Counts n(p);
    return 4 * (n.q + n.k + n.v + n.bias) + (n.bwd ? 4 * (2 * n.o + n.stats) : 0);
}

double vendor_buffer_bytes(const Problem& p) {
    double bytes = 0;
    const Geometry g = geometry(p);
    for (const TensorGeom* t : g.all())
        if (t->input || t->output) bytes += static_cast<double>(t->span()) * static_cast<double>(size_of(t->type));
    return bytes;
}

std::vector<MemoryItem> reference_host_items(const Problem& p, unsigned threads) {
    const Counts n(p);
    const Dims& d = p.dims;
    const double t = std::max(1u, threads);
    // Per thread: a few 64 x 64 tiles (f32 and f64) and 64-row panels of Q, dO and accumulators.
    const double scratch = t * (64.0 * 64 * 48 + 64.0 * (d.D_qk + d.D_v) * 48);
    std::vector<MemoryItem> items{{"reference forward (O, stats, magnitudes, K and |K| panels, scratch)",
        4 * (2 * n.o + 2 * n.stats) + 8 * n.k_panels + scratch}};
    if (n.bwd) {
        // ref/ref_backward.cpp: the f64 sums carried between rectangles of a long (b, h_kv) group
        // (at most dQ, M_dQ or dK, M_dK, dV, M_dV of the smaller side), two halves of 2 MiB of
        // tile slots per thread, Q, K and dO padded to the kernel's widths, the row norms.
        const double carried = 16 * std::min(n.q, n.k + n.v);
        const double slots = t * 2 * 2.0 * (1 << 20);
        items.push_back({"reference backward (dQ, dK, dV, magnitudes, K/V panels, padded rows, carried sums, slots)",
            8 * (n.q + n.k + n.v) + 4 * (n.k_panels + n.v_panels) + 4 * (n.q + n.k + n.o) + 24 * n.stats +
                    8 * n.k / std::max<std::int64_t>(1, d.D_qk) + carried + slots + scratch});
    }
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

std::uint64_t memory_limit_from(std::uint64_t available, std::uint64_t as_limit, std::uint64_t data_limit) {
    std::uint64_t base = 0;
    for (const std::uint64_t v : {available, as_limit, data_limit})
        if (v != 0) base = base == 0 ? v : std::min(base, v);
    return base / 5 * 4;
}

std::uint64_t default_memory_limit() {
    std::uint64_t limits[2] = {0, 0};
    int i = 0;
    for (const int resource : {RLIMIT_AS, RLIMIT_DATA}) {
        rlimit rl{};
        if (getrlimit(resource, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) limits[i] = rl.rlim_cur;
        ++i;
    }
    return memory_limit_from(available_memory_bytes(), limits[0], limits[1]);
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

std::uint64_t device_memory_limit_from(std::uint64_t max_device_memory, std::uint64_t free_bytes) {
    if (max_device_memory > 0) return max_device_memory;
    return static_cast<std::uint64_t>(kDeviceMemoryShare * static_cast<double>(free_bytes));
}

}  // namespace sdpa
