// Checks a backend's outputs against the reference: non-finite values, fully masked rows,
// the per-element tolerance bound, and zero trust. Computes verdicts; prints nothing.
#pragma once

#include <array>
#include <cmath>
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
    /// (Conventions::padded_rows_unspecified).
    std::int64_t unchecked = 0;
    /// Elements of the output the pass went over (checked, structural and unchecked alike; 0 when
    /// the buffer failed before it): with the compare phase's time, the comparison's rate.
    std::int64_t elements = 0;
    /// Why the check is MISTRUSTED when that is not zero trust (fp8 saturation, nothing checked):
    /// the sentence the case's reason shows ("" for zero trust, whose sentence the driver writes).
    std::string mistrust;
};

/// True when element `idx` of output `out` is 0 (stats: the backend's masked-row value) by the
/// mask's structure, not by value: O, dQ and stats rows of fully masked queries, dK and dV rows
/// of keys no query sees (core/problem.hpp row_fully_masked, key_never_visible).
bool structural(const Problem& p, Output out, const std::array<std::int64_t, 4>& idx);

/// True when element `idx` of output `out` is not checked at all: its row is absent from a ragged
/// output `t` (TensorGeom::present; t may be null), or it is an O or stats row past the batch's
/// valid query length and the backend leaves those unspecified (Conventions).
bool unchecked(const Problem& p, Output out, const std::array<std::int64_t, 4>& idx, const TensorGeom* t,
        const Conventions& conv);

/// How one output of a problem is judged, fixed by the problem, the output and the backend's
/// conventions before anything runs: the tolerance row, the fp8 range, and (through p, conv and
/// geom) which rows are structural zeros or not checked (structural(), unchecked(); both depend on
/// the row alone, so check_output asks once per row, never per element). Built by output_rule();
/// refers to the Problem it was built from, which must outlive it.
struct OutputRule {
    const Problem& p;
    Output output = Output::O;
    Conventions conv;
    /// The output's geometry role (null: dense, not fp8): its absent ragged rows are not checked,
    /// and for fp8 its descale scales the values.
    const TensorGeom* geom = nullptr;
    /// tolerance(p.dt, output), with `tiny` in values (x descale for fp8).
    Tolerance tol{};
    float descale = 1.f;  ///< fp8: the output's descale (value = code x descale); 1 otherwise
    double limit = 0;     ///< the largest value the output can hold (max_finite x descale)
    /// |reference| from which an fp8 output is expected saturated (cuDNN's conversion is
    /// satfinite, core/dtype.hpp): overflow_threshold x descale; INFINITY when nothing saturates.
    double saturate = INFINITY;
};

/// The rule for output `out` of `p` under the backend's conventions `conv`; `geom` the output's
/// geometry role (null: dense, not fp8, as in unit tests of bare tensors).
OutputRule output_rule(const Problem& p, Output out, const Conventions& conv = {}, const TensorGeom* geom = nullptr);

/// What the rule says of each row (a, c) of an output with dims `dims` (a < dims[0], c < dims[2];
/// row a * dims[2] + c): kRowStructural when structural(), kRowUnchecked when unchecked() (both
/// can hold). A row's kind is the same for every head and every element of the row.
inline constexpr std::uint8_t kRowStructural = 1, kRowUnchecked = 2;
std::vector<std::uint8_t> row_kinds(const OutputRule& rule, const std::array<std::int64_t, 4>& dims);

/// The reference's side of one output: its values and magnitudes M (same dims; ref/sdpa_ref.hpp)
/// and the length of the reduction that produced them (effective_u(): S_kv for O and dQ, S_q
/// H_q/H_kv for dK and dV, 0 for stats).
struct RefOutput {
    const Tensor& value;
    const Tensor& mag;
    std::int64_t reduction_length = 0;
};

/// Compares `got` with the reference `ref` under `rule`, in this order (the first failure names
/// it: CheckFailure): `integrity`, what the guard bands saw (a touched guard byte fails "wrote
/// outside", a changed stride-gap element "wrote into the stride gap", an element still holding
/// the NaN prefill "not written"); the shape; then one pass over the rows of got, ref.value and
/// ref.mag (OpenMP over rows, no allocation per element) that skips the unchecked rows, requires
/// the structural rows to be exactly 0 (stats: conv.masked_row_stats), and for every other
/// element the bound |got - ref| <= c (u_eff (M + max(M) / 1024) + tiny) (compare/README.md),
/// with non-finite values, fp8 saturation, the worst element, the zero counts and the per-head
/// sums of squares taken in the same pass; then the whole-output checks (compare/extra_checks.hpp:
/// per-head norms, or for stats the softmax convention) and zero trust. Never throws for a
/// mismatch: the verdict is in the result.
OutputCheck check_output(const OutputRule& rule, const Tensor& got, const RefOutput& ref,
        const OutputIntegrity& integrity = {});

/// What a backend wrote where the math leaves the value open, as one -v line (nullopt when p has
/// no fully masked query row): the distinct stats values of the fully masked rows with their
/// counts (the Conventions::masked_row_stats a backend really uses), and for the O rows past the
/// valid query lengths (padding; rows a ragged O does not store left out) how many elements still
/// hold the NaN prefill (unwritten), are 0, or hold anything else. For measuring a vendor's
/// conventions (scripts/device_check.sh).
std::optional<std::string> observed_masked_rows(const Problem& p, const SdpaOutputs& got);

/// All checks for the outputs of p.dir: O (and stats for fwd_t) against `fwd`, or dQ, dK, dV
/// (and dMask) against `bwd`; with fp8 io also the amax output. Exactly one of fwd/bwd is used,
/// by direction. Each output is checked with its role of geometry(p).
std::vector<OutputCheck> check_outputs(const Problem& p, const SdpaOutputs& got,
        const RefForward* fwd, const RefBackward* bwd, const Conventions& conv = {});

}  // namespace sdpa
