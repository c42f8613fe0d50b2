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
#include "core/problem.hpp"
#include "core/sdpa_tensors.hpp"
#include "ref/sdpa_ref.hpp"

namespace sdpa {

/// Verdict for one output tensor.
struct OutputCheck {
    Output output = Output::O;
    bool pass = true;
    bool mistrusted = false;  ///< the reference is mostly zeros: a pass proves little
    std::string reason;       ///< why it failed ("" when it passed)
    double worst_ratio = 0;   ///< max over elements of |err| / bound (margins: < 1 passes)
    std::array<std::int64_t, 4> worst_index{0, 0, 0, 0};  ///< (b, h, i, j) of the worst element
    float got = 0, expected = 0;
    double err = 0, bound = 0;
    std::int64_t nonfinite = 0;  ///< elements non-finite in `got` where the reference is finite
    std::int64_t ref_nonfinite = 0;  ///< non-finite reference elements (outside masked rows):
                                     ///< the case overflows f32 and proves nothing
    double zero_fraction = 0;    ///< zeros in the reference outside structural (masked) zeros
};

/// Compares `got` with `ref` element by element under tolerance(p.dt, out) and magnitude `mag`
/// (same shape). Also: rows that the mask hides completely (O/dQ rows of fully masked queries,
/// dK/dV rows of keys no query sees) must be exactly 0. `reduction_length` feeds effective_u().
/// For stats, fully masked rows are exempt from the bound: they must hold exactly the
/// backend's documented value `conv.masked_row_stats` (ref: +inf, oneDNN: 0).
/// `integrity` is what the guard bands saw: any touched guard byte fails ("wrote outside"),
/// any element still holding the NaN prefill fails ("not written").
OutputCheck check_output(const Problem& p, Output out, const Tensor& got, const Tensor& ref,
        const Tensor& mag, std::int64_t reduction_length, const Conventions& conv = {},
        const OutputIntegrity& integrity = {});

/// All checks for the outputs of p.dir: O (and stats for fwd_t) against `fwd`, or dQ, dK, dV
/// against `bwd`. Exactly one of fwd/bwd is used, by direction.
std::vector<OutputCheck> check_outputs(const Problem& p, const SdpaOutputs& got,
        const RefForward* fwd, const RefBackward* bwd, const Conventions& conv = {});

}  // namespace sdpa
