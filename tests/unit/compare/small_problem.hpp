// The small problem the compare tests check outputs of: B 1, H_q 2, H_kv 2, S_q 6, S_kv 4, D 8.
#pragma once

#include "core/problem.hpp"

#include "../test_helpers.hpp"

namespace sdpa::test {

/// A 1x2x2x6x4x8x8 problem with `mask` and io type `dt`.
inline Problem small(Mask mask = Mask::none, DType dt = DType::bf16) {
    return make_problem({1, 2, 2, 6, 4, 8, 8}, Problem{}.dir, dt, mask);
}

}  // namespace sdpa::test
