#include "fillers/fill.hpp"

#include <cmath>
#include <cstdint>
#include <numbers>

namespace sdpa {

namespace {

/// Tensor ids that seed each tensor's stream.
enum class TensorId : std::uint64_t { Q = 1, K = 2, V = 3, dO = 4, bias = 5 };

/// splitmix64 finaliser (Steele, Lea, Flood: "Fast splittable pseudorandom number generators",
/// OOPSLA 2014): a counter-based generator, so element i's value depends only on
/// (seed, tensor, i) and a parallel fill gives the same bytes for any thread count.
std::uint64_t mix(std::uint64_t x) {
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

std::uint64_t stream_key(std::uint64_t seed, TensorId t) {
    return mix(mix(seed) ^ (static_cast<std::uint64_t>(t) * 0xd1b54a32d192ed03ull));
}

/// Uniform in [0, 1) from 53 random bits of (key, counter).
double uniform(std::uint64_t key, std::uint64_t counter) {
    return static_cast<double>(mix(key ^ mix(counter)) >> 11) * 0x1p-53;
}

/// Integer uniform in [lo, hi].
int uniform_int(std::uint64_t key, std::uint64_t counter, int lo, int hi) {
    return lo + static_cast<int>(uniform(key, counter) * (hi - lo + 1));
}

/// Standard normal by Box-Muller from two counters.
double normal(std::uint64_t key, std::uint64_t i) {
    const double u1 = 1.0 - uniform(key, 2 * i);  // (0, 1]
    const double u2 = uniform(key, 2 * i + 1);
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
}

/// Fills t with values exactly representable in t.dt.
void fill_tensor(Tensor& t, const Problem& p, TensorId id, int lo, int hi) {
    const std::uint64_t key = stream_key(p.seed, id);
    const auto n = static_cast<std::int64_t>(t.size());
    float* data = t.data.data();
    if (p.fill == Fill::exact) {
#pragma omp parallel for schedule(static)
        for (std::int64_t i = 0; i < n; ++i)
            data[i] = static_cast<float>(uniform_int(key, static_cast<std::uint64_t>(i), lo, hi));
    } else {
#pragma omp parallel for schedule(static)
        for (std::int64_t i = 0; i < n; ++i)
            data[i] = round_to(t.dt, static_cast<float>(normal(key, static_cast<std::uint64_t>(i))));
    }
}

}  // namespace

SdpaInputs fill_inputs(const Problem& p) {
    const Dims& d = p.dims;
    SdpaInputs in;
    in.Q = Tensor({d.B, d.H_q, d.S_q, d.D_qk}, p.dt);
    in.K = Tensor({d.B, d.H_kv, d.S_kv, d.D_qk}, p.dt);
    in.V = Tensor({d.B, d.H_kv, d.S_kv, d.D_v}, p.dt);
    // Integers in [-2, 2]: |q.k| <= 4*D_qk, exact in f32 for D_qk < 2^22; exact in bf16/f16.
    fill_tensor(in.Q, p, TensorId::Q, -2, 2);
    fill_tensor(in.K, p, TensorId::K, -2, 2);
    fill_tensor(in.V, p, TensorId::V, -2, 2);
    if (p.dir == Dir::bwd || p.dir == Dir::fwd_bwd) {
        in.dO = Tensor({d.B, d.H_q, d.S_q, d.D_v}, p.dt);
        fill_tensor(in.dO, p, TensorId::dO, -2, 2);
    }
    if (p.mask == Mask::bias) {
        const std::int64_t mb = p.bias_shape == BiasShape::one ? 1 : d.B;
        const std::int64_t mh = p.bias_shape == BiasShape::bh ? d.H_q : 1;
        in.bias = Tensor({mb, mh, d.S_q, d.S_kv}, mask_dtype(p));
        fill_tensor(in.bias, p, TensorId::bias, -4, 0);
    }
    return in;
}

}  // namespace sdpa
