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

    void execute() override {
        const RefOptions opt{true};
        if (p_.dir == Dir::bwd) {
            RefBackward b = ref_backward(p_, in_, opt);
            out_.dQ = rounded(std::move(b.dQ), p_.dt);
            out_.dK = rounded(std::move(b.dK), p_.dt);
            out_.dV = rounded(std::move(b.dV), p_.dt);
        } else {
            RefForward f = ref_forward(p_, in_, opt);
            out_.O = rounded(std::move(f.O), p_.dt);
            if (p_.dir == Dir::fwd_t) out_.stats = std::move(f.stats);
        }
    }
    void poison_outputs() override { out_ = SdpaOutputs{}; }
    SdpaOutputs read_outputs() override { return out_; }

private:
    Problem p_;
    SdpaInputs in_;
    SdpaOutputs out_;
};

}  // namespace

std::string RefBackend::version() const {
    return fmt::format("ref: sdpabench f32 reference, OpenMP {} threads", omp_get_max_threads());
}

std::unique_ptr<Plan> RefBackend::prepare(const Problem& p, const SdpaInputs& in) {
    return std::make_unique<RefPlan>(p, in);
}

}  // namespace sdpa
