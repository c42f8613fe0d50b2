// The fp8 scaling model (--dt=e4m3|e5m2): every fp8 tensor of an SDPA training graph has one
// per-tensor descale, and its value is its stored code times that descale. This is cuDNN's
// per-tensor ("delayed" or "current") scaling of its fp8 SDPA graphs (cuDNN frontend 1.19.1,
// graph_interface.h Graph::sdpa_fp8 and sdpa_fp8_backward; node/scaled_dot_product_flash_attention.h
// and node/sdpa_fp8_bwd.h):
// - the inputs Q, K, V (and O, dO in the backward) come with their descales;
// - S: the softmax probabilities P are multiplied by scale_S = 1/descale_S and rounded to the io
//   type before the P V (and dV = P^T dO) matmuls, which multiply by descale_S again;
// - dP: the scaled dS = attn_scale * P o (dP - D) is multiplied by scale_dP and rounded before the
//   dQ and dK matmuls, which multiply by descale_dP;
// - the outputs O, dQ, dK, dV are multiplied by their scales (1/descale) and rounded (saturating)
//   to the io type; the graphs also output the absolute maximum of each before that scaling
//   (Amax_S of P and Amax_O forward; Amax_dQ, Amax_dK, Amax_dV and Amax_dP of the scaled dS
//   backward).
// The reference (ref/) works on values; the codes exist only in the vendor's buffers
// (core/geometry.hpp TensorGeom::descale).
#pragma once

#include <array>
#include <optional>
#include <string>
#include <string_view>

#include "core/dtype.hpp"
#include "core/enum_table.hpp"

namespace sdpa {

/// The scaled tensors of the fp8 graphs, by cuDNN's names (S: the probabilities P fed to the
/// second matmul; dP: the scaled dS fed to the dQ and dK matmuls).
enum class Fp8Tensor { Q, K, V, O, dO, dQ, dK, dV, S, dP };
inline constexpr std::size_t kFp8TensorCount = 10;
inline constexpr std::array<EnumName<Fp8Tensor>, kFp8TensorCount> kFp8TensorNames{{{Fp8Tensor::Q, "Q"},
    {Fp8Tensor::K, "K"}, {Fp8Tensor::V, "V"}, {Fp8Tensor::O, "O"}, {Fp8Tensor::dO, "dO"}, {Fp8Tensor::dQ, "dQ"},
    {Fp8Tensor::dK, "dK"}, {Fp8Tensor::dV, "dV"}, {Fp8Tensor::S, "S"}, {Fp8Tensor::dP, "dP"}}};
inline std::string_view format_as(Fp8Tensor v) { return enum_name(kFp8TensorNames, v); }

/// The descale of every fp8 tensor: value = code x descale (a positive normal f32). The defaults
/// are all different, none is 1 and no two are reciprocal (Q 0.75, K 1.25, V 0.625, O 3/64, dO
/// 1.5, dQ 3/8, dK 5/16, dV 7/16, S 3/1024, dP 3/16), so a kernel that drops one scale, swaps two,
/// or drops two that would cancel is off by a factor the checks see; they keep the fills' codes and
/// P (at most 1/descale_S = 341 < 448) inside e4m3's range, and the gradients of the normal and
/// exact fills below it (saturation makes a check MISTRUSTED: compare/README.md).
struct Fp8Descales {
    std::array<float, kFp8TensorCount> v{0.75f, 1.25f, 0.625f, 3.f / 64, 1.5f, 3.f / 8, 5.f / 16, 7.f / 16,
        3.f / 1024, 3.f / 16};
    float of(Fp8Tensor t) const { return v[static_cast<std::size_t>(t)]; }
    float& of(Fp8Tensor t) { return v[static_cast<std::size_t>(t)]; }
    friend bool operator==(const Fp8Descales&, const Fp8Descales&) = default;
};

/// "default", or "T:V[+T:V...]" overriding the default descale of tensor T (kFp8TensorNames) with
/// V (a positive normal f32, e.g. 0.0625 or 1e-3; each T at most once); nullopt with `why` set
/// otherwise (naming the item and the rule).
std::optional<Fp8Descales> parse_fp8_descales(std::string_view text, std::string* why = nullptr);

/// The spelling parse_fp8_descales reads back: the entries that differ from the defaults,
/// "T:V+T:V" in kFp8TensorNames order ({} prints floats round-trippably); "" when all are default.
std::string fp8_descales_name(const Fp8Descales& d);

/// Every descale in effect, "Q 0.75, K 1.25, ..., dP 0.1875" (for -v: the defaults are not in the repro).
std::string describe(const Fp8Descales& d);

/// x rounded onto the grid of `dt` scaled by `descale`: round_to(dt, x / descale) * descale (fp8
/// saturates at max_finite(dt) * descale, as cuDNN's conversion does); plain round_to when
/// descale is 1.
float round_scaled(DType dt, float x, float descale);

}  // namespace sdpa
