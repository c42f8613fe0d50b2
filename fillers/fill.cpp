#include "fillers/fill.hpp"

#include "core/isa_clones.hpp"
#include "core/splitmix.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numbers>
#include <unordered_map>

#include "core/geometry.hpp"

namespace sdpa {

namespace {

/// Tensor ids that seed each tensor's stream.
enum class TensorId : std::uint64_t { Q = 1, K = 2, V = 3, dO = 4, bias = 5 };

/// The key of tensor t's stream: splitmix64 (core/splitmix.hpp) is counter-based, so element i's
/// value depends only on (seed, tensor, i) and a parallel fill gives the same bytes for any
/// thread count.
std::uint64_t stream_key(std::uint64_t seed, TensorId t) {
    return splitmix64(splitmix64(seed) ^ (static_cast<std::uint64_t>(t) * 0xd1b54a32d192ed03ull));
}

/// Uniform in [0, 1) from 53 random bits of (key, counter).
double uniform(std::uint64_t key, std::uint64_t counter) {
    return static_cast<double>(splitmix64(key ^ splitmix64(counter)) >> 11) * 0x1p-53;
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

/// Elements [i0, i1) of an integer family uniform in [lo, hi] (exact and the adversarial ones)
/// into data[i0 .. i1). The counter mixing vectorises (integer operations and conversions, exact
/// in every lane), so the bytes are those of the scalar loop.
SDPA_ISA_CLONES void fill_uniform_ints(float* data, std::int64_t i0, std::int64_t i1, std::uint64_t key, int lo,
        int hi) {
    for (std::int64_t i = i0; i < i1; ++i) data[i] = static_cast<float>(uniform_int(key, static_cast<std::uint64_t>(i), lo, hi));
}

/// Elements [i0, i1) of the sparse family: 80% zeros, the rest integers in {-2, -1, 1, 2}.
SDPA_ISA_CLONES void fill_sparse(float* data, std::int64_t i0, std::int64_t i1, std::uint64_t key) {
    for (std::int64_t i = i0; i < i1; ++i) {
        const auto c = static_cast<std::uint64_t>(i);
        const int v = uniform_int(key, 2 * c + 1, 0, 3);  // -2, -1, 1, 2
        data[i] = uniform(key, 2 * c) < 0.8 ? 0.f : static_cast<float>(v < 2 ? v - 2 : v - 1);
    }
}

/// Elements of the fills per task (whole tasks per thread; the values depend on i alone).
constexpr std::int64_t kFillChunk = 1 << 14;

/// Fills t with values exactly representable in t.dt, by family: integers in [lo, hi]
/// (exact and the adversarial families, which plant their pattern afterwards), N(0, 1) or
/// N(0, 9) rounded to t.dt (normal, peaky), or 80% zeros and integers in {-2,-1,1,2} (sparse).
void fill_tensor(Tensor& t, const Problem& p, TensorId id, int lo, int hi) {
    const std::uint64_t key = stream_key(p.seed, id);
    const auto n = static_cast<std::int64_t>(t.size());
    float* data = t.data.data();
    if (p.fill == Fill::normal || p.fill == Fill::peaky) {
        const double sd = p.fill == Fill::peaky && id != TensorId::bias ? 3.0 : 1.0;
#pragma omp parallel for schedule(static)
        for (std::int64_t i = 0; i < n; ++i)
            data[i] = round_to(t.dt, static_cast<float>(sd * normal(key, static_cast<std::uint64_t>(i))));
        return;
    }
    const bool sparse = p.fill == Fill::sparse && id != TensorId::bias;  // a sparse fill's bias is exact's
#pragma omp parallel for schedule(static) if (n > kFillChunk)
    for (std::int64_t i0 = 0; i0 < n; i0 += kFillChunk) {
        const std::int64_t i1 = std::min(n, i0 + kFillChunk);
        if (sparse) fill_sparse(data, i0, i1, key);
        else fill_uniform_ints(data, i0, i1, key, lo, hi);
    }
}

/// benchdnn's explicit causal-mask fill: 0 where key j <= query i, -inf elsewhere, and the
/// last query row all -inf (t is [mb, mh, S_q, S_kv]).
void fill_causal_last_row(Tensor& t) {
    const auto& d = t.dims;
    for (std::int64_t a = 0; a < d[0]; ++a)
        for (std::int64_t h = 0; h < d[1]; ++h)
            for (std::int64_t i = 0; i < d[2]; ++i)
                for (std::int64_t j = 0; j < d[3]; ++j)
                    t.at(a, h, i, j) = (j <= i && i != d[2] - 1) ? 0.f : -std::numeric_limits<float>::infinity();
}

}  // namespace

void fold_aliases(const TensorGeom& t, Tensor& host) {
    if (non_overlapping(t)) return;
    // The first logical element (row-major) at each memory offset gives the value of all of them.
    std::unordered_map<std::int64_t, float> first;
    std::size_t i = 0;
    for (std::int64_t a = 0; a < t.dims[0]; ++a)
        for (std::int64_t b = 0; b < t.dims[1]; ++b)
            for (std::int64_t c = 0; c < t.dims[2]; ++c)
                for (std::int64_t d = 0; d < t.dims[3]; ++d, ++i) {
                    const auto [it, fresh] = first.try_emplace(t.offset(a, b, c, d), host.data[i]);
                    if (!fresh) host.data[i] = it->second;
                }
}

SdpaInputs fill_inputs(const Problem& p) {
    const Geometry g = geometry(p);
    SdpaInputs in;
    // Integers in [-2, 2]: |q.k| <= 4*D_qk, exact in f32 for D_qk < 2^22; exact in bf16/f16.
    auto make = [&](Role r) -> Tensor& {
        const TensorGeom& t = g.at(r);
        return *in.of(r) = Tensor(t.dims, *float_type(t.type));
    };
    fill_tensor(make(Role::Q), p, TensorId::Q, -2, 2);
    fill_tensor(make(Role::K), p, TensorId::K, -2, 2);
    fill_tensor(make(Role::V), p, TensorId::V, -2, 2);
    if (g.has(Role::dO)) fill_tensor(make(Role::dO), p, TensorId::dO, -2, 2);
    if (g.has(Role::bias)) {  // MaskFill::zero: the tensor's zeros
        Tensor& bias = make(Role::bias);
        if (p.mask_fill == MaskFill::random) fill_tensor(bias, p, TensorId::bias, -4, 0);
        else if (p.mask_fill == MaskFill::causal_last_row) fill_causal_last_row(bias);
    }
    plant_adversarial(p, in);
    // fp8: the numbers above are codes (exact in the io type for exact, normal, peaky and sparse;
    // the adversarial patterns rounded onto it, saturating); a value is a code times its role's
    // descale (core/fp8.hpp), exact in f32.
    for (const Role r : {Role::Q, Role::K, Role::V, Role::dO})
        if (const TensorGeom* t = g.find(r); t && is_fp8(p.dt))
            for (float& x : in.of(r)->data) x = round_to(p.dt, x) * t->descale;
    for (const Role r : {Role::Q, Role::K, Role::V, Role::dO, Role::bias})
        if (const TensorGeom* t = g.find(r)) fold_aliases(*t, *in.of(r));
    return in;
}

}  // namespace sdpa
