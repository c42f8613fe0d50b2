// Host memory a case needs, estimated before anything is allocated (the memory guard), and
// the default limit it is compared with (--max-memory).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/problem.hpp"

namespace sdpa {

/// One contribution to the estimate, in bytes.
struct MemoryItem {
    std::string what;
    double bytes = 0;
};

/// Estimated peak host bytes of one case, and its parts. Conservative on purpose: it sums the
/// parts as if all were alive at once.
struct MemoryEstimate {
    double total = 0;
    std::vector<MemoryItem> items;
};

/// Bytes of the f32 host input tensors of p: Q, K, V, the bias (at bias_dims), and for bwd and
/// fwd_bwd O, dO and stats (element counts from the geometry, core/geometry.hpp).
double input_host_bytes(const Problem& p);

/// Bytes of one strided vendor buffer per input and output role of p at its element type: the
/// span of its strides (core/geometry.hpp), stride gaps included. What a backend allocates for
/// its copies of the inputs and its guarded outputs (guards excluded).
double vendor_buffer_bytes(const Problem& p);

/// One run of the tiled reference (ref/) for p.dir, in bytes: its outputs and tolerance
/// magnitudes (f32), K (and for the backward V) as transposed 64-key panels, the per-row D and r
/// of the backward (f64), and per thread the 64 x 64 tiles and 64-row panels of its scratch,
/// for `threads` threads. The backward also counts the forward that displaces O and stats.
/// Nothing grows with S_q x S_kv (the reference is flash-style).
std::vector<MemoryItem> reference_host_items(const Problem& p, unsigned threads);

/// The estimate for p on a backend whose own buffers are `backend_items`
/// (Backend::host_memory): the f32 inputs, the reference the check runs (counted in every mode:
/// the guard stays conservative), the decoded backend outputs (f32), and the backend's parts.
/// Valid problems only (validate() first).
MemoryEstimate estimate_host_memory(const Problem& p, unsigned threads, const std::vector<MemoryItem>& backend_items);

/// MemAvailable from /proc/meminfo in bytes, or 0 when it cannot be read.
std::uint64_t available_memory_bytes();

/// The --max-memory rule on given figures (bytes; 0 = not known): 80% of the smallest known of
/// `available`, `as_limit` and `data_limit`; 0 (no limit) when none is known.
std::uint64_t memory_limit_from(std::uint64_t available, std::uint64_t as_limit, std::uint64_t data_limit);

/// Default --max-memory: memory_limit_from(MemAvailable, the process's RLIMIT_AS and RLIMIT_DATA
/// soft limits (`ulimit -v`/`-d`)). MemAvailable moves as other processes run, so two calls
/// seldom agree to the byte.
std::uint64_t default_memory_limit();

/// The share of the device's free memory the device-memory guard allows by default (the rest is
/// the library's and the runtime's: work space, handles, the allocator's slack).
inline constexpr double kDeviceMemoryShare = 0.9;

/// The device-memory guard's limit in bytes: `max_device_memory` when non-zero (--max-device-memory),
/// else kDeviceMemoryShare of `free_bytes`; 0 (no limit) when neither is known.
std::uint64_t device_memory_limit_from(std::uint64_t max_device_memory, std::uint64_t free_bytes);

/// "3.35 GiB", "512 MiB", "12 KiB", "100 B": binary units with 3 significant digits.
std::string format_bytes(double bytes);

}  // namespace sdpa
