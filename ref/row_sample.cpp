#include "ref/row_sample.hpp"

#include <algorithm>
#include <random>
#include <set>

#include <fmt/format.h>

#include "core/splitmix.hpp"

namespace sdpa {

namespace {

using i64 = std::int64_t;

/// Rows of [0, S) taken in order of choice until `n` are held.
class Picker {
public:
    Picker(i64 S, i64 n) : S_(S), n_(std::min(n, S)) {}
    bool full() const { return static_cast<i64>(rows_.size()) >= n_; }
    /// Takes row r (ignored outside [0, S), when held or when full).
    void take(i64 r) {
        if (r >= 0 && r < S_ && !full()) rows_.insert(r);
    }
    /// Takes the rows on both sides of edge e: e - 1 and e.
    void edge(i64 e) {
        take(e - 1);
        take(e);
    }
    std::vector<i64> rows() const { return {rows_.begin(), rows_.end()}; }
    i64 size() const { return S_; }

private:
    i64 S_, n_;
    std::set<i64> rows_;
};

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

/// Rows drawn from `rng` until full.
void random_rows(Picker& pick, std::mt19937_64& rng) {
    while (!pick.full()) pick.take(static_cast<i64>(rng() % static_cast<std::uint64_t>(pick.size())));
}

}  // namespace

RowSample choose_rows(const Problem& p, i64 n) {
    const Dims& d = p.dims;
    Picker q(d.S_q, n), kv(d.S_kv, n);
    // The richest rows first: the last query sees the most keys and key 0 the most queries under
    // every causal mask (with N = 1, row 0 of causal_tl would check dQ's zeros by construction only).
    q.take(q.size() - 1);
    q.take(0);
    kv.take(0);
    kv.take(kv.size() - 1);
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
    for (Picker* x : {&q, &kv}) {
        const i64 free = std::min(n, x->size()) - static_cast<i64>(x->rows().size());
        tile_edges(*x, free / 2, rng);
        random_rows(*x, rng);
    }
    return {q.rows(), kv.rows()};
}

std::string describe_sample(const Problem& p, const RowSample& s) {
    if (!s.sampled(p)) return "";
    return fmt::format("{}/{} query rows, {}/{} key rows", s.q.size(), p.dims.S_q, s.kv.size(), p.dims.S_kv);
}

}  // namespace sdpa
