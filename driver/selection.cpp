#include "driver/selection.hpp"

#include <regex>

namespace sdpa {

std::vector<CaseEntry> repeat_entries(const std::vector<CaseEntry>& entries, std::size_t n) {
    std::vector<CaseEntry> out;
    out.reserve(entries.size() * n);
    for (const CaseEntry& e : entries)
        for (std::size_t k = 0; k < n; ++k) out.push_back(e);
    return out;
}

std::vector<std::size_t> select_cases(const std::vector<std::size_t>& indices, const std::vector<std::string>& ids,
        const std::vector<std::string>& canonical, std::size_t start, const std::string& match) {
    const std::regex re(match);
    std::vector<std::size_t> out;
    for (const std::size_t i : indices)
        if (i >= start && (match.empty() || std::regex_search(ids[i], re) ||
                                  (i < canonical.size() && std::regex_search(canonical[i], re))))
            out.push_back(i);
    return out;
}

}  // namespace sdpa
