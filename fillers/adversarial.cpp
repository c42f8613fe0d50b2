// Adversarial fill families: patterns planted into exact-filled inputs (fill.hpp documents them).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "fillers/fill.hpp"

namespace sdpa {

namespace {

using i64 = std::int64_t;

/// Key positions of tile_spikes that exist for S_kv, distinct, in increasing order.
std::vector<i64> spike_positions(i64 skv) {
    std::vector<i64> pos;
    for (i64 j : {i64{63}, i64{64}, i64{127}, i64{128}, skv - 1})
        if (j >= 0 && j < skv && std::find(pos.begin(), pos.end(), j) == pos.end()) pos.push_back(j);
    std::sort(pos.begin(), pos.end());
    return pos;
}

void plant_lse_underflow(const Problem& p, SdpaInputs& in) {
    const Dims& d = p.dims;
    for (float& x : in.K.data) x = std::fabs(x) == 1.f ? 2.f : 1.f;  // integers in [1, 2]
    const float v = scale_tensor_value(p);
    // The scale of a score: the scale op's, times the codes' descales for fp8 (the plant writes codes).
    const double descales = is_fp8(p.dt) ? static_cast<double>(p.fp8.of(Fp8Tensor::Q)) * p.fp8.of(Fp8Tensor::K) : 1.0;
    const double eff = (p.scale_op == ScaleOp::mul ? v : 1.0 / v) * descales;
    const double need = 100.0 + std::log(static_cast<double>(d.S_kv));
    const double a = std::ceil(need / (std::fabs(eff) * static_cast<double>(d.D_qk)));
    // Rounded up onto the io type's grid (a rounded down could miss the target; fp8 saturates at
    // its largest finite value, which then may miss it: a weaker pattern, docs/knobs_fill.md#fill-families).
    const float q = round_to(p.dt, static_cast<float>((eff > 0 ? -a : a) * (1 + 2 * unit_roundoff(p.dt))));
    for (i64 b = 0; b < d.B; ++b)
        for (i64 h = 0; h < d.H_q; ++h)
            for (i64 i = 1; i < d.S_q; i += 4)
                for (i64 k = 0; k < d.D_qk; ++k) in.Q.at(b, h, i, k) = q;
}

void plant_spike_k(const Problem& p, SdpaInputs& in) {
    const Dims& d = p.dims;
    const i64 c = d.D_qk / 2;
    for (i64 b = 0; b < d.B; ++b)
        for (i64 h = 0; h < d.H_kv; ++h)
            for (i64 j = 0; j < d.S_kv; ++j) in.K.at(b, h, j, c) = 70.f;
    if (in.dO.empty()) return;
    // Tiny but representable: f16's normal range ends at 6e-5; an fp8 code 16 subnormal steps up.
    const double tiny = p.dt == DType::f16 ? 1e-4 : is_fp8(p.dt) ? 16 * smallest_subnormal(p.dt) : 1e-8;
    // Reuse the exact integers as a deterministic pattern: (x + 0.5) * tiny, never zero.
    for (float& x : in.dO.data) x = round_to(p.dt, static_cast<float>((x + 0.5) * tiny));
}

void plant_tile_spikes(const Problem& p, SdpaInputs& in) {
    const Dims& d = p.dims;
    const std::vector<i64> pos = spike_positions(d.S_kv);
    const auto n = static_cast<i64>(pos.size());
    for (i64 b = 0; b < d.B; ++b) {
        for (i64 h = 0; h < d.H_kv; ++h)
            for (i64 t = 0; t < n; ++t) in.K.at(b, h, pos[static_cast<std::size_t>(t)], t % d.D_qk) = 16.f;
        for (i64 h = 0; h < d.H_q; ++h)
            for (i64 i = 0; i < d.S_q; ++i) in.Q.at(b, h, i, (i % n) % d.D_qk) = 16.f;
    }
}

}  // namespace

void plant_adversarial(const Problem& p, SdpaInputs& in) {
    switch (p.fill) {
        case Fill::lse_underflow: plant_lse_underflow(p, in); break;
        case Fill::spike_k: plant_spike_k(p, in); break;
        case Fill::tile_spikes: plant_tile_spikes(p, in); break;
        default: break;
    }
}

}  // namespace sdpa
