#include "core/memory_estimate.hpp"

#include <sys/resource.h>

#include <algorithm>
#include <fstream>
#include <limits>

#include <fmt/format.h>

namespace sdpa {

MemoryEstimate estimate_host_memory(const Problem& p, std::string_view backend, unsigned threads) {
    const Dims& d = p.dims;
    // Element counts as doubles: products of valid dims fit in int64, sums may not.
    const double nQ = double(d.B) * d.H_q * d.S_q * d.D_qk, nK = double(d.B) * d.H_kv * d.S_kv * d.D_qk,
                 nV = double(d.B) * d.H_kv * d.S_kv * d.D_v, nO = double(d.B) * d.H_q * d.S_q * d.D_v,
                 nS = double(d.B) * d.H_q * d.S_q, head_scores = double(d.S_q) * d.S_kv,
                 all_scores = double(d.B) * d.H_q * head_scores;
    double n_bias = 0;
    if (p.mask == Mask::bias)
        n_bias = head_scores * (p.bias_shape == BiasShape::one ? 1.0 : double(d.B)) *
                 (p.bias_shape == BiasShape::bh ? double(d.H_q) : 1.0);
    const bool bwd = p.dir == Dir::bwd;
    const double io = static_cast<double>(size_of(p.dt)), mask_bytes = static_cast<double>(size_of(mask_dtype(p)));
    const double t = std::max(1u, threads);

    MemoryEstimate e;
    auto add = [&e](std::string what, double bytes) {
        if (bytes <= 0) return;
        e.items.push_back({std::move(what), bytes});
        e.total += bytes;
    };
    const double inputs = 4 * (nQ + nK + nV + n_bias) + (bwd ? 4 * (2 * nO + nS) : 0);
    add("inputs (f32 host tensors)", inputs);
    // Reference forward: O and M_O, stats and M_stats; per thread: scores, pre-mask scores and
    // mask rows (f32), visibility (bytes), accumulators (f64).
    const double ref_fwd = 4 * (2 * nO + 2 * nS) + t * (13.0 * d.S_kv + 16.0 * d.D_v);
    // Reference backward: dQ, dK, dV and their magnitudes; P and dS of one head (f64); dK/dV
    // accumulators (f64); per-thread rows.
    const double ref_bwd = 8 * (nQ + nK + nV) + 16 * head_scores + 16.0 * d.S_kv * (d.D_qk + d.D_v) +
                           t * (13.0 * d.S_kv + 16.0 * std::max(d.D_qk, d.D_v)) + 8.0 * d.S_q;
    add("reference forward (outputs, magnitudes, working set)", ref_fwd);  // bwd: displacement
    if (bwd) add("reference backward (outputs, magnitudes, P and dS of one head in f64)", ref_bwd);
    add("decoded backend outputs (f32)", bwd ? 4 * (nQ + nK + nV) : 4 * (nO + nS));
    if (backend == "onednn") {
        const double in_copies = io * (nQ + nK + nV) + (bwd ? io * 2 * nO + 4 * nS : 0);
        const double out_bufs = bwd ? io * (nQ + nK + nV) : io * nO + 4 * nS;
        add("oneDNN input and guarded output buffers", in_copies + out_bufs);
        if (p.mask == Mask::causal_tl || p.mask == Mask::causal_br)
            add("oneDNN explicit causal mask (S_q x S_kv f32 plus the graph tensor)", head_scores * (4 + mask_bytes));
        else if (p.mask == Mask::bias)
            add("oneDNN bias copy and graph tensor", n_bias * (4 + mask_bytes));
        add("oneDNN intermediates of a non-fused graph (S_q x S_kv f32 per head)", (bwd ? 3 : 2) * 4 * all_scores);
    } else if (backend == "ref") {
        add("ref backend: copy of the inputs and a second reference run", inputs + (bwd ? ref_bwd : ref_fwd));
    }
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
