// The faults the faulty backend injects: one per kind of bug public reports describe.
#pragma once

#include <array>
#include <string_view>

#include "core/enum_table.hpp"

namespace sdpa {

/// One injected bug (backends/faulty/faulty_backend.hpp says how each is made).
enum class FaultKind {
    causal_off_by_one,          ///< causal masks let each query see one key too many (j <= i + 1)
    causal_tl_br_swapped,       ///< top-left and bottom-right causal alignment swapped
    stats_log2,                 ///< stats written as log2 instead of natural-log LSE
    stats_first_head_of_group,  ///< stats of every query head = those of its GQA group's first head
    gqa_no_reduce,              ///< dK/dV from the first query head of each group only
    dq_no_scale,                ///< dQ missing the softmax scale factor
    drop_last_key,              ///< the last valid key ignored (loop bound off by one)
    tail_unmasked,              ///< keys past the last multiple of 64 of S_kv: score 0, never masked
    stale_head_pad,             ///< dQ columns past the last multiple of 16 of D_qk hold stale values
    nan_masked_rows,            ///< fully masked rows of O and dQ are NaN instead of 0
    stats_strides_ignored,      ///< stats written densely ([B,H_q,S_q]) whatever the stats strides are
    do_strides_as_o,            ///< dO read with O's strides, whatever dO's strides are
    stride_gap_write,           ///< every output row also stores one element past its last column
    dropout_one_mask,           ///< dropout: every (b, h) uses the mask of (0, 0) (a wrong per-head random index)
    dropout_bwd_offset,         ///< dropout: the backward regenerates its mask from offset + 1
    dropout_ds_dropped_p,       ///< dropout: dS = P_d o (Z o dP/(1-p) - D), the dropped P instead of P
    dropout_no_rescale,         ///< dropout: P_d = Z o P, the 1/(1-p) rescale missing
    dmask_no_reduce,            ///< dMask: the first (b, h, row) of each broadcast group, not their sum
    fp8_scale_o_dropped,        ///< fp8: O stored without scale_O (codes = O, not O / descale_O)
    fp8_qk_descales_dropped,    ///< fp8: the scores miss descale_Q x descale_K (S = scale Q_code K_code^T)
    dq_nondeterministic,        ///< dQ one ulp off on alternate elements, the others on the next run
    dmask_nondeterministic,     ///< dMask one ulp off on alternate elements, the others on the next run
    writes_input,               ///< Q and dO used as scratch once read: their first 16 bytes overwritten after the run
    /// not a bug to catch: O, dQ, dK, dV off by a set fraction of each element's bound (a kernel
    /// that got numerically worse but still passes; the margins of scripts/history)
    bound_fraction,
};

/// Each kind's spelling (its size is the initializer's: std::to_array counts the rows).
inline constexpr auto kFaultNames = std::to_array<EnumName<FaultKind>>({
    {FaultKind::causal_off_by_one, "causal_off_by_one"},
    {FaultKind::causal_tl_br_swapped, "causal_tl_br_swapped"},
    {FaultKind::stats_log2, "stats_log2"},
    {FaultKind::stats_first_head_of_group, "stats_first_head_of_group"},
    {FaultKind::gqa_no_reduce, "gqa_no_reduce"},
    {FaultKind::dq_no_scale, "dq_no_scale"},
    {FaultKind::drop_last_key, "drop_last_key"},
    {FaultKind::tail_unmasked, "tail_unmasked"},
    {FaultKind::stale_head_pad, "stale_head_pad"},
    {FaultKind::nan_masked_rows, "nan_masked_rows"},
    {FaultKind::stats_strides_ignored, "stats_strides_ignored"},
    {FaultKind::do_strides_as_o, "do_strides_as_o"},
    {FaultKind::stride_gap_write, "stride_gap_write"},
    {FaultKind::dropout_one_mask, "dropout_one_mask"},
    {FaultKind::dropout_bwd_offset, "dropout_bwd_offset"},
    {FaultKind::dropout_ds_dropped_p, "dropout_ds_dropped_p"},
    {FaultKind::dropout_no_rescale, "dropout_no_rescale"},
    {FaultKind::dmask_no_reduce, "dmask_no_reduce"},
    {FaultKind::fp8_scale_o_dropped, "fp8_scale_o_dropped"},
    {FaultKind::fp8_qk_descales_dropped, "fp8_qk_descales_dropped"},
    {FaultKind::dq_nondeterministic, "dq_nondeterministic"},
    {FaultKind::dmask_nondeterministic, "dmask_nondeterministic"},
    {FaultKind::writes_input, "writes_input"},
    {FaultKind::bound_fraction, "bound_fraction"},
});
inline std::string_view format_as(FaultKind v) { return enum_name(kFaultNames, v); }

/// True for the kinds that are bugs the checks must catch (each has cases/selftest/KIND.cases);
/// false for bound_fraction, a kernel that got worse but passes (for scripts/history's margins).
inline constexpr bool caught_by_checks(FaultKind v) { return v != FaultKind::bound_fraction; }

}  // namespace sdpa
