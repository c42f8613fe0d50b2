#include "ref/row_sample.hpp"

#include <algorithm>
#include <numeric>
#include <random>
#include <set>

#include <fmt/format.h>

#include "core/splitmix.hpp"

namespace sdpa {

namespace {

using i64 = std::int64_t;

/// Rows of [0, S) taken in order of choice until `n` are held; only live rows (live_rows) are
/// taken, every other row being checked whole by the scan outside the sample (compare.cpp).
class Picker {
public:
    Picker(std::vector<char> live, i64 n) : live_(std::move(live)) {
        for (i64 r = 0; r < size(); ++r)
            if (live_[static_cast<std::size_t>(r)]) alive_.push_back(r);
        if (alive_.empty()) {  // the whole output is structural: any row shows it
            std::fill(live_.begin(), live_.end(), char{1});
            for (i64 r = 0; r < size(); ++r) alive_.push_back(r);
        }
        n_ = std::min(n, static_cast<i64>(alive_.size()));
    }
    bool full() const { return static_cast<i64>(rows_.size()) >= n_; }
    /// True when n covers every live row: the dimension is checked whole.
    bool all_live() const { return n_ == static_cast<i64>(alive_.size()); }
    /// Takes row r (ignored outside [0, S), when not live, when held or when full).
    void take(i64 r) {
        if (r >= 0 && r < size() && live_[static_cast<std::size_t>(r)] && !full()) rows_.insert(r);
    }
    /// Takes the rows on both sides of edge e: e - 1 and e.
    void edge(i64 e) {
        take(e - 1);
        take(e);
    }
    /// The first and the last live row.
    i64 first() const { return alive_.front(); }
    i64 last() const { return alive_.back(); }
    /// A live row drawn from `rng`.
    i64 draw(std::mt19937_64& rng) const { return alive_[rng() % alive_.size()]; }
    std::vector<i64> rows() const { return {rows_.begin(), rows_.end()}; }
    i64 size() const { return static_cast<i64>(live_.size()); }
    /// The capacity left: rows still to take.
    i64 free() const { return n_ - static_cast<i64>(rows_.size()); }

private:
    std::vector<char> live_;
    std::vector<i64> alive_;  ///< the live rows, ascending
    i64 n_ = 0;
    std::set<i64> rows_;
};

/// The live rows of p: a query row that sees a key in some batch, a key that some query of some
/// batch sees (core/problem.hpp visible_keys). The others hold structural values only (masked
/// rows, zero gradients), which the scan outside the sample checks exactly in every row.
/// O(B (S_q + S_kv)).
std::pair<std::vector<char>, std::vector<char>> live_rows(const Problem& p) {
    const Dims& d = p.dims;
    std::vector<char> q(static_cast<std::size_t>(d.S_q), 0), kv(static_cast<std::size_t>(d.S_kv), 0);
    std::vector<i64> seen(static_cast<std::size_t>(d.S_kv) + 1);
    for (i64 b = 0; b < d.B; ++b) {
        std::fill(seen.begin(), seen.end(), 0);
        for (i64 i = 0; i < valid_q(p, b); ++i) {
            const auto [lo, hi] = visible_keys(p, b, i);
            if (hi <= lo) continue;
            q[static_cast<std::size_t>(i)] = 1;
            ++seen[static_cast<std::size_t>(lo)];
            --seen[static_cast<std::size_t>(hi)];
        }
        i64 cover = 0;
        for (i64 j = 0; j < d.S_kv; ++j)
            if ((cover += seen[static_cast<std::size_t>(j)]) > 0) kv[static_cast<std::size_t>(j)] = 1;
    }
    return {std::move(q), std::move(kv)};
}

/// Both sides of multiples of each tile size (kSampleTiles), one size after the other: the last
/// multiple of each size (for the smaller sizes one that is not a multiple of the next larger), then
/// multiples drawn from `rng`, until half the rows still free are taken.
void tile_edges(Picker& pick, i64 budget, std::mt19937_64& rng) {
    const i64 S = pick.size();
    for (int round = 0; round < 64 && budget > 0; ++round)
        for (std::size_t k = 0; k < std::size(kSampleTiles) && budget > 0; ++k) {
            const i64 T = kSampleTiles[k], step = k == 0 ? T : 2 * T;  // T's own edges: odd multiples below 128
            const i64 first = T, count = (S - 1 - first) / step + 1;       // T, T + step, ... < S
            if (S <= first) continue;
            const i64 m = round == 0 ? count - 1 : static_cast<i64>(rng() % static_cast<std::uint64_t>(count));
            pick.edge(first + m * step);
            budget -= 2;
        }
}

/// Live rows drawn from `rng` until full.
void random_rows(Picker& pick, std::mt19937_64& rng) {
    while (!pick.full()) pick.take(pick.draw(rng));
}

}  // namespace

RowSample choose_rows(const Problem& p, i64 n) {
    const Dims& d = p.dims;
    auto [live_q, live_kv] = live_rows(p);
    Picker q(std::move(live_q), n), kv(std::move(live_kv), n);
    // The richest rows first: the last live query sees the most keys and the first live key the
    // most queries under every causal mask (with N = 1, row 0 of causal_tl would check dQ's zeros
    // by construction only).
    q.take(q.last());
    q.take(q.first());
    kv.take(kv.first());
    kv.take(kv.last());
    for (i64 b = 0; b < d.B; ++b) {
        const i64 vq = valid_q(p, b), vkv = valid_kv(p, b);
        // Mask edges of the queries: the band's first key and one past its last, as the query grows.
        i64 prev_hi = 0, prev_lo = 0;
        for (i64 i = 0; i < vq; ++i) {
            const auto [lo, hi] = visible_keys(p, b, i);
            const bool seen = hi > lo;
            if (i > 0 && ((seen && prev_hi == 0) || (hi == vkv && prev_hi < vkv) || (lo > 0 && prev_lo == 0))) q.edge(i);
            std::tie(prev_lo, prev_hi) = seen ? std::pair{lo, hi} : std::pair{i64{0}, i64{0}};
            if (hi == vkv && lo > 0) break;  // every edge above is behind
        }
        if (vq > 0) {
            kv.edge(visible_keys(p, b, 0).second);     // the last key the first query sees, and the next
            kv.edge(visible_keys(p, b, vq - 1).first);  // the first key the last query sees, and the one before
        }
        q.edge(vq);
        kv.edge(vkv);
    }
    std::mt19937_64 rng(splitmix64(p.seed ^ 0x73616d706c65ULL));  // "sample": a stream of its own
    RowSample s;
    for (auto [x, out] : {std::pair{&q, &s.q}, std::pair{&kv, &s.kv}}) {
        if (x->all_live()) {  // n covers every live row: every row, a full check of that dimension
            out->resize(static_cast<std::size_t>(x->size()));
            std::iota(out->begin(), out->end(), i64{0});
            continue;
        }
        tile_edges(*x, x->free() / 2, rng);
        random_rows(*x, rng);
        *out = x->rows();
    }
    return s;
}

std::string describe_sample(const Problem& p, const RowSample& s) {
    if (!s.sampled(p)) return "";
    const auto part = [](std::size_t n, std::int64_t S, const char* what) {
        return static_cast<std::int64_t>(n) < S ? fmt::format("{}/{} {} rows", n, S, what) : std::string();
    };
    const std::string q = part(s.q.size(), p.dims.S_q, "query"), kv = part(s.kv.size(), p.dims.S_kv, "key");
    return q.empty() || kv.empty() ? q + kv : q + ", " + kv;
}

}  // namespace sdpa
