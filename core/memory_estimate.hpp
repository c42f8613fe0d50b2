// Host memory a case needs, estimated before anything is allocated (the memory guard), and
// the default limit it is compared with (--max-memory).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/problem.hpp"

namespace sdpa {

/// One contribution to the estimate, in bytes.
struct MemoryItem {
    std::string what;
    double bytes = 0;
};

/// Estimated peak host bytes of one case, and its parts. Conservative on purpose: it sums the
/// parts as if all were alive at once. Parts (f32 = 4 bytes, io = the io dtype's size):
///  - inputs: Q, K, V (and O, dO, stats for bwd) and the bias as f32 host tensors;
///  - the reference: its outputs and tolerance magnitudes (f32), and its working set: for bwd
///    the P and dS matrices of one head, 2 x S_q x S_kv f64, plus the dK/dV f64 accumulators,
///    plus per-thread rows (S_kv scores, D accumulators) for `threads` threads; bwd also runs the
///    reference forward to displace O and stats;
///  - the backend's decoded outputs (f32);
///  - backend "onednn": its io-dtype copies of inputs and guarded outputs, the explicit mask it
///    builds for causal masks (S_q x S_kv f32 on the host plus the mask-dtype graph tensor), and
///    the intermediates of a non-fused graph: S_q x S_kv f32 per head and batch, 2 of them for
///    the forward (scores, P) and 3 for bwd (P, dP, dS);
///  - backend "ref": a second reference run and its copy of the inputs;
///  - other backends (test:*): nothing more.
/// Valid problems only (validate() first). A new backend with large buffers should add its
/// part here.
struct MemoryEstimate {
    double total = 0;
    std::vector<MemoryItem> items;
};
MemoryEstimate estimate_host_memory(const Problem& p, std::string_view backend, unsigned threads);

/// MemAvailable from /proc/meminfo in bytes, or 0 when it cannot be read.
std::uint64_t available_memory_bytes();

/// Default --max-memory: 80% of the smallest of MemAvailable and the process's RLIMIT_AS and
/// RLIMIT_DATA soft limits (`ulimit -v`/`-d`); 0 (no limit) when none of them is known.
std::uint64_t default_memory_limit();

/// "3.35 GiB", "512 MiB", "12 KiB", "100 B": binary units with 3 significant digits.
std::string format_bytes(double bytes);

}  // namespace sdpa
