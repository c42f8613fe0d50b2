// The reference run as a backend: lets the whole pipeline run without a vendor library and
// checks the harness against itself (every case must PASS).
#pragma once

#include <functional>

#include "backends/backend.hpp"
#include "backends/guarded_buffer.hpp"
#include "core/geometry.hpp"
#include "ref/sdpa_ref.hpp"

namespace sdpa {

/// The outputs of p.dir as a vendor kernel would store them: ref_forward/ref_backward with
/// rounding emulation (P and the scaled dS rounded to the io type; with `round_intermediates`
/// false, kept in f32 as PyTorch's CPU kernels keep them), O/dQ/dK/dV rounded to the io dtype
/// (fp8: onto its grid scaled by the role's descale), stats and the fp8 amax f32. Shapes as
/// SdpaOutputs. Shared by RefBackend, the test backends and the fault-injecting backend. `opt`
/// (its emulate_rounding replaced): with dropout and no opt.dropout, the mask is sdpabench's own
/// generator (ref_dropout_mask).
SdpaOutputs reference_as_vendor(const Problem& p, const SdpaInputs& in, RefOptions opt = {}, bool round_intermediates = true);

/// Host bytes of a backend that runs the reference as its kernel: its strided buffers (inputs and
/// guarded outputs at their spans) and a second reference run (core/memory_estimate.hpp). Shared
/// with the fault-injecting backend.
std::vector<MemoryItem> reference_backend_host_items(const Problem& p, unsigned threads);

/// What a reference-backed plan does on each run; the reference backend uses the defaults, the
/// fault-injecting backend (backends/faulty/) replaces some to inject its bug.
struct RefKernel {
    /// The geometry with which input `role` is read from its strided buffer (default: its own).
    std::function<TensorGeom(const Geometry&, Role)> read_as;
    /// Computes the outputs from the inputs read back (default: reference_as_vendor).
    std::function<SdpaOutputs(const Problem&, const SdpaInputs&)> compute;
    /// The geometry with which output `role` is written into its guarded buffer (default: its own).
    std::function<TensorGeom(const Geometry&, Role)> write_as;
    /// Called after every output is written, with the output's buffer (default: nothing).
    std::function<void(Role, GuardedBuffer&)> after_write;
    /// Called after the outputs are written, with each input's buffer (default: nothing): a
    /// fault that uses an input as scratch once it has read it.
    std::function<void(Role, std::vector<std::byte>&)> after_run;
    /// Lines for -v.
    std::vector<std::string> notes;
    /// The plan's implementation name (Plan::implementation); "" names the reference itself:
    /// "sdpabench ref_forward" or "sdpabench ref_backward" by the direction.
    std::string impl;
};

/// A plan that behaves like a vendor kernel on real strided buffers: prepare() packs every input
/// role into a buffer with its geometry's strides (gaps hold kInputGapCanary,
/// backends/strided_buffer.hpp) and makes a guarded, NaN-prefilled buffer per output; execute()
/// reads the inputs back from those buffers, computes, and writes the outputs at their strides,
/// so the guard, unwritten-element and stride-gap checks apply as to any vendor.
std::unique_ptr<Plan> make_reference_plan(const Problem& p, const SdpaInputs& in, RefKernel kernel = {});

/// The reference backend's --backend name (its registry row's, backends/registry.cpp).
inline constexpr std::string_view kRefBackend = "ref";

/// Runs ref_forward/ref_backward with rounding emulation and rounds the outputs to the io
/// dtype, as a vendor kernel would store them (stats stay f32), on strided buffers
/// (make_reference_plan). fp8 is UNIMPLEMENTED: the reference backend stands for no fp8 kernel
/// (the test-only backend test:fp8 runs the same plan on fp8 buffers for sdpabench's own tests).
class RefBackend final : public Backend {
public:
    std::string_view name() const override { return kRefBackend; }
    std::string version() const override;
    std::optional<Unsupported> support(const Problem& p) const override;
    std::vector<MemoryItem> host_memory(const Problem& p, unsigned threads) const override {
        return reference_backend_host_items(p, threads);
    }
    /// sdpabench's own counter-based generator (core/dropout.hpp ref_dropout_mask).
    std::shared_ptr<const DropoutMask> dropout_mask(const Problem& p) const override { return ref_dropout_mask(p); }
    std::unique_ptr<Plan> prepare(const Problem& p, const SdpaInputs& in) override;
};

}  // namespace sdpa
