// The reference run as a backend: lets the whole pipeline run without a vendor library and
// checks the harness against itself (every case must PASS).
#pragma once

#include "backends/backend.hpp"

namespace sdpa {

/// The outputs of p.dir as a vendor kernel would store them: ref_forward/ref_backward with
/// rounding emulation, O/dQ/dK/dV rounded to the io dtype, stats f32. Shapes as SdpaOutputs.
/// Shared by RefBackend and the fault-injecting backend.
SdpaOutputs reference_as_vendor(const Problem& p, const SdpaInputs& in);

/// Host bytes of a backend that runs the reference as its kernel: its copy of the inputs and a
/// second reference run (core/memory_estimate.hpp). Shared with the fault-injecting backend.
std::vector<MemoryItem> reference_backend_host_items(const Problem& p, unsigned threads);

/// Runs ref_forward/ref_backward with rounding emulation and rounds the outputs to the io
/// dtype, as a vendor kernel would store them (stats stay f32). Its plan copies the inputs.
class RefBackend final : public Backend {
public:
    std::string_view name() const override { return "ref"; }
    std::string version() const override;
    std::optional<Unsupported> support(const Problem&) const override { return std::nullopt; }
    std::vector<MemoryItem> host_memory(const Problem& p, unsigned threads) const override {
        return reference_backend_host_items(p, threads);
    }
    std::unique_ptr<Plan> prepare(const Problem& p, const SdpaInputs& in) override;
};

}  // namespace sdpa
