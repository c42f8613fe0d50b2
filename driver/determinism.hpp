// Bitwise comparisons of two runs of a vendor: --mode=B (the same plan run twice must give
// bitwise-equal outputs) and the dropout reruns that demand bitwise equality
// (driver/dropout_checks.hpp).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "backends/backend.hpp"
#include "core/sdpa_tensors.hpp"

namespace sdpa {

/// The first of `outputs` (a step's Geometry::output_list(), report order) whose tensors in `a` and
/// `b` differ bit for bit (f32 bit patterns of the decoded values, lossless for every io dtype):
/// "dMask: 3 element(s) differ, first at (b,h,i,j): X then Y", or "dQ: 12 elements then 10" when
/// the sizes differ; nullopt when every one of them is bitwise equal.
std::optional<std::string> bitwise_difference(const std::vector<Output>& outputs, const SdpaOutputs& a,
        const SdpaOutputs& b);

/// --mode=B: poisons the plan's outputs (NaN prefill), executes it again and compares every one
/// of `outputs` (dMask and the fp8 amax included) of the new run with `first` bit for bit.
/// Returns nullopt when all are equal, else "not deterministic between two runs: " and
/// bitwise_difference()'s sentence. Throws BackendError as Plan::execute does.
std::optional<std::string> rerun_differs(Plan& plan, const std::vector<Output>& outputs, const SdpaOutputs& first);

}  // namespace sdpa
