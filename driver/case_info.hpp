// The text description of a case that reports, perf templates and --expect conditions read.
#pragma once

#include "backends/registry.hpp"
#include "driver/case.hpp"
#include "driver/knobs.hpp"
#include "reports/case_result.hpp"

namespace sdpa {

/// Backend, engine, mode, dir, dt, mask, descriptor (without n=), name, sizes, attention kind,
/// --cpu-isa level and every knob of `c` (CaseInfo). What only the backend knows (the ISA it
/// dispatched to, its library's version, the device) is set by run_case.
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
    const Dims& d = c.prb.dims;
    std::tie(i.B, i.H_q, i.H_kv, i.S_q, i.S_kv, i.D_qk, i.D_v) = std::tie(d.B, d.H_q, d.H_kv, d.S_q, d.S_kv, d.D_qk, d.D_v);
    i.attention = attention_kind(d);
    i.cpu_isa = fmt::format("{}", c.cpu_isa);
    for (const Knob& k : knob_table())
        if (k.applies_to(c)) i.knobs.push_back(fmt::format("{}={}", k.name, k.print(c)));
    return i;
}

}  // namespace sdpa
