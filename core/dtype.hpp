// Data types of SDPA tensors and exact conversions between them.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "core/enum_table.hpp"

namespace sdpa {

/// Storage type of an SDPA input/output tensor. Intermediates are always f32.
enum class DType { f32, bf16, f16 };

inline constexpr std::array<EnumName<DType>, 3> kDTypeNames{{
    {DType::f32, "f32"}, {DType::bf16, "bf16"}, {DType::f16, "f16"}}};

inline std::string_view format_as(DType v) { return enum_name(kDTypeNames, v); }

/// Bytes per element: 4 for f32, 2 for bf16 and f16.
constexpr std::size_t size_of(DType dt) { return dt == DType::f32 ? 4 : 2; }

/// Unit roundoff u = 2^-p of the type (p = significand bits incl. the hidden one):
/// f32 2^-24, bf16 2^-8, f16 2^-11 (Higham, "Accuracy and Stability", table 2.1).
constexpr double unit_roundoff(DType dt) {
    switch (dt) {
        case DType::f32: return 0x1p-24;
        case DType::bf16: return 0x1p-8;
        case DType::f16: return 0x1p-11;
    }
    return 0x1p-24;
}

/// IEEE binary32 -> bfloat16 bits, round to nearest even; NaN stays a quiet NaN.
std::uint16_t f32_to_bf16_bits(float x);
/// bfloat16 bits -> binary32 (exact).
float bf16_bits_to_f32(std::uint16_t b);
/// IEEE binary32 -> binary16 bits, round to nearest even, overflow to +-inf,
/// subnormals kept; NaN stays NaN.
std::uint16_t f32_to_f16_bits(float x);
/// binary16 bits -> binary32 (exact, subnormals included).
float f16_bits_to_f32(std::uint16_t b);

/// x rounded to the nearest value representable in `dt` (identity for f32).
float round_to(DType dt, float x);

/// Writes `n` floats as `dt` into `dst` (which holds n * size_of(dt) bytes).
void encode(DType dt, const float* src, void* dst, std::size_t n);
/// Reads `n` elements of type `dt` from `src` into floats (exact).
void decode(DType dt, const void* src, float* dst, std::size_t n);

}  // namespace sdpa
