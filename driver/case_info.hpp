// The text description of a case that reports and perf templates print.
#pragma once

#include "backends/registry.hpp"
#include "driver/case.hpp"
#include "reports/case_result.hpp"

namespace sdpa {

/// Backend, engine, mode, dir, dt, mask, descriptor (without n=) and name of `c` as text.
inline CaseInfo case_info(const Case& c) {
    CaseInfo i;
    i.backend = c.backend;
    i.engine = fmt::format("{}", engine_of(c.backend));
    i.mode = fmt::format("{}", c.mode);
    i.dir = fmt::format("{}", c.prb.dir);
    i.dt = fmt::format("{}", c.prb.dt);
    i.mask = fmt::format("{}", c.prb.mask);
    i.dropout = c.prb.dropout ? dropout_name(*c.prb.dropout) : "";
    i.prb = descriptor(c.prb.dims);
    i.name = c.prb.name;
    return i;
}

}  // namespace sdpa
