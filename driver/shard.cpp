#include "driver/shard.hpp"

#include <algorithm>
#include <cstdint>
#include <functional>
#include <numeric>
#include <queue>
#include <utility>

#include <fmt/format.h>

#include "core/flops.hpp"
#include "core/parse_number.hpp"
#include "core/validate.hpp"

namespace sdpa {

std::optional<Shard> parse_shard(std::string_view text, std::string* err) {
    const auto slash = text.find('/');
    Shard s;
    const auto num = [](std::string_view t, std::size_t& v) {
        const auto n = parse_number<std::size_t>(t);
        if (n) v = *n;
        return n.has_value();
    };
    if (slash == std::string_view::npos || !num(text.substr(0, slash), s.index) || !num(text.substr(slash + 1), s.count) ||
            s.count == 0 || s.index >= s.count) {
        if (err) *err = fmt::format("--shard: '{}' is not I/N with 0 <= I < N (e.g. --shard=0/4 ... --shard=3/4)", text);
        return std::nullopt;
    }
    return s;
}

std::vector<std::size_t> shard_cases(const std::vector<CaseEntry>& entries, const Shard& s) {
    std::vector<std::size_t> mine;
    if (s.count == 0) {
        mine.resize(entries.size());
        std::iota(mine.begin(), mine.end(), std::size_t{0});
        return mine;
    }
    std::vector<double> cost(entries.size(), 1.0);
    for (std::size_t i = 0; i < entries.size(); ++i)
        if (entries[i].c && !validate(entries[i].c->prb))
            cost[i] = std::max(1.0, static_cast<double>(flops(entries[i].c->prb)));
    std::vector<std::size_t> order(entries.size());
    std::iota(order.begin(), order.end(), std::size_t{0});
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return cost[a] > cost[b]; });
    // Shards past the number of entries stay empty: only that many can receive one.
    const std::size_t used = std::min(s.count, entries.size());
    if (s.index >= used) return mine;
    using Load = std::pair<double, std::size_t>;  // (cost so far, shard): the least, lowest shard first
    std::priority_queue<Load, std::vector<Load>, std::greater<Load>> load;
    for (std::size_t k = 0; k < used; ++k) load.emplace(0.0, k);
    for (const std::size_t i : order) {
        auto [c, k] = load.top();
        load.pop();
        if (k == s.index) mine.push_back(i);
        load.emplace(c + cost[i], k);
    }
    std::sort(mine.begin(), mine.end());
    return mine;
}

std::string cases_fingerprint(const std::vector<std::string>& ids) {
    std::uint64_t h = 14695981039346656037ull;  // FNV-1a 64 (offset basis, prime 1099511628211)
    for (const auto& id : ids)
        for (const unsigned char ch : id + '\n') h = (h ^ ch) * 1099511628211ull;
    return fmt::format("{:016x}", h);
}

}  // namespace sdpa
