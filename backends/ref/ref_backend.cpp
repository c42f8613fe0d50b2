#include "backends/ref/ref_backend.hpp"

#include <omp.h>

#include <fmt/format.h>

#include "ref/sdpa_ref.hpp"

namespace sdpa {

namespace {

Tensor rounded(Tensor t, DType dt) {
    for (float& x : t.data) x = round_to(dt, x);
    t.dt = dt;
    return t;
}

class RefPlan final : public Plan {
public:
    RefPlan(const Problem& p, const SdpaInputs& in) : p_(p), in_(in) {}

    void execute() override { out_ = reference_as_vendor(p_, in_); }
    void poison_outputs() override { out_ = SdpaOutputs{}; }
    SdpaOutputs read_outputs() override { return out_; }

private:
    Problem p_;
    SdpaInputs in_;
    SdpaOutputs out_;
};

}  // namespace

SdpaOutputs reference_as_vendor(const Problem& p, const SdpaInputs& in) {
    SdpaOutputs out;
    const RefOptions opt{true};
    if (p.dir == Dir::bwd) {
        RefBackward b = ref_backward(p, in, opt);
        out.dQ = rounded(std::move(b.dQ), p.dt);
        out.dK = rounded(std::move(b.dK), p.dt);
        out.dV = rounded(std::move(b.dV), p.dt);
    } else {
        RefForward f = ref_forward(p, in, opt);
        out.O = rounded(std::move(f.O), p.dt);
        if (p.dir == Dir::fwd_t) out.stats = std::move(f.stats);
    }
    return out;
}

std::vector<MemoryItem> reference_backend_host_items(const Problem& p, unsigned threads) {
    std::vector<MemoryItem> items{{"reference backend: its copy of the inputs", input_host_bytes(p)}};
    for (MemoryItem item : reference_host_items(p, threads)) {
        item.what = "reference backend: " + item.what;
        items.push_back(std::move(item));
    }
    return items;
}

std::string RefBackend::version() const {
    return fmt::format("ref: sdpabench f32 reference, OpenMP {} threads", omp_get_max_threads());
}

std::unique_ptr<Plan> RefBackend::prepare(const Problem& p, const SdpaInputs& in) {
    return std::make_unique<RefPlan>(p, in);
}

}  // namespace sdpa
