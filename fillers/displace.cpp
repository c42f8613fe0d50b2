#include "fillers/fill.hpp"
#include "ref/sdpa_ref.hpp"

#include <cmath>

namespace sdpa {

std::int64_t displace(const Problem& p, SdpaInputs& in, const DropoutMask* mask, RefQK* qk) {
    if (p.dir != Dir::bwd) return 0;
    RefOptions opt = default_ref_options(p, mask);
    opt.magnitudes = false;
    opt.save_qk = qk;
    RefForward f = ref_forward(p, in, opt);
    const Geometry g = geometry(p);
    const float descale = g.at(Role::O).descale;  // fp8: O's codes times its descale
    const double limit = is_fp8(p.dt) ? overflow_threshold(p.dt) * descale : INFINITY;
    std::int64_t saturated = 0;
    float* o = f.O.data.data();
    const auto n = static_cast<std::int64_t>(f.O.size());
#pragma omp parallel for reduction(+ : saturated) schedule(static) if (n >= (std::int64_t{1} << 16))
    for (std::int64_t i = 0; i < n; ++i) {
        saturated += std::fabs(o[i]) >= limit;
        o[i] = round_scaled(p.dt, o[i], descale);
    }
    f.O.dt = p.dt;
    in.O = std::move(f.O);
    in.stats = std::move(f.stats);
    fold_aliases(g.at(Role::O), in.O);
    fold_aliases(g.at(Role::stats), in.stats);
    return saturated;
}

}  // namespace sdpa
