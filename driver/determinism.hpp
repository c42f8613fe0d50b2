// --mode=B: the vendor run twice on the same inputs must give bitwise-equal outputs.
#pragma once

#include <optional>
#include <string>

#include "backends/backend.hpp"
#include "core/sdpa_tensors.hpp"

namespace sdpa {

/// Poisons the plan's outputs (NaN prefill), executes it again and compares every output of
/// the new run with `first` bit for bit (f32 bit patterns of the decoded values, which are
/// lossless for every io dtype). Returns nullopt when all are equal, else a reason naming the
/// first differing output, its element (b,h,i,j), both values and the count of differing
/// elements. Throws BackendError as Plan::execute does.
std::optional<std::string> rerun_differs(Plan& plan, const SdpaOutputs& first);

}  // namespace sdpa
