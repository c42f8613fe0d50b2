#include "core/flops.hpp"

#include "core/geometry.hpp"

namespace sdpa {

std::int64_t flops(const Problem& p) {
    const Dims& d = p.dims;
    const std::int64_t n = visible_scores(p);
    std::int64_t per_score = 0;  // fwd_bwd: the forward's, then the backward's (directions())
    for (const Dir dir : directions(p.dir)) per_score += dir == Dir::bwd ? 3 * d.D_qk + 2 * d.D_v : d.D_qk + d.D_v;
    return 2 * d.H_q * n * per_score;
}

std::int64_t bytes_moved(const Problem& p) {
    if (const auto dirs = directions(p.dir); dirs.size() > 1) {  // each direction's traffic
        std::int64_t sum = 0;
        for (const Dir dir : dirs) {
            Problem q = p;
            q.dir = dir;
            sum += bytes_moved(q);
        }
        return sum;
    }
    std::int64_t total = 0;
    const Geometry g = geometry(p);
    for (const TensorGeom* t : g.all()) {
        if ((!t->input && !t->output) || t->role == Role::seq_len_q || t->role == Role::seq_len_kv) continue;
        // Distinct elements: a broadcast (stride-0) dimension is read once.
        std::int64_t n = 1;
        for (std::size_t k = 0; k < 4; ++k)
            if (t->strides[k] != 0) n *= t->dims[k];
        total += n * static_cast<std::int64_t>(size_of(t->type));
    }
    return total;
}

}  // namespace sdpa
