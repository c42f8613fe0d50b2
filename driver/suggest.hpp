// "Did you mean": the names nearest to a misspelt one, for the messages about an unknown knob,
// option or value.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace sdpa {

/// The optimal string alignment distance between a and b: the fewest single-character
/// insertions, deletions, substitutions and swaps of two neighbours that turn one into the other
/// (Levenshtein's distance with Damerau's transposition, no substring edited twice).
std::size_t edit_distance(std::string_view a, std::string_view b);

/// The names of `names` nearest to `name` by edit_distance, in their order (every one at the
/// least distance, duplicates once), when that distance is at most max(1, (|name| - 2) / 3) (the
/// "--" not counted), or when `name` (4 characters or more) is a prefix of them ("--max-ms" names
/// "--max-ms-per-case"); empty when none is near.
std::vector<std::string> did_you_mean(std::string_view name, const std::vector<std::string>& names);

}  // namespace sdpa
