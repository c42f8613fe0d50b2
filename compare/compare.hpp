// Checks a backend's outputs against the reference: non-finite values, fully masked rows,
// the per-element tolerance bound, and zero trust. Computes verdicts; prints nothing.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "backends/backend.hpp"
#include "compare/tolerance.hpp"
#include "core/enum_table.hpp"
#include "core/geometry.hpp"
#include "core/problem.hpp"
#include "core/sdpa_tensors.hpp"
#include "ref/sdpa_ref.hpp"

namespace sdpa {

/// Which check an output failed (the first one that fails decides; none when it passed). The
/// minimizer (driver/minimize.hpp) keeps a case failing the same way by it.
enum class CheckFailure { none, guard, stride_gap, shape, unwritten, ref_nonfinite, nonfinite, masked_rows, bound,
    norm, stats_sum };

inline constexpr std::array<EnumName<CheckFailure>, 11> kCheckFailureNames{{{CheckFailure::none, "none"},
    {CheckFailure::guard, "guard"}, {CheckFailure::stride_gap, "stride_gap"}, {CheckFailure::shape, "shape"},
    {CheckFailure::unwritten, "unwritten"}, {CheckFailure::ref_nonfinite, "ref_nonfinite"},
    {CheckFailure::nonfinite, "nonfinite"}, {CheckFailure::masked_rows, "masked_rows"},
    {CheckFailure::bound, "bound"}, {CheckFailure::norm, "norm"}, {CheckFailure::stats_sum, "stats_sum"}}};

inline std::string_view format_as(CheckFailure v) { return enum_name(kCheckFailureNames, v); }

/// Fraction of reference zeros (outside the structural ones) above which a pass is MISTRUSTED
/// (benchdnn's "zero trust").
inline constexpr double kZeroTrust = 0.5;

/// Verdict for one output tensor.
struct OutputCheck {
    Output output = Output::O;
    bool pass = true;
    CheckFailure failure = CheckFailure::none;  ///< the check that failed (none when pass)
    bool mistrusted = false;  ///< the reference is mostly zeros: a pass proves little
    std::string reason;       ///< why it failed ("" when it passed)
    /// worst_index, got, expected, err and bound describe one element (false when the failure
    /// is about the buffer: guard bands, stride gaps, unwritten elements, shape)
    bool located = true;
    double worst_ratio = 0;   ///< max over elements of |err| / bound (margins: < 1 passes)
    std::array<std::int64_t, 4> worst_index{0, 0, 0, 0};  ///< (b, h, i, j) of the worst element
    float got = 0, expected = 0;
    double err = 0, bound = 0;
    std::int64_t nonfinite = 0;  ///< elements non-finite in `got` where the reference is finite
    std::int64_t ref_nonfinite = 0;  ///< non-finite reference elements (outside masked rows):
                                     ///< the case overflows f32 and proves nothing
    double zero_fraction = 0;    ///< zeros in the reference outside structural (masked) zeros
    // Whole-output checks (compare/extra_checks.hpp):
    double norm_worst = 0;       ///< max over heads of | ||X|| - ||X_ref|| | / (c u_eff ||M||); < 1 passes
    double norm_ratio = 1;       ///< ||X|| / ||X_ref|| at that head
    std::array<std::int64_t, 2> norm_head{0, 0};  ///< (b, h) of that head
    double stats_sum_worst = 0;  ///< stats: max |sum_j exp(s_ij - stats_i) - 1| / slack; < 1 passes
    double got_zero_fraction = 0;    ///< zeros in `got` outside the structural zeros
    std::int64_t structural_zeros = 0;  ///< elements the mask forces to 0
    /// fp8 outputs: reference values past the largest code x descale (expected saturated; the
    /// check is then MISTRUSTED: compare/README.md).
    std::int64_t saturated = 0;
    /// Elements not checked: rows a ragged output does not store, rows a backend leaves unspecified
    /// (Conventions::padded_rows_unspecified, padded_grad_rows_unspecified).
    std::int64_t unchecked = 0;
    /// Why the check is MISTRUSTED when that is not zero trust (fp8 saturation, nothing checked):
    /// the sentence the case's reason shows ("" for zero trust, whose sentence the driver writes).
    std::string mistrust;
};

/// True when element `idx` of output `out` is 0 (stats: the backend's masked-row value) by the
/// mask's structure, not by value: O, dQ and stats rows of fully masked queries, dK and dV rows
/// of keys no query sees (core/problem.hpp row_fully_masked, key_never_visible).
bool structural(const Problem& p, Output out, const std::array<std::int64_t, 4>& idx);

/// True when element `idx` of output `out` is not checked at all: its row is absent from a ragged
/// output `t` (TensorGeom::present; t may be null), or it is a row past the batch's valid length
/// that the backend leaves unspecified (Conventions): O and stats rows past seq_len_q
/// (padded_rows_unspecified), dQ rows past seq_len_q and dK, dV rows past seq_len_kv
/// (padded_grad_rows_unspecified).
bool unchecked(const Problem& p, Output out, const std::array<std::int64_t, 4>& idx, const TensorGeom* t,
        const Conventions& conv);

/// Compares `got` with `ref` element by element under tolerance(p.dt, out) and magnitude `mag`
/// (same shape). Also: rows that the mask hides completely (O/dQ rows of fully masked queries,
/// dK/dV rows of keys no query sees) must be exactly 0. `reduction_length` feeds effective_u().
/// For stats, fully masked rows are exempt from the bound: they must hold exactly the
/// backend's documented value `conv.masked_row_stats` (ref: +inf, oneDNN: 0).
/// `integrity` is what the guard bands saw: any touched guard byte fails ("wrote outside"), any
/// changed element of a stride gap fails ("wrote into the stride gap of X at ..."), any element
/// still holding the NaN prefill fails ("not written"). `geom`, the output's geometry role (null:
/// dense, not fp8): its unchecked rows are skipped (unchecked()); for fp8 the absolute term is in
/// values (tiny x descale) and a reference value past max_finite x descale is expected saturated.
OutputCheck check_output(const Problem& p, Output out, const Tensor& got, const Tensor& ref,
        const Tensor& mag, std::int64_t reduction_length, const Conventions& conv = {},
        const OutputIntegrity& integrity = {}, const TensorGeom* geom = nullptr);

/// What a backend wrote where the math leaves the value open, as one -v line (nullopt when p has
/// no fully masked query row and no key row past a valid length): the distinct stats values of the
/// fully masked rows with their counts (the Conventions::masked_row_stats a backend really uses),
/// and for the rows past the valid lengths (padding; rows a ragged output does not store left out)
/// of O and dQ (past seq_len_q) and of dK and dV (past seq_len_kv) how many elements still hold the
/// NaN prefill (unwritten), are 0, or hold anything else, e.g. "dQ past the valid query lengths:
/// 96 unwritten (NaN prefill), 0 zero, 0 other" (Conventions::padded_rows_unspecified,
/// padded_grad_rows_unspecified). For measuring a vendor's conventions (scripts/device_check.sh).
std::optional<std::string> observed_masked_rows(const Problem& p, const SdpaOutputs& got);

/// All checks for the outputs of p.dir: O (and stats for fwd_t) against `fwd`, or dQ, dK, dV
/// (and dMask) against `bwd`; with fp8 io also the amax output. Exactly one of fwd/bwd is used,
/// by direction. Each output is checked with its role of geometry(p).
std::vector<OutputCheck> check_outputs(const Problem& p, const SdpaOutputs& got,
        const RefForward* fwd, const RefBackward* bwd, const Conventions& conv = {});

}  // namespace sdpa
