#include "fillers/fill.hpp"
#include "ref/sdpa_ref.hpp"

namespace sdpa {

void displace(const Problem& p, SdpaInputs& in, const DropoutMask* mask) {
    if (p.dir != Dir::bwd) return;
    RefForward f = ref_forward(p, in, default_ref_options(p, mask));
    const Geometry g = geometry(p);
    const float descale = g.at(Role::O).descale;  // fp8: O's codes times its descale
    for (float& x : f.O.data) x = round_scaled(p.dt, x, descale);
    f.O.dt = p.dt;
    in.O = std::move(f.O);
    in.stats = std::move(f.stats);
    fold_aliases(g.at(Role::O), in.O);
    fold_aliases(g.at(Role::stats), in.stats);
}

}  // namespace sdpa
