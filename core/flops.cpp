#include "core/flops.hpp"

namespace sdpa {

std::int64_t flops(const Problem& p) {
    const Dims& d = p.dims;
    const std::int64_t n = visible_scores(p);
    const std::int64_t fwd = d.D_qk + d.D_v, bwd = 3 * d.D_qk + 2 * d.D_v;
    const std::int64_t per_score = p.dir == Dir::bwd ? bwd : p.dir == Dir::fwd_bwd ? fwd + bwd : fwd;
    return 2 * d.H_q * n * per_score;
}

std::int64_t bytes_moved(const Problem& p) {
    const Dims& d = p.dims;
    const std::int64_t io = static_cast<std::int64_t>(size_of(p.dt));
    const std::int64_t q = d.B * d.H_q * d.S_q * d.D_qk, k = d.B * d.H_kv * d.S_kv * d.D_qk,
                       v = d.B * d.H_kv * d.S_kv * d.D_v, o = d.B * d.H_q * d.S_q * d.D_v,
                       stats = d.B * d.H_q * d.S_q;
    std::int64_t bias = 0;
    if (p.mask == Mask::bias) {
        const auto bd = bias_dims(p);
        bias = bd[0] * bd[1] * bd[2] * bd[3] * static_cast<std::int64_t>(size_of(mask_dtype(p)));
    }
    switch (p.dir) {
        case Dir::fwd_i: return (q + k + v + o) * io + bias;
        case Dir::fwd_t: return (q + k + v + o) * io + stats * 4 + bias;
        case Dir::bwd: return (2 * (q + k + v) + 2 * o) * io + stats * 4 + bias;
        case Dir::fwd_bwd:  // the forward's traffic, then the backward's
            return (q + k + v + o) * io + stats * 4 + (2 * (q + k + v) + 2 * o) * io + stats * 4 + 2 * bias;
    }
    return 0;
}

}  // namespace sdpa
