// CPU ISA levels a vendor's dispatch can be capped at (--cpu-isa, docs/knobs_run.md#cpu-isa-levels---cpu-isa):
// oneDNN's levels, each a set of feature bits that contains the bits of every level below it, so
// that "level A is at most level B" is a bit test. The values are oneDNN's dnnl_cpu_isa_t values;
// backends/onednn/onednn_backend.cpp checks every one of them against oneDNN's header at compile
// time, so a renumbering in a new oneDNN fails the build instead of capping at the wrong level.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/enum_table.hpp"

namespace sdpa {

/// A CPU ISA level. `none` is no cap (the vendor dispatches to the best this CPU has).
enum class CpuIsa : std::uint32_t {
    none = 0x0,
    sse41 = 0x1,
    avx = 0x3,
    avx2 = 0x7,
    avx2_vnni = 0xf,
    avx2_vnni_2 = 0x1f,
    avx512_core = 0x27,
    avx512_core_vnni = 0x67,
    avx512_core_bf16 = 0xe7,
    avx512_core_fp16 = 0x1ef,      ///< oneDNN's avx10_1_512
    avx512_core_amx = 0xfef,       ///< oneDNN's avx10_1_512_amx
    avx512_core_amx_fp16 = 0x1fef, ///< oneDNN's avx10_1_512_amx_fp16
    avx10_2_512 = 0x201ff,
    avx10_2_512_amx_2 = 0x22fff,
};

/// The spellings, lowest level first (the order --cpu-isa=all runs them in). The names are
/// ONEDNN_MAX_CPU_ISA's, lower case; "default" is no cap.
inline constexpr std::array<EnumName<CpuIsa>, 14> kCpuIsaNames{{
    {CpuIsa::none, "default"},
    {CpuIsa::sse41, "sse41"},
    {CpuIsa::avx, "avx"},
    {CpuIsa::avx2, "avx2"},
    {CpuIsa::avx2_vnni, "avx2_vnni"},
    {CpuIsa::avx2_vnni_2, "avx2_vnni_2"},
    {CpuIsa::avx512_core, "avx512_core"},
    {CpuIsa::avx512_core_vnni, "avx512_core_vnni"},
    {CpuIsa::avx512_core_bf16, "avx512_core_bf16"},
    {CpuIsa::avx512_core_fp16, "avx512_core_fp16"},
    {CpuIsa::avx512_core_amx, "avx512_core_amx"},
    {CpuIsa::avx512_core_amx_fp16, "avx512_core_amx_fp16"},
    {CpuIsa::avx10_2_512, "avx10_2_512"},
    {CpuIsa::avx10_2_512_amx_2, "avx10_2_512_amx_2"},
}};

/// oneDNN's other names of the same levels (its avx10 spellings), accepted by --cpu-isa and
/// printed as kCpuIsaNames spells them.
inline constexpr std::array<EnumName<CpuIsa>, 4> kCpuIsaAliases{{
    {CpuIsa::avx512_core_fp16, "avx10_1_512"},
    {CpuIsa::avx512_core_amx, "avx10_1_512_amx"},
    {CpuIsa::avx512_core_amx_fp16, "avx10_1_512_amx_fp16"},
    {CpuIsa::avx10_2_512, "avx10_2"},
}};

inline std::string_view format_as(CpuIsa v) { return enum_name(kCpuIsaNames, v); }

/// The level spelled `s` (a kCpuIsaNames name or a kCpuIsaAliases alias, in any case: ONEDNN_MAX_CPU_ISA
/// writes them in capitals), nullopt otherwise.
inline std::optional<CpuIsa> parse_cpu_isa(std::string_view s) {
    std::string lower(s);
    for (char& ch : lower) ch = static_cast<char>(ch >= 'A' && ch <= 'Z' ? ch - 'A' + 'a' : ch);
    if (const auto e = enum_parse(kCpuIsaNames, lower)) return e;
    return enum_parse(kCpuIsaAliases, lower);
}

/// True when level `have` contains every feature of level `need` (a CPU or a cap at `have` can
/// run what `need` runs). Every level includes `none`.
constexpr bool isa_includes(CpuIsa have, CpuIsa need) {
    const auto h = static_cast<std::uint32_t>(have), n = static_cast<std::uint32_t>(need);
    return (h & n) == n;
}

}  // namespace sdpa
