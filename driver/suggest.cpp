#include "driver/suggest.hpp"

#include <algorithm>
#include <numeric>

namespace sdpa {

std::size_t edit_distance(std::string_view a, std::string_view b) {
    // The optimal string alignment distance (Levenshtein's, with a swap of two neighbours as one
    // edit: Damerau's common typo), by the dynamic programme over three rows.
    std::vector<std::size_t> prev2(b.size() + 1), prev(b.size() + 1), row(b.size() + 1);
    std::iota(prev.begin(), prev.end(), std::size_t{0});
    for (std::size_t i = 1; i <= a.size(); ++i) {
        row[0] = i;
        for (std::size_t j = 1; j <= b.size(); ++j) {
            row[j] = std::min({prev[j] + 1, row[j - 1] + 1, prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) row[j] = std::min(row[j], prev2[j - 2] + 1);
        }
        std::swap(prev2, prev);
        std::swap(prev, row);
    }
    return prev[b.size()];
}

std::vector<std::string> did_you_mean(std::string_view name, const std::vector<std::string>& names) {
    const std::size_t limit = std::max<std::size_t>(1, (name.size() - std::min<std::size_t>(name.size(), 2)) / 3);
    std::size_t best = limit + 1;
    std::vector<std::string> out;
    for (const std::string& n : names) {
        // A prefix of a longer name counts as near as the limit allows.
        std::size_t d = edit_distance(name, n);
        if (name.size() >= 4 && n.starts_with(name)) d = std::min(d, limit);
        if (d > best || d > limit) continue;
        if (d < best) {
            best = d;
            out.clear();
        }
        if (std::find(out.begin(), out.end(), n) == out.end()) out.push_back(n);
    }
    return out;
}

}  // namespace sdpa
