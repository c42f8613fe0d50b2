// Checks a backend's outputs against the reference: non-finite values, fully masked rows,
// the per-element tolerance bound, and zero trust. Computes verdicts; prints nothing.
#pragma once

#include <array>
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

/// True when element `idx` of output `out` is not checked at all: its row is absent from a ragged
/// output `t` (TensorGeom::present; t may be null), or it is an O or stats row past the batch's
/// valid query length and the backend leaves those unspecified (Conventions).
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
/// no fully masked query row): the distinct stats values of the fully masked rows with their
/// counts (the Conventions::masked_row_stats a backend really uses), and for the O rows past the
/// valid query lengths (padding; rows a ragged O does not store left out) how many elements still
/// hold the NaN prefill (unwritten), are 0, or hold anything else. For measuring a vendor's
/// conventions (scripts/device_check.sh).
std::optional<std::string> observed_masked_rows(const Problem& p, const SdpaOutputs& got);

/// All checks for the outputs of p.dir (geometry(p).output_list(), in that order): O (and stats
/// for fwd_t) against `fwd`, or dQ, dK, dV (and dMask) against `bwd`; with fp8 io also the amax
/// output. Exactly one of fwd/bwd is used, by direction. Each output is checked with its role of
/// geometry(p).
std::vector<OutputCheck> check_outputs(const Problem& p, const SdpaOutputs& got,
        const RefForward* fwd, const RefBackward* bwd, const Conventions& conv = {});

}  // namespace sdpa
