// Work and traffic of one SDPA case: FLOPs under cuDNN's convention and bytes moved.
#pragma once

#include <cstdint>

#include "core/problem.hpp"

namespace sdpa {

/// Floating-point operations of one run of p.dir, cuDNN's convention
/// (docs/perf_and_reports.md#flop-and-byte-counts):
/// with N = visible_scores(p) (visible score elements summed over the batch, per head; exact for
/// causal_tl, causal_br with S_q != S_kv, and padding), fwd_i and fwd_t count
/// 2*H_q*N*(D_qk + D_v) (QK^T and PV), bwd counts 2*H_q*N*(3*D_qk + 2*D_v) (QK^T recomputed,
/// dP = dO V^T, dV = P^T dO, dQ = dS K, dK = dS^T Q). Softmax, scale and mask are not counted.
std::int64_t flops(const Problem& p);

/// Bytes a run must move at least: every input read once and every output written once, at its
/// element type (io dtype for Q, K, V, O, dO, dQ, dK, dV; f32 for stats; mask_dtype(p) for an
/// explicit bias of its broadcast shape; the causal masks and padding lengths count 0), over the
/// roles of its geometry (core/geometry.hpp); a stride-0 (broadcast) dimension is read once.
/// fwd_i: Q, K, V -> O; fwd_t: also stats out; bwd: Q, K, V, O, dO, stats -> dQ, dK, dV;
/// fwd_bwd: fwd_t's bytes plus bwd's.
std::int64_t bytes_moved(const Problem& p);

}  // namespace sdpa
