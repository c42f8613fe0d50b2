// Ranges in the case language (CUTLASS profiler's START:END:INCREMENT, with a multiplicative
// step too): a problem descriptor's sizes ("sq512:8192:x2") and the numeric knobs --seed, --mb and
// --scale ("--seed=1:8", "--scale=0.0625:1:x2") expand like comma lists (docs/knobs_shapes.md#ranges).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sdpa {

/// Most values one range may give (a typo like 1:1000000000 is an error, not a long run).
inline constexpr std::size_t kMaxRangeValues = 4096;

/// The values of "START:END[:STEP]", STEP "N" or "+N" (add N; default +1) or "xN" (multiply by
/// N > 1), from START while not past END (START <= END, both included when reached). `integer`:
/// non-negative whole numbers up to 2^64 - 1 (core/parse_number.hpp), else f32 numbers (each value START + i*N, or START*N^i,
/// computed anew, not accumulated); printed as the case language reads them back ({} of fmt).
/// nullopt with `why` naming the rule for anything else (no ':', an empty or backward range, a
/// step that does not advance, more than kMaxRangeValues values).
std::optional<std::vector<std::string>> expand_range(std::string_view text, bool integer, std::string* why);

/// The descriptors a problem descriptor with ranges stands for: every key's value may be a range
/// ("b1hq32hkv8sq512:8192:x2d128" gives 5 descriptors, "sq64:256:64skv128:256:x2" the cross
/// product, keys in their order, the last varying fastest); a descriptor without a range gives
/// itself. The name (n=...) is kept on each. nullopt with `why` for a bad range (expand_range).
std::optional<std::vector<std::string>> expand_descriptor(std::string_view text, std::string* why);

}  // namespace sdpa
