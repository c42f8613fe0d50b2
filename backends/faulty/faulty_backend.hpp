// A backend that is the reference with one injected bug (--backend=faulty:KIND): proves the
// harness catches each kind of fault (cases/selftest/, scripts/selftest.sh).
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "backends/backend.hpp"
#include "backends/faulty/faults.hpp"

namespace sdpa {

/// The backend faulty:KIND (backends/registry.hpp kFaultyPrefix) for `kind`, a kFaultNames
/// spelling, or nullptr for an unknown kind. Its plans are reference plans on real strided buffers (backends/ref/ref_backend.hpp
/// make_reference_plan: rounding emulation on, outputs rounded to the io dtype, masked-row stats
/// +inf like the reference) with the fault applied:
/// - causal_off_by_one: mask j <= i + 1 (tl) / j <= i + 1 + S_kv - S_q (br); no-op without a causal mask.
/// - causal_tl_br_swapped: the other causal alignment (no-op unless S_q != S_kv).
/// - stats_log2: stats / ln 2.  - stats_first_head_of_group: stats[h] = stats[group's first head].
/// - gqa_no_reduce: dK, dV from the first query head of each group (dO of the others taken as 0).
/// - dq_no_scale: dQ divided by the scale factor.  - drop_last_key: key valid_kv - 1 masked.
/// - tail_unmasked: keys j >= 64 * floor(S_kv / 64) get score 0 (K row read as 0) and are visible
///   to every valid query.
/// - stale_head_pad: dQ column d >= 16 * floor(D_qk / 16) holds column d - 16 (0.5 when d < 16).
/// - nan_masked_rows: O and dQ rows of fully masked queries are NaN.
/// - stats_strides_ignored: stats written with dense [B,H_q,S_q,1] strides into the stats buffer,
///   whatever its strides (no-op when they are dense; e.g. --strides=stats:bshd catches it).
/// - do_strides_as_o: dO read from its buffer with O's strides (no-op when they agree; e.g.
///   --strides=dO:bshd catches it).
/// - stride_gap_write: after the outputs are written, each row (b,h,s) of every output also
///   stores 0 one element past its last column, at offset(b,h,s,D-1) + stride_d, where that
///   position is in a stride gap (an unmasked tail store; no-op for layouts without gaps).
/// The dropout faults (no-ops without --dropout; the mask the backend declares is always the
/// correct ref_dropout_mask, so the reference is exact and the outputs differ):
/// - dropout_one_mask: every (b, h) applies the mask of (0, 0).
/// - dropout_bwd_offset: the backward regenerates its mask with offset + 1 (forward correct).
/// - dropout_ds_dropped_p: dS = P_d o (Z o dP / (1-p) - D) (backward only).
/// - dropout_no_rescale: P_d = Z o P, without 1/(1-p), in the forward and the backward.
/// - dmask_no_reduce: dMask (--dmask) is dS of the first batch, head and row of each group the
///   bias broadcasts over, not their sum (no-op for a full [B,H_q,S_q,S_kv] bias).
/// The nondeterministic faults: right to within an ulp on every run, but not bitwise the same from
/// run to run (a backward that accumulates atomically, as GPU flash backwards and cuDNN's
/// non-deterministic mode do). Run r of the backend's plan number q moves every nonzero element e
/// of the output with e + q + r odd one step of its type's grid away from zero: two runs of one
/// plan in a row (--mode=B) differ at every nonzero element, and so do the first runs of two plans
/// made one after the other (the dropout reruns). PASSED in --mode=C, FAILED in --mode=B (no-op
/// for fp8 outputs, whose grid is the descale's):
/// - dq_nondeterministic: dQ (in the io type).  - dmask_nondeterministic: dMask (f32).
/// Not a bug the checks must catch:
/// - bound_fraction: every element of O, dQ, dK and dV that the checks compare (not the exact
///   zeros of fully masked rows) moved off the reference by F x its bound (compare/compare.hpp
///   element_bound), up and down in turn (so the head norms stay), then stored in the io type:
///   its worst_ratio is F up to that one rounding (a few hundredths in f32; up to 1/c of the bound,
///   1/4 for bf16, in bf16 and f16), so with F < 1 - 1/c the case PASSES and with F > 1 + 1/c it
///   FAILS. F is the environment's kBoundFractionVariable (default 0.5), as a library build is
///   part of a run's set-up and not of its cases: a history can plant a margin step at one
///   revision with the case ids unchanged (tests/e2e/history_e2e.sh). Stats, dMask and fp8 io
///   are left exact.
/// Every kind computes its outputs N times per run, N from the environment's kRepeatVariable
/// (default 1): a kernel that does N times the work, a slowdown a history can plant at one
/// revision whatever the machine's load. A malformed F or N makes every case INVALID_ARGUMENTS
/// naming it.
std::unique_ptr<Backend> make_faulty_backend(std::string_view kind);

/// The fault kinds (kFaultNames's spellings), for the registry's family row.
std::vector<std::string> fault_kind_names();

/// The environment variable that sets faulty:bound_fraction's F.
inline constexpr const char* kBoundFractionVariable = "SDPABENCH_FAULTY_BOUND_FRACTION";
/// The environment variable that sets how many times a faulty backend's run computes its outputs.
inline constexpr const char* kRepeatVariable = "SDPABENCH_FAULTY_REPEAT";

}  // namespace sdpa
