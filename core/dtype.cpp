#include "core/dtype.hpp"

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <algorithm>

namespace sdpa {

std::uint16_t f32_to_bf16_bits(float x) {
    std::uint32_t u = std::bit_cast<std::uint32_t>(x);
    if (std::isnan(x)) return static_cast<std::uint16_t>((u >> 16) | 0x40u);
    const std::uint32_t lsb = (u >> 16) & 1u;
    u += 0x7fffu + lsb;
    return static_cast<std::uint16_t>(u >> 16);
}

float bf16_bits_to_f32(std::uint16_t b) {
    return std::bit_cast<float>(static_cast<std::uint32_t>(b) << 16);
}

std::uint16_t f32_to_f16_bits(float x) {
    const std::uint32_t u = std::bit_cast<std::uint32_t>(x);
    const std::uint32_t sign = (u >> 16) & 0x8000u;
    const std::uint32_t abs = u & 0x7fffffffu;
    if (abs > 0x7f800000u) return static_cast<std::uint16_t>(sign | 0x7e00u);  // NaN
    if (abs >= 0x477ff000u) return static_cast<std::uint16_t>(sign | 0x7c00u); // >= 65520: inf
    if (abs < 0x38800000u) {  // below 2^-14: subnormal half (or zero)
        // Value = abs_f * 2^24 half-subnormal units; round to nearest even via float add.
        const float f = std::bit_cast<float>(abs);
        const float scaled = f * 0x1p24f;  // exact: multiplication by a power of two
        const float r = std::nearbyint(scaled);  // default rounding mode: nearest even
        return static_cast<std::uint16_t>(sign | static_cast<std::uint32_t>(r));
    }
    // Normal: rebias exponent 127 -> 15, keep 10 mantissa bits, round to nearest even.
    std::uint32_t m = abs - (112u << 23);  // rebias
    const std::uint32_t lsb = (m >> 13) & 1u;
    m += 0x0fffu + lsb;
    return static_cast<std::uint16_t>(sign | (m >> 13));
}

float f16_bits_to_f32(std::uint16_t b) {
    const std::uint32_t sign = static_cast<std::uint32_t>(b & 0x8000u) << 16;
    const std::uint32_t exp = (b >> 10) & 0x1fu;
    const std::uint32_t man = b & 0x3ffu;
    if (exp == 0) {
        const float f = std::ldexp(static_cast<float>(man), -24);
        return sign ? -f : f;
    }
    if (exp == 31) return std::bit_cast<float>(sign | 0x7f800000u | (man << 13));
    return std::bit_cast<float>(sign | ((exp + 112u) << 23) | (man << 13));
}

namespace {

/// The fields of an fp8 format: mantissa bits, exponent bias, and whether the top exponent holds
/// normal values (e4m3: all but S.1111.111) or only infinities and NaNs (e5m2).
struct Fp8Format {
    int mantissa_bits, bias;
    bool top_exponent_finite;
};
constexpr Fp8Format fp8_format(DType dt) { return dt == DType::e4m3 ? Fp8Format{3, 7, true} : Fp8Format{2, 15, false}; }

}  // namespace

double overflow_threshold(DType dt) {
    return max_finite(dt) + std::ldexp(unit_roundoff(dt), std::ilogb(max_finite(dt)));
}

std::uint8_t f32_to_fp8_bits(DType dt, float x) {
    const Fp8Format f = fp8_format(dt);
    const std::uint8_t sign = std::signbit(x) ? 0x80u : 0u;
    if (std::isnan(x)) return static_cast<std::uint8_t>(sign | 0x7fu);
    const double max = max_finite(dt), tiny = smallest_subnormal(dt);
    const double a = std::fabs(static_cast<double>(x));
    // The quantum (spacing) at a: that of a's binade for normals, the subnormal spacing below.
    int e = 0;
    std::frexp(a, &e);  // a = m * 2^e, m in [0.5, 1)
    const double quantum = std::max(std::ldexp(1.0, e - 1 - f.mantissa_bits), tiny);
    double r = std::nearbyint(a / quantum) * quantum;  // exact scaling; default mode: nearest even
    if (r > max) r = max;  // satfinite (infinity included)
    // Encode r (a multiple of tiny, at most max): exponent field and mantissa.
    const auto units = static_cast<std::uint32_t>(r / tiny);  // r in subnormal units: < 2^(bias + m + 2)
    const std::uint32_t normal_units = 1u << f.mantissa_bits;  // the smallest normal, in units
    if (units < normal_units) return static_cast<std::uint8_t>(sign | units);
    int exp_field = 1;
    std::uint32_t u = units;
    while (u >= 2 * normal_units) {
        u >>= 1;
        ++exp_field;
    }
    return static_cast<std::uint8_t>(sign | (exp_field << f.mantissa_bits) | (u - normal_units));
}

float fp8_bits_to_f32(DType dt, std::uint8_t b) {
    const Fp8Format f = fp8_format(dt);
    const bool neg = (b & 0x80u) != 0;
    const int exp_field = (b & 0x7fu) >> f.mantissa_bits;
    const int man = b & ((1 << f.mantissa_bits) - 1);
    const int top = (1 << (7 - f.mantissa_bits)) - 1;
    float v = 0.f;
    if (exp_field == top && (!f.top_exponent_finite || man == (1 << f.mantissa_bits) - 1)) {
        v = man == 0 && !f.top_exponent_finite ? std::numeric_limits<float>::infinity()
                                               : std::numeric_limits<float>::quiet_NaN();
    } else if (exp_field == 0) {
        v = static_cast<float>(std::ldexp(static_cast<double>(man), 1 - f.bias - f.mantissa_bits));
    } else {
        v = static_cast<float>(std::ldexp(static_cast<double>(man + (1 << f.mantissa_bits)), exp_field - f.bias - f.mantissa_bits));
    }
    return neg ? -v : v;
}

float round_to(DType dt, float x) {
    switch (dt) {
        case DType::f32: return x;
        case DType::bf16: return bf16_bits_to_f32(f32_to_bf16_bits(x));
        case DType::f16: return f16_bits_to_f32(f32_to_f16_bits(x));
        case DType::e4m3:
        case DType::e5m2: return fp8_bits_to_f32(dt, f32_to_fp8_bits(dt, x));
    }
    return x;
}

void encode(DType dt, const float* src, void* dst, std::size_t n) {
    if (dt == DType::f32) {
        std::memcpy(dst, src, n * sizeof(float));
        return;
    }
    if (is_fp8(dt)) {
        auto* out = static_cast<std::uint8_t*>(dst);
        for (std::size_t i = 0; i < n; ++i) out[i] = f32_to_fp8_bits(dt, src[i]);
        return;
    }
    auto* out = static_cast<std::uint16_t*>(dst);
    if (dt == DType::bf16)
        for (std::size_t i = 0; i < n; ++i) out[i] = f32_to_bf16_bits(src[i]);
    else
        for (std::size_t i = 0; i < n; ++i) out[i] = f32_to_f16_bits(src[i]);
}

void decode(DType dt, const void* src, float* dst, std::size_t n) {
    if (dt == DType::f32) {
        std::memcpy(dst, src, n * sizeof(float));
        return;
    }
    if (is_fp8(dt)) {
        const auto* in = static_cast<const std::uint8_t*>(src);
        for (std::size_t i = 0; i < n; ++i) dst[i] = fp8_bits_to_f32(dt, in[i]);
        return;
    }
    const auto* in = static_cast<const std::uint16_t*>(src);
    if (dt == DType::bf16)
        for (std::size_t i = 0; i < n; ++i) dst[i] = bf16_bits_to_f32(in[i]);
    else
        for (std::size_t i = 0; i < n; ++i) dst[i] = f16_bits_to_f32(in[i]);
}

}  // namespace sdpa
