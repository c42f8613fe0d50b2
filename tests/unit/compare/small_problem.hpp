// The small problem the compare tests check outputs of: B 1, H_q 2, H_kv 2, S_q 6, S_kv 4, D 8.
#pragma once

#include "core/problem.hpp"

namespace sdpa::test {

/// A 1x2x2x6x4x8x8 problem with `mask` and io type `dt`.
inline Problem small(Mask mask = Mask::none, DType dt = DType::bf16) {
    Problem p;
    p.dims = {1, 2, 2, 6, 4, 8, 8};
    p.mask = mask;
    p.dt = dt;
    return p;
}

}  // namespace sdpa::test
