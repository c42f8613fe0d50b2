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

}  // namespace

std::string RefBackend::version() const {
    return fmt::format("ref: sdpabench f32 reference, OpenMP {} threads", omp_get_max_threads());
}

BackendRun RefBackend::run(const Problem& p, const SdpaInputs& in) {
    BackendRun r;
    const RefOptions opt{true};
    if (p.dir == Dir::bwd) {
        RefBackward b = ref_backward(p, in, opt);
        r.out.dQ = rounded(std::move(b.dQ), p.dt);
        r.out.dK = rounded(std::move(b.dK), p.dt);
        r.out.dV = rounded(std::move(b.dV), p.dt);
    } else {
        RefForward f = ref_forward(p, in, opt);
        r.out.O = rounded(std::move(f.O), p.dt);
        if (p.dir == Dir::fwd_t) r.out.stats = std::move(f.stats);
    }
    return r;
}

}  // namespace sdpa
