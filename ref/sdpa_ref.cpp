// Input checks shared by the tiled reference forward (ref_forward.cpp) and backward
// (ref_backward.cpp); the kernels themselves live in ref_kernels.hpp.
#include "ref/ref_kernels.hpp"

#include <array>
#include <cstddef>
#include <stdexcept>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace sdpa::refk {

namespace {

void check_dims(const Tensor& t, const char* name, std::array<i64, 4> want) {
    if (t.dims != want || t.size() != static_cast<std::size_t>(want[0] * want[1] * want[2] * want[3]))
        throw std::invalid_argument(fmt::format("reference: {} has dims [{}], expected [{}]", name,
            fmt::join(t.dims, ","), fmt::join(want, ",")));
}

}  // namespace

std::pair<const DropoutMask*, float> dropout_of(const Problem& p, const RefOptions& opt) {
    if (!p.dropout || p.dropout->p == 0.f) return {nullptr, 1.f};
    if (!opt.dropout)
        throw std::invalid_argument("reference: a problem with dropout needs the vendor's keep mask (RefOptions::dropout)");
    return {opt.dropout, opt.dropout_no_rescale ? 1.f : 1.f / (1.f - p.dropout->p)};
}

Geometry ref_geometry(const Problem& p, bool backward) {
    Problem q = p;
    q.dir = backward ? Dir::bwd : Dir::fwd_t;
    return geometry(q);
}

void check_inputs(const Problem& p, const SdpaInputs& in, bool backward) {
    const Dims& d = p.dims;
    if (d.B <= 0 || d.H_q <= 0 || d.H_kv <= 0 || d.S_q <= 0 || d.S_kv <= 0 || d.D_qk <= 0 || d.D_v <= 0)
        throw std::invalid_argument("reference: every dimension must be positive");
    if (d.H_q % d.H_kv != 0)
        throw std::invalid_argument(
            fmt::format("reference: H_q = {} is not a multiple of H_kv = {}", d.H_q, d.H_kv));
    const Geometry g = ref_geometry(p, backward);
    for (const TensorGeom* t : g.inputs()) {
        const Tensor* x = in.of(t->role);
        if (!x) continue;  // padding lengths: the reference reads them from the Problem
        check_dims(*x, fmt::format("{}", t->role).c_str(), t->dims);
    }
}

}  // namespace sdpa::refk
