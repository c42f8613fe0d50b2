// Builders the unit tests share: a problem of given sizes and knobs, and a case of a problem.
#pragma once

#include <string_view>

#include "core/problem.hpp"
#include "driver/case.hpp"

namespace sdpa::test {

/// A problem of sizes `d` (B, H_q, H_kv, S_q, S_kv, D_qk, D_v) with direction `dir`, io dtype
/// `dt`, `mask` and `fill`; every knob not given keeps Problem's default.
inline Problem make_problem(Dims d, Dir dir = Problem{}.dir, DType dt = Problem{}.dt, Mask mask = Problem{}.mask,
        Fill fill = Problem{}.fill) {
    Problem p;
    p.dims = d;
    p.dir = dir;
    p.dt = dt;
    p.mask = mask;
    p.fill = fill;
    return p;
}

/// A case of problem `p` on `backend`, every other case field at its default.
inline Case make_case(const Problem& p, std::string_view backend = kDefaultBackend) {
    Case c;
    c.prb = p;
    c.backend = backend;
    return c;
}

}  // namespace sdpa::test
