#include "core/dtype.hpp"

#include <bit>
#include <cmath>
#include <cstring>

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

float round_to(DType dt, float x) {
    switch (dt) {
        case DType::f32: return x;
        case DType::bf16: return bf16_bits_to_f32(f32_to_bf16_bits(x));
        case DType::f16: return f16_bits_to_f32(f32_to_f16_bits(x));
    }
    return x;
}

void encode(DType dt, const float* src, void* dst, std::size_t n) {
    if (dt == DType::f32) {
        std::memcpy(dst, src, n * sizeof(float));
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
    const auto* in = static_cast<const std::uint16_t*>(src);
    if (dt == DType::bf16)
        for (std::size_t i = 0; i < n; ++i) dst[i] = bf16_bits_to_f32(in[i]);
    else
        for (std::size_t i = 0; i < n; ++i) dst[i] = f16_bits_to_f32(in[i]);
}

}  // namespace sdpa
