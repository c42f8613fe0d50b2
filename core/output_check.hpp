// The verdict of one output's check, as plain data: what compare/ computes, the driver judges
// and every report (and the --isolate pipe) carries. The failure record (CheckFailure) names
// the check that failed.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "core/enum_table.hpp"
#include "core/sdpa_tensors.hpp"

namespace sdpa {

/// Which check an output failed (the first one that fails decides; none when it passed). The
/// minimizer (driver/minimize.hpp) keeps a case failing the same way by it.
enum class CheckFailure { none, guard, stride_gap, shape, unwritten, ref_nonfinite, mag_nonfinite, nonfinite,
    masked_rows, bound, norm, stats_sum, column_sum };

inline constexpr auto kCheckFailureNames = std::to_array<EnumName<CheckFailure>>({{CheckFailure::none, "none"},
    {CheckFailure::guard, "guard"}, {CheckFailure::stride_gap, "stride_gap"}, {CheckFailure::shape, "shape"},
    {CheckFailure::unwritten, "unwritten"}, {CheckFailure::ref_nonfinite, "ref_nonfinite"},
    {CheckFailure::mag_nonfinite, "mag_nonfinite"},
    {CheckFailure::nonfinite, "nonfinite"}, {CheckFailure::masked_rows, "masked_rows"},
    {CheckFailure::bound, "bound"}, {CheckFailure::norm, "norm"}, {CheckFailure::stats_sum, "stats_sum"},
    {CheckFailure::column_sum, "column_sum"}});

inline std::string_view format_as(CheckFailure v) { return enum_name(kCheckFailureNames, v); }

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
    /// Elements whose reference is finite but whose magnitude (the bound's M, compare/README.md)
    /// is not: the bound there is not a number, so no error could fail it; the case overflows
    /// f32 in the magnitudes' sums and proves nothing there.
    std::int64_t mag_nonfinite = 0;
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
    /// Elements whose exact value the problem makes 0 (compare/compare.hpp zero_by_construction,
    /// docs/trust.md): held to the bound like the others, but zero trust does not count them.
    std::int64_t zero_by_construction = 0;
    /// Elements of the output the pass went over (checked, structural and unchecked alike; 0 when
    /// the buffer failed before it): with the compare phase's time, the comparison's rate.
    std::int64_t elements = 0;
    /// A sampled check (--check=sample:N): the rows of each head it compared (dMask: its columns)
    /// and how many there are; 0 and 0 for a full check. The other elements were scanned for
    /// non-finite values only: `unsampled_nonfinite` of them are.
    std::int64_t sampled = 0, sample_of = 0, unsampled_nonfinite = 0;
    /// dK, dV of a sampled check (compare/extra_checks.hpp check_column_sums): max over (b, h_kv, d)
    /// of |sum_j X_jd - expected| / bound; < 1 passes (0 when not checked).
    double column_sum_worst = 0;
    /// Why the check is MISTRUSTED when that is not zero trust (fp8 saturation, nothing checked):
    /// the sentence the case's reason shows ("" for zero trust, whose sentence the driver writes).
    std::string mistrust;
    /// The terms of the bound at the worst element, bound = c (u_eff (mag + floor) + tiny)
    /// (compare/README.md): the constant, the effective roundoff, the reference's magnitude there,
    /// max(M) / 1024 and the absolute term (what -v2 prints).
    double bound_c = 0, bound_u_eff = 0, bound_mag = 0, bound_floor = 0, bound_tiny = 0;
};

}  // namespace sdpa
