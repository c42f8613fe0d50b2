// The dropout checks of one case (docs/knobs_dropout.md#checks-that-need-no-knowledge-of-the-generator):
// the mask the vendor applies, the generator-free statistics on it, and the vendor reruns that
// tell a kernel that ignores --dropout's seed or runs p = 0 differently from no dropout.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "backends/backend.hpp"
#include "core/dropout.hpp"
#include "core/output_check.hpp"
#include "reports/case_result.hpp"

namespace sdpa {

/// The keep mask `backend` applies for p (null without dropout). Throws BackendError
/// UNIMPLEMENTED when a backend that accepted a dropout case names no mask.
std::shared_ptr<const DropoutMask> vendor_mask(const Backend& backend, const Problem& p);

/// The dropout report of p on mask m: the mask's description and the generator-free statistics
/// (core/dropout.hpp mask_statistics; only when p > 0, since p = 0 keeps everything), with a
/// failure when they fail.
DropoutReport dropout_report(const Problem& p, const DropoutMask& m);

/// The -v line of a dropout report.
std::string dropout_note(const DropoutReport& d);

/// Visible elements where the masks of seed and seed + 1 must differ before the outputs must:
/// fewer differences may all sit where P is too small to change a rounded output.
inline constexpr std::int64_t kMinVisibleDifferences = 64;

/// What the vendor reruns need from the checked step: the backend, the inputs it ran on and the
/// outputs it gave, whether bitwise equality may be demanded, and the step's checks against its
/// reference (check_outputs with the step's RefForward or RefBackward) for other outputs.
struct DropoutRerun {
    Backend& backend;
    const SdpaInputs& in;
    const SdpaOutputs& out;
    /// --mode=B or --deterministic=true: the p = 0 run must be bitwise the run without dropout.
    bool bitwise = false;
    std::function<std::vector<OutputCheck>(const Problem&, const SdpaOutputs&)> check;
};

/// The vendor-level dropout rules, by rerunning the vendor on the same inputs; failures go to d.
/// p = 0: the problem without dropout must give the same outputs: bitwise with `run.bitwise` and
/// --fill=exact (where every product and sum is exact: with other fills a vendor may run the
/// graph with the Dropout op through another kernel whose rounding differs, as oneDNN does),
/// otherwise within each output's bound (the rerun passes `run.check` against the same
/// reference), so that a backward that accumulates atomically and differs by an ulp from run to
/// run is not FAILED for it. p > 0: the seed changed to seed + 1 must change the mask (unless
/// identical masks are likelier than 1e-9 by chance) and, when the masks differ in at least
/// kMinVisibleDifferences visible elements and some output is nonzero, some output.
void dropout_rerun_checks(const Problem& p, const DropoutMask& mask, const DropoutRerun& run, DropoutReport& d);

}  // namespace sdpa
