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

void check_inputs(const Problem& p, const SdpaInputs& in, bool backward) {
    const Dims& d = p.dims;
    if (d.B <= 0 || d.H_q <= 0 || d.H_kv <= 0 || d.S_q <= 0 || d.S_kv <= 0 || d.D_qk <= 0 || d.D_v <= 0)
        throw std::invalid_argument("reference: every dimension must be positive");
    if (d.H_q % d.H_kv != 0)
        throw std::invalid_argument(
            fmt::format("reference: H_q = {} is not a multiple of H_kv = {}", d.H_q, d.H_kv));
    check_dims(in.Q, "Q", {d.B, d.H_q, d.S_q, d.D_qk});
    check_dims(in.K, "K", {d.B, d.H_kv, d.S_kv, d.D_qk});
    check_dims(in.V, "V", {d.B, d.H_kv, d.S_kv, d.D_v});
    if (p.mask == Mask::bias) {
        const auto& bd = in.bias.dims;
        const bool ok = (bd[0] == 1 || bd[0] == d.B) && (bd[1] == 1 || bd[1] == d.H_q) &&
                        (bd[2] == 1 || bd[2] == d.S_q) && bd[3] == d.S_kv &&
                        in.bias.size() == static_cast<std::size_t>(bd[0] * bd[1] * bd[2] * bd[3]);
        if (!ok)
            throw std::invalid_argument(fmt::format(
                "reference: bias has dims [{}], expected [1|{},1|{},1|{},{}]", fmt::join(bd, ","), d.B,
                d.H_q, d.S_q, d.S_kv));
    }
    if (backward) {
        check_dims(in.O, "O", {d.B, d.H_q, d.S_q, d.D_v});
        check_dims(in.dO, "dO", {d.B, d.H_q, d.S_q, d.D_v});
        check_dims(in.stats, "stats", {d.B, d.H_q, d.S_q, 1});
    }
}

}  // namespace sdpa::refk
