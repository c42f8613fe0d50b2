#include "fillers/fill.hpp"
#include "ref/sdpa_ref.hpp"

#include <cmath>

namespace sdpa {

std::int64_t displace(const Problem& p, SdpaInputs& in, const DropoutMask* mask) {
    if (p.dir != Dir::bwd) return 0;
    RefForward f = ref_forward(p, in, default_ref_options(p, mask));
    const Geometry g = geometry(p);
    const float descale = g.at(Role::O).descale;  // fp8: O's codes times its descale
    const double limit = is_fp8(p.dt) ? overflow_threshold(p.dt) * descale : INFINITY;
    std::int64_t saturated = 0;
    for (float& x : f.O.data) {
        saturated += std::fabs(x) >= limit;
        x = round_scaled(p.dt, x, descale);
    }
    f.O.dt = p.dt;
    in.O = std::move(f.O);
    in.stats = std::move(f.stats);
    fold_aliases(g.at(Role::O), in.O);
    fold_aliases(g.at(Role::stats), in.stats);
    return saturated;
}

}  // namespace sdpa
