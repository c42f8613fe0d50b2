#include "driver/shard.hpp"

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <numeric>

#include <fmt/format.h>

#include "core/flops.hpp"
#include "core/validate.hpp"

namespace sdpa {

std::optional<Shard> parse_shard(std::string_view text, std::string* err) {
    const auto slash = text.find('/');
    Shard s;
    const auto num = [](std::string_view t, std::size_t& v) {
        const auto r = std::from_chars(t.data(), t.data() + t.size(), v);
        return !t.empty() && r.ec == std::errc() && r.ptr == t.data() + t.size();
    };
    if (slash == std::string_view::npos || !num(text.substr(0, slash), s.index) || !num(text.substr(slash + 1), s.count) ||
            s.count == 0 || s.index >= s.count) {
        if (err) *err = fmt::format("--shard: '{}' is not I/N with 0 <= I < N (e.g. --shard=0/4 ... --shard=3/4)", text);
        return std::nullopt;
    }
    return s;
}

std::vector<std::size_t> shard_cases(const std::vector<CaseEntry>& entries, const Shard& s) {
    std::vector<double> cost(entries.size(), 1.0);
    for (std::size_t i = 0; i < entries.size(); ++i)
        if (entries[i].c && !validate(entries[i].c->prb))
            cost[i] = std::max(1.0, static_cast<double>(flops(entries[i].c->prb)));
    std::vector<std::size_t> order(entries.size());
    std::iota(order.begin(), order.end(), std::size_t{0});
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return cost[a] > cost[b]; });
    std::vector<double> load(s.count, 0.0);
    std::vector<std::size_t> mine;
    for (const std::size_t i : order) {
        const auto k = static_cast<std::size_t>(std::min_element(load.begin(), load.end()) - load.begin());
        load[k] += cost[i];
        if (k == s.index) mine.push_back(i);
    }
    std::sort(mine.begin(), mine.end());
    return mine;
}

}  // namespace sdpa
