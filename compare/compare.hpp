// Checks a backend's outputs against the reference: non-finite values, fully masked rows,
// the per-element tolerance bound, and zero trust. Computes verdicts; prints nothing.
#pragma once

#include <array>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "compare/tolerance.hpp"
#include "core/conventions.hpp"
#include "core/enum_table.hpp"
#include "core/geometry.hpp"
#include "core/output_check.hpp"
#include "core/problem.hpp"
#include "core/sdpa_tensors.hpp"
#include "ref/sdpa_ref.hpp"

namespace sdpa {

/// Fraction of reference zeros (outside the structural ones) above which a pass is MISTRUSTED
/// (benchdnn's "zero trust").
inline constexpr double kZeroTrust = 0.5;

/// True when element `idx` of output `out` is 0 (stats: the backend's masked-row value) by the
/// mask's structure, not by value: O, dQ and stats rows of fully masked queries, dK and dV rows
/// of keys no query sees (core/problem.hpp row_fully_masked, key_never_visible).
bool structural(const Problem& p, Output out, const std::array<std::int64_t, 4>& idx);

/// True when the exact value of element `idx` of output `out` is 0 by construction, from the
/// problem alone (never from values; the rule of docs/trust.md#zero-by-construction): dS_ij =
/// P_ij (dP_ij - D_i) is 0 where key j is hidden from query i (P_ij = 0) and wherever query i sees
/// exactly one key (P_ij = 1 and D_i = sum_j P_ij dP_ij = dP_ij; with dropout, both sides carry
/// the same Z_ij / (1 - p)), so: a dQ row of a query that sees one key, a dK row of a key whose
/// every query sees only it, and a dMask element whose every summed dS is such. Such an element is
/// held to the per-element bound like any other, but zero trust does not count it: a kernel that
/// writes 0 there is right. A key no query sees (a structural zero, structural()) is not counted here.
bool zero_by_construction(const Problem& p, Output out, const std::array<std::int64_t, 4>& idx);

/// zero_by_construction() for every element of an output whose reference has dims `dims`, in one
/// sweep (the per-element rule searches the visible keys of each query): `flags` holds one entry per
/// row (a, c) of dims[0] x dims[2] for dQ and dK (the rule does not depend on the column; width 1),
/// and one per element (a, c, j) for dMask (width dims[3]; the bias's broadcast dims are summed
/// over). Empty flags when no element of the output is zero by construction (the common case, known
/// without a sweep).
struct ZeroByConstruction {
    std::vector<std::uint8_t> flags;
    std::int64_t width = 1;
    bool any() const { return !flags.empty(); }
    /// Element (a, any head, c, j): the row a * dims[2] + c.
    bool at(std::int64_t row, std::int64_t j) const {
        return flags[static_cast<std::size_t>(width == 1 ? row : row * width + j)] != 0;
    }
};
ZeroByConstruction zero_by_construction_sweep(const Problem& p, Output out, const std::array<std::int64_t, 4>& dims);

/// True when element `idx` of output `out` is not checked at all: its row is absent from a ragged
/// output `t` (TensorGeom::present; t may be null), or it is a row past the batch's valid length
/// that the backend leaves unspecified (Conventions): O and stats rows past seq_len_q
/// (padded_rows_unspecified), dQ rows past seq_len_q and dK, dV rows past seq_len_kv
/// (padded_grad_rows_unspecified).
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
    /// A sampled check (--check=sample:N, ref/row_sample.hpp): the rows the reference computed;
    /// null for a full check. O, stats and dQ compare its query rows, dK and dV its key rows, dMask
    /// its key columns, and the reference's tensors hold only those (ref_forward_sampled); every
    /// other element of the output is only scanned for non-finite values.
    const RowSample* sample = nullptr;
    /// The sorted indices of dimension 2 (rows) or, for dMask, 3 (columns) that are compared;
    /// null when every one is (a full check, or a sample that holds them all).
    const std::vector<std::int64_t>* sampled() const;
};

