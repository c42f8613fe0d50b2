#include "fillers/fill.hpp"
#include "ref/sdpa_ref.hpp"

namespace sdpa {

void displace(const Problem& p, SdpaInputs& in, const DropoutMask* mask) {
    if (p.dir != Dir::bwd) return;
    RefForward f = ref_forward(p, in, default_ref_options(p, mask));
    for (float& x : f.O.data) x = round_to(p.dt, x);
    f.O.dt = p.dt;
    in.O = std::move(f.O);
    in.stats = std::move(f.stats);
    const Geometry g = geometry(p);
    fold_aliases(g.at(Role::O), in.O);
    fold_aliases(g.at(Role::stats), in.stats);
}

}  // namespace sdpa
