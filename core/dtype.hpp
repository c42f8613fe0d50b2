// Data types of SDPA tensors and exact conversions between them.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "core/enum_table.hpp"

namespace sdpa {

/// Storage type of an SDPA input/output tensor. Intermediates are always f32. e4m3 and e5m2 are
/// the OCP 8-bit floating-point formats (OCP "8-bit Floating Point Specification (OFP8)" 1.0;
/// NVIDIA's FP8_E4M3 / FP8_E5M2): e4m3 has no infinities, largest finite 448, smallest normal
/// 2^-6, subnormals down to 2^-9; e5m2 is IEEE-like, largest finite 57344, smallest normal 2^-14,
/// subnormals down to 2^-16. An fp8 tensor's values are its codes times the tensor's descale
/// (core/fp8.hpp).
enum class DType { f32, bf16, f16, e4m3, e5m2 };

inline constexpr std::array<EnumName<DType>, 5> kDTypeNames{{
    {DType::f32, "f32"}, {DType::bf16, "bf16"}, {DType::f16, "f16"}, {DType::e4m3, "e4m3"}, {DType::e5m2, "e5m2"}}};

inline std::string_view format_as(DType v) { return enum_name(kDTypeNames, v); }

/// The types of the auxiliary tensors (--mask-dt, --scale-dt): no fp8 (an fp8 graph takes its scale
/// as f32 and no fp8 mask).
inline constexpr std::array<EnumName<DType>, 3> kAuxDTypeNames{{
    {DType::f32, "f32"}, {DType::bf16, "bf16"}, {DType::f16, "f16"}}};

/// The numeric facts of one type: bytes per element; unit roundoff u = 2^-p (p significand bits
/// with the hidden one; Higham, "Accuracy and Stability of Numerical Algorithms", table 2.1);
/// the largest finite value; the smallest subnormal (the spacing of the values near zero).
struct DTypeFacts {
    DType dt;
    std::size_t bytes;
    double u, max_finite, smallest_subnormal;
};
inline constexpr std::array<DTypeFacts, 5> kDTypeFacts{{
    {DType::f32, 4, 0x1p-24, 0x1.fffffep127, 0x1p-149},
    {DType::bf16, 2, 0x1p-8, 0x1.fep127, 0x1p-133},
    {DType::f16, 2, 0x1p-11, 65504.0, 0x1p-24},
    {DType::e4m3, 1, 0x1p-4, 448.0, 0x1p-9},
    {DType::e5m2, 1, 0x1p-3, 57344.0, 0x1p-16},
}};
/// The row of kDTypeFacts for `dt`.
constexpr const DTypeFacts& facts(DType dt) {
    for (const DTypeFacts& f : kDTypeFacts)
        if (f.dt == dt) return f;
    return kDTypeFacts[0];
}

/// True for the 8-bit types.
constexpr bool is_fp8(DType dt) { return dt == DType::e4m3 || dt == DType::e5m2; }
/// Bytes per element: 4 for f32, 2 for bf16 and f16, 1 for e4m3 and e5m2.
constexpr std::size_t size_of(DType dt) { return facts(dt).bytes; }
/// Unit roundoff: f32 2^-24, bf16 2^-8, f16 2^-11, e4m3 2^-4, e5m2 2^-3.
constexpr double unit_roundoff(DType dt) { return facts(dt).u; }
/// Largest finite value (bf16 3.39e38, f16 65504, e4m3 448, e5m2 57344).
constexpr double max_finite(DType dt) { return facts(dt).max_finite; }
/// Smallest subnormal: f32 2^-149, bf16 2^-133, f16 2^-24, e4m3 2^-9, e5m2 2^-16.
constexpr double smallest_subnormal(DType dt) { return facts(dt).smallest_subnormal; }
/// The magnitude from which values no longer round to the largest finite one but past it
/// (infinity, or fp8's saturation): the largest finite value plus half its spacing, e.g. e4m3
/// 448 + 16 = 464, e5m2 57344 + 4096 = 61440.
double overflow_threshold(DType dt);

/// IEEE binary32 -> bfloat16 bits, round to nearest even; NaN stays a quiet NaN.
std::uint16_t f32_to_bf16_bits(float x);
/// bfloat16 bits -> binary32 (exact).
float bf16_bits_to_f32(std::uint16_t b);
/// IEEE binary32 -> binary16 bits, round to nearest even, overflow to +-inf,
/// subnormals kept; NaN stays NaN.
std::uint16_t f32_to_f16_bits(float x);
/// binary16 bits -> binary32 (exact, subnormals included).
float f16_bits_to_f32(std::uint16_t b);

/// binary32 -> fp8 bits (dt e4m3 or e5m2), round to nearest even with saturation: a finite value
/// or infinity beyond the largest finite one gives the largest finite one of its sign, as NVIDIA's
/// conversion does (PTX ISA, cvt.rn.satfinite.{e4m3x2,e5m2x2}.f32: .satfinite is the only mode
/// from f32); NaN gives NaN (e4m3 S.1111.111, e5m2 S.11111.11); subnormals kept.
std::uint8_t f32_to_fp8_bits(DType dt, float x);
/// fp8 bits -> binary32 (exact; e5m2's infinities and both types' NaNs included).
float fp8_bits_to_f32(DType dt, std::uint8_t b);

/// x rounded to the nearest value representable in `dt` (identity for f32; fp8 saturates).
float round_to(DType dt, float x);

/// Writes `n` floats as `dt` into `dst` (which holds n * size_of(dt) bytes).
void encode(DType dt, const float* src, void* dst, std::size_t n);
/// Reads `n` elements of type `dt` from `src` into floats (exact).
void decode(DType dt, const void* src, float* dst, std::size_t n);

}  // namespace sdpa
