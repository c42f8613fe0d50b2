#include "compare/tolerance.hpp"

#include <cmath>

namespace sdpa {

namespace {

/// c per (io dtype, output), set by scripts/calibrate.sh (compare/README.md): the smallest
/// "round" value >= 2 x (the largest |err|/bound measured over 3,000 random correct oneDNN
/// cases, seed 2026, times the c of that run). Stats are f32 whatever the io dtype.
/// dMask is f32 whatever the io dtype (the graph's dS), its u that of f32; its c comes from
/// scripts/calibrate.sh --dmask (1,000 cases, seed 2026; f16 is f32's, unmeasured on a CPU
/// without f16 kernels).
struct Row {
    DType dt;
    double O, stats, dQ, dK, dV, dMask;
};
constexpr Row kTable[] = {
    //            O      stats  dQ     dK     dV     dMask
    {DType::f32, 72.0, 48.0, 72.0, 56.0, 112.0, 40.0},
    {DType::bf16, 4.0, 48.0, 4.0, 4.0, 4.0, 16.0},
    {DType::f16, 6.0, 48.0, 4.0, 4.0, 6.0, 40.0},
};

}  // namespace

Tolerance tolerance(DType io, Output out) {
    const Row* row = &kTable[0];
    for (const Row& r : kTable)
        if (r.dt == io) row = &r;
    const double tiny = io == DType::f16 ? 0x1p-24 : io == DType::bf16 ? 0x1p-133 : 0x1p-149;
    switch (out) {
        case Output::O: return {row->O, unit_roundoff(io), tiny};
        case Output::stats: return {row->stats, unit_roundoff(DType::f32), 0x1p-149};
        case Output::dQ: return {row->dQ, unit_roundoff(io), tiny};
        case Output::dK: return {row->dK, unit_roundoff(io), tiny};
        case Output::dV: return {row->dV, unit_roundoff(io), tiny};
        case Output::dMask: return {row->dMask, unit_roundoff(DType::f32), 0x1p-149};
    }
    return {4.0, unit_roundoff(io), tiny};
}

double effective_u(const Tolerance& t, std::int64_t reduction_length) {
    return t.u + unit_roundoff(DType::f32) * std::sqrt(static_cast<double>(reduction_length));
}

}  // namespace sdpa
