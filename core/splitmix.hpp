// splitmix64 (Steele, Lea, Flood: "Fast splittable pseudorandom number generators", OOPSLA 2014):
// the counter-based mixing every seeded draw of sdpabench uses (fills, dropout's reference
// generator, random padding lengths, --random cases), so the same seed gives the same values
// on every platform and for any thread count.
#pragma once

#include <cstdint>

namespace sdpa {

/// splitmix64's finaliser alone: a bijection of 64-bit words with good avalanche.
constexpr std::uint64_t mix64(std::uint64_t x) {
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

/// The golden-ratio increment of splitmix64's state.
inline constexpr std::uint64_t kGolden64 = 0x9e3779b97f4a7c15ull;

/// One splitmix64 output for state `x`: mix64(x + kGolden64).
constexpr std::uint64_t splitmix64(std::uint64_t x) { return mix64(x + kGolden64); }

}  // namespace sdpa