/// The rule for output `out` of `p` under the backend's conventions `conv`; `geom` the output's
/// geometry role (null: dense, not fp8, as in unit tests of bare tensors).
OutputRule output_rule(const Problem& p, Output out, const Conventions& conv = {}, const TensorGeom* geom = nullptr);

/// The per-element bound of one output (compare/README.md "Bound"): element i may differ from
/// the reference by at most c (u_eff (M_i + max(M) / 1024) + tiny), with c and tiny (in values)
/// from the rule's tolerance and u_eff = effective_u() over the output's reduction length. The
/// one formula check_output holds every element to (faulty:bound_fraction plants errors by it).
struct ElementBound {
    double c = 0;      ///< rule.tol.c
    double u_eff = 0;  ///< effective_u(rule.tol, reduction length)
    double floor = 0;  ///< max over the finite magnitudes / 1024
    double tiny = 0;   ///< rule.tol.tiny: the absolute term, in values (x the output's fp8 descale)
    /// The bound of an element whose magnitude is `m`.
    double at(float m) const { return c * (u_eff * (static_cast<double>(m) + floor) + tiny); }
};

/// The bound of the rule's output whose magnitudes (the reference's M_X) are `mag`, for a
/// reduction of length `reduction_length` (reduction_length()).
ElementBound element_bound(const OutputRule& rule, const Tensor& mag, std::int64_t reduction_length);

/// The reduction length that effective_u() takes for output `out` of p: S_kv for O and dQ,
/// S_q H_q / H_kv for dK and dV, D_v plus the number of (b, h, i) a dMask element sums over for
/// dMask (each dS carries the dP = dO V^T dot product of length D_v), 0 for stats and amax.
std::int64_t reduction_length(const Problem& p, Output out);

/// What the rule says of each row (a, c) of an output with dims `dims` (a < dims[0], c < dims[2];
/// row a * dims[2] + c): kRowStructural when structural(), kRowUnchecked when unchecked() (both
/// can hold). A row's kind is the same for every head and every element of the row.
/// With a sampled rule (OutputRule::sampled) and dims of the sample's size, row c stands for the
/// output's row sampled()[c] (dMask's rows are all there: its sample is of columns).
inline constexpr std::uint8_t kRowStructural = 1, kRowUnchecked = 2;
std::vector<std::uint8_t> row_kinds(const OutputRule& rule, const std::array<std::int64_t, 4>& dims);

/// The reference's side of one output: its values and magnitudes M (same dims; ref/sdpa_ref.hpp)
/// and the length of the reduction that produced them (reduction_length()).
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
/// no fully masked query row and no key row past a valid length): the distinct stats values of the
/// fully masked rows with their counts (the Conventions::masked_row_stats a backend really uses),
/// and for the rows past the valid lengths (padding; rows a ragged output does not store left out)
/// of O and dQ (past seq_len_q) and of dK and dV (past seq_len_kv) how many elements still hold the
/// NaN prefill (unwritten), are 0, or hold anything else, e.g. "dQ past the valid query lengths:
/// 96 unwritten (NaN prefill), 0 zero, 0 other" (Conventions::padded_rows_unspecified,
/// padded_grad_rows_unspecified). For measuring a vendor's conventions (scripts/device_check.sh).
std::optional<std::string> observed_masked_rows(const Problem& p, const SdpaOutputs& got);

/// All checks for the outputs of p.dir (geometry(p).output_list(), in that order): O (and stats
/// for fwd_t) against `fwd`, or dQ, dK, dV (and dMask) against `bwd`; with fp8 io also the amax
/// output. Exactly one of fwd/bwd is used, by direction. Each output is checked with its role of
/// geometry(p).
/// With `sample` (a sampled check: fwd and bwd from ref_forward_sampled / ref_backward_sampled)
/// each output is compared on the sample's rows (OutputRule::sample), amax is not checked (it is a
/// maximum over every row), and dK and dV also get the column identities (check_column_sums).
std::vector<OutputCheck> check_outputs(const Problem& p, const SdpaOutputs& got,
        const RefForward* fwd, const RefBackward* bwd, const Conventions& conv = {}, const RowSample* sample = nullptr);

}  // namespace sdpa
