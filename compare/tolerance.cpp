#include "compare/tolerance.hpp"

#include <cmath>

namespace sdpa {

namespace {

/// c per (io dtype, output), set by scripts/calibrate.sh (compare/README.md): the smallest
/// "round" value >= 2 x (the largest |err|/bound measured over random correct cases of every CPU
/// vendor, times the c of that run): 3,000 oneDNN cases (seed 2026), then 2,000 each of oneDNN,
/// torch:flash and torch:math (seed 2026, 2026-12-06), where PyTorch's CPU flash set the bf16 and
/// f16 gradients' and bf16 O's (its dV error reaches 3.6 u M). Stats are f32 whatever the io dtype.
/// dMask is f32 whatever the io dtype (the graph's dS), its u that of f32; its c comes from
/// scripts/calibrate.sh --dmask (1,000 cases, seed 2026; f16 is f32's, unmeasured on a CPU
/// without f16 kernels). f32 O and dV: 4 and 8 (they were 72 and 112), since the magnitudes carry
/// the score errors' share (ref/sdpa_ref.hpp): the largest measured |err|/bound times c was 1.13
/// and 1.33 over 2,000 cases of the script's own draw (seed 2026) and 5,000 of --random (seeds
/// 2027, 2028: scales, strides, padding, dropout). f32 dQ and dK stay 72 and 56: their worst
/// cases (26 for dQ: one valid key, where dP - D cancels, bounded by W's P r_i) are not score errors.
/// e4m3 and e5m2 are NOT calibrated (no fp8 kernel has run yet: the cuDNN backend needs a GPU):
/// c = 4 for every output, with the reference emulating the fp8 rounding of P and of the scaled dS
/// (ref/sdpa_ref.hpp) and the outputs' saturation (compare/compare.cpp); scripts/calibrate.sh
/// --backend=cudnn --dt=e4m3 sets them on a GPU. amax (fp8 only) is a c over the entries' own
/// magnitudes (ref/sdpa_ref.hpp RefForward::M_amax), also uncalibrated.
struct Row {
    DType dt;
    double O, stats, dQ, dK, dV, dMask, amax;
    bool calibrated;
};
constexpr Row kTable[] = {
    //            O      stats  dQ     dK     dV     dMask  amax
    {DType::f32, 4.0, 48.0, 72.0, 56.0, 8.0, 40.0, 4.0, true},
    {DType::bf16, 6.0, 48.0, 5.0, 5.0, 8.0, 16.0, 4.0, true},
    {DType::f16, 6.0, 48.0, 4.0, 6.0, 10.0, 40.0, 4.0, true},
    {DType::e4m3, 4.0, 48.0, 4.0, 4.0, 4.0, 40.0, 4.0, false},
    {DType::e5m2, 4.0, 48.0, 4.0, 4.0, 4.0, 40.0, 4.0, false},
};

/// The smallest normal f32 (and bf16, which shares its exponent), 2^-126: a CPU kernel may flush
/// subnormal results to zero (FTZ/DAZ; oneDNN does: --random found an f32 head of O whose values
/// are all near 1e-42 come back 0), so no absolute error below it is a wrong kernel.
constexpr double kFlushedToZero = 0x1p-126;

}  // namespace

Tolerance tolerance(DType io, Output out) {
    const Row* row = &kTable[0];
    for (const Row& r : kTable)
        if (r.dt == io) row = &r;
    // Half the spacing near zero of f16 and fp8 (the fp8 one in codes: compare/compare.cpp scales
    // it by the output's descale).
    const double tiny = io == DType::f16 ? 0x1p-24 : is_fp8(io) ? smallest_subnormal(io) / 2 : kFlushedToZero;
    switch (out) {
        case Output::O: return {row->O, unit_roundoff(io), tiny};
        case Output::stats: return {row->stats, unit_roundoff(DType::f32), kFlushedToZero};
        case Output::dQ: return {row->dQ, unit_roundoff(io), tiny};
        case Output::dK: return {row->dK, unit_roundoff(io), tiny};
        case Output::dV: return {row->dV, unit_roundoff(io), tiny};
        case Output::dMask: return {row->dMask, unit_roundoff(DType::f32), kFlushedToZero};
        case Output::amax: return {row->amax, unit_roundoff(io), 0};
    }
    return {4.0, unit_roundoff(io), tiny};
}

bool calibrated(DType io) {
    for (const Row& r : kTable)
        if (r.dt == io) return r.calibrated;
    return false;
}

double effective_u(const Tolerance& t, std::int64_t reduction_length) {
    return t.u + unit_roundoff(DType::f32) * std::sqrt(static_cast<double>(reduction_length));
}

}  // namespace sdpa
