#include "core/dropout.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <system_error>

#include <boost/math/distributions/binomial.hpp>
#include <fmt/format.h>

#include "core/parse_number.hpp"
#include "core/problem.hpp"
#include "core/splitmix.hpp"

namespace sdpa {

namespace {

using i64 = std::int64_t;
using u32 = std::uint32_t;
using u64 = std::uint64_t;

/// Linear index of score row (b, h, i) in the dense [B, H_q, S_q, S_kv] probabilities, over S_kv.
i64 row_index(const Dims& d, i64 b, i64 h, i64 i) { return (b * d.H_q + h) * d.S_q + i; }

class RefGenerator final : public DropoutMask {
public:
    RefGenerator(const Dropout& d) : d_(d), key_(d.seed ^ splitmix64(d.offset)) {}
    void keep_row(i64 b, i64 h, i64 i, i64 j0, i64 n, std::uint8_t* keep) const override {
        for (i64 jj = 0; jj < n; ++jj) {
            u32 c[4] = {static_cast<u32>(j0 + jj), static_cast<u32>(i), static_cast<u32>(h), static_cast<u32>(b)};
            philox4x32_10(c, key_);
            keep[jj] = static_cast<double>(c[0]) >= static_cast<double>(d_.p) * 4294967296.0;
        }
    }
    std::string describe() const override {
        return fmt::format("sdpabench Philox4x32-10 over (b,h,i,j), seed {}, offset {}", d_.seed, d_.offset);
    }

private:
    Dropout d_;
    u64 key_;
};

class OnednnGenerator final : public DropoutMask {
public:
    OnednnGenerator(const Problem& p) : d_(*p.dropout), dims_(p.dims) {}
    void keep_row(i64 b, i64 h, i64 i, i64 j0, i64 n, std::uint8_t* keep) const override {
        const u64 base = static_cast<u64>(row_index(dims_, b, h, i)) * static_cast<u64>(dims_.S_kv) + static_cast<u64>(j0);
        u32 word[4] = {};
        u64 have = ~0ull;  // the idx & ~3 whose four draws `word` holds
        for (i64 jj = 0; jj < n; ++jj) {
            const u64 idx = base + static_cast<u64>(jj);
            if (d_.offset != 0) {
                const u64 x = idx & ~u64{3};
                if (x != have) {
                    word[0] = static_cast<u32>(d_.offset);
                    word[1] = static_cast<u32>(d_.offset >> 32);
                    word[2] = static_cast<u32>(x);
                    word[3] = static_cast<u32>(x >> 32);
                    philox4x32_10(word, d_.seed);
                    have = x;
                }
                keep[jj] = philox_keeps(word[idx & 3], d_.p);
            } else {
                // Legacy path: 32-bit index and seed spread over the 64-bit counter and key.
                const u64 x = static_cast<u32>(idx) & ~u32{3};
                if (x != have) {
                    const u64 off = ((x + 1) << 32) + x, hi = ((x + 3) << 32) + (x + 2);
                    const u32 s = static_cast<u32>(d_.seed);
                    word[0] = static_cast<u32>(off);
                    word[1] = static_cast<u32>(off >> 32);
                    word[2] = static_cast<u32>(hi & ~u64{3});
                    word[3] = static_cast<u32>(hi >> 32);
                    philox4x32_10(word, (static_cast<u64>(s) << 32) + s);
                    have = x;
                }
                keep[jj] = philox_keeps(word[2], d_.p);
            }
        }
    }
    std::string describe() const override {
        return fmt::format("oneDNN's Philox4x32-10 dropout{}, seed {}, offset {}",
                d_.offset == 0 ? " (legacy offset-0 path)" : "", d_.seed, d_.offset);
    }

private:
    Dropout d_;
    Dims dims_;
};

class StoredMask final : public DropoutMask {
public:
    StoredMask(const Problem& p, std::vector<std::uint8_t> keep, std::string what)
        : dims_(p.dims), keep_(std::move(keep)), what_(std::move(what)) {}
    void keep_row(i64 b, i64 h, i64 i, i64 j0, i64 n, std::uint8_t* keep) const override {
        const auto at = static_cast<std::size_t>(row_index(dims_, b, h, i) * dims_.S_kv + j0);
        std::copy_n(keep_.begin() + static_cast<std::ptrdiff_t>(at), n, keep);
    }
    std::string describe() const override { return what_; }

private:
    Dims dims_;
    std::vector<std::uint8_t> keep_;
    std::string what_;
};

class RemappedMask final : public DropoutMask {
public:
    RemappedMask(std::shared_ptr<const DropoutMask> m, std::function<std::pair<i64, i64>(i64, i64)> f, std::string what)
        : m_(std::move(m)), f_(std::move(f)), what_(std::move(what)) {}
    void keep_row(i64 b, i64 h, i64 i, i64 j0, i64 n, std::uint8_t* keep) const override {
        const auto [b2, h2] = f_(b, h);
        m_->keep_row(b2, h2, i, j0, n, keep);
    }
    std::string describe() const override { return what_; }

private:
    std::shared_ptr<const DropoutMask> m_;
    std::function<std::pair<i64, i64>(i64, i64)> f_;
    std::string what_;
};

/// Two-sided exact binomial p-value of k successes in n trials of probability q: the sum of the
/// probabilities of the outcomes no likelier than k, bounded by twice the smaller tail (the
/// "doubling" form, conservative and cheap for the n here).
double binomial_p_value(i64 k, i64 n, double q) {
    if (n <= 0) return 1.0;
    if (q <= 0) return k == 0 ? 1.0 : 0.0;
    if (q >= 1) return k == n ? 1.0 : 0.0;
    const boost::math::binomial_distribution<double> dist(static_cast<double>(n), q);
    const double lower = boost::math::cdf(dist, static_cast<double>(k));
    const double upper = k == 0 ? 1.0 : boost::math::cdf(boost::math::complement(dist, static_cast<double>(k - 1)));
    return std::min(1.0, 2.0 * std::min(lower, upper));
}

/// Per head (index bh = b * H_q + h) of a mask over dims d: its kept elements, its equal
/// neighbour pairs (j = 2k, 2k + 1) and a hash of its bits, rows in order (mask_statistics).
struct HeadCounts {
    std::vector<i64> kept, equal;
    std::vector<u64> hash;
};

/// The HeadCounts of m over dims d, one head per task (OpenMP).
HeadCounts head_counts(const Dims& d, const DropoutMask& m) {
    const i64 heads = d.B * d.H_q;
    HeadCounts hc{std::vector<i64>(static_cast<std::size_t>(heads)), std::vector<i64>(static_cast<std::size_t>(heads)),
        std::vector<u64>(static_cast<std::size_t>(heads))};
#pragma omp parallel for schedule(dynamic, 1)
    for (i64 bh = 0; bh < heads; ++bh) {
        std::vector<std::uint8_t> row(static_cast<std::size_t>(d.S_kv));
        i64 k = 0, e = 0;
        u64 hsh = 0x243F6A8885A308D3ull;
        for (i64 i = 0; i < d.S_q; ++i) {
            m.keep_row(bh / d.H_q, bh % d.H_q, i, 0, d.S_kv, row.data());
            u64 bits = 0;
            for (i64 j = 0; j < d.S_kv; ++j) {
                k += row[static_cast<std::size_t>(j)];
                bits = (bits << 1) | row[static_cast<std::size_t>(j)];
                if ((j & 63) == 63 || j == d.S_kv - 1) {
                    hsh = splitmix64(hsh ^ bits);
                    bits = 0;
                }
            }
            for (i64 j = 0; j + 1 < d.S_kv; j += 2) e += row[static_cast<std::size_t>(j)] == row[static_cast<std::size_t>(j + 1)];
        }
        hc.kept[static_cast<std::size_t>(bh)] = k;
        hc.equal[static_cast<std::size_t>(bh)] = e;
        hc.hash[static_cast<std::size_t>(bh)] = hsh;
    }
    return hc;
}

/// The head with the smallest p-value (the first of equals) of count[bh] successes out of
/// `trials` at probability prob, over the heads bh = b * H_q + h of dims d.
WorstHead worst_head(const Dims& d, const std::vector<i64>& count, i64 trials, double prob) {
    WorstHead w;
    for (i64 bh = 0; bh < static_cast<i64>(count.size()); ++bh) {
        const i64 c = count[static_cast<std::size_t>(bh)];
        const double pv = binomial_p_value(c, trials, prob);
        if (bh > 0 && !(pv < w.p_value)) continue;
        w = WorstHead{pv, static_cast<double>(c) / static_cast<double>(trials), bh / d.H_q, bh % d.H_q};
    }
    return w;
}

/// Heads of m whose mask repeats an earlier head's, into st (identical_heads and the first such
/// pair): the masks of heads with equal hashes compared row by row.
void find_identical_heads(const Dims& d, const DropoutMask& m, const std::vector<u64>& hash, MaskStatistics& st) {
    std::map<u64, i64> seen;
    std::vector<std::uint8_t> ra(static_cast<std::size_t>(d.S_kv)), rb(ra.size());
    for (i64 bh = 0; bh < static_cast<i64>(hash.size()); ++bh) {
        auto [it, fresh] = seen.emplace(hash[static_cast<std::size_t>(bh)], bh);
        if (fresh) continue;
        // Equal hashes: compare the masks themselves.
        bool same_mask = true;
        for (i64 i = 0; i < d.S_q && same_mask; ++i) {
            m.keep_row(bh / d.H_q, bh % d.H_q, i, 0, d.S_kv, ra.data());
            m.keep_row(it->second / d.H_q, it->second % d.H_q, i, 0, d.S_kv, rb.data());
            same_mask = ra == rb;
        }
        if (!same_mask) continue;
        if (st.identical_heads++ == 0) {
            st.first_dup_b = bh / d.H_q;
            st.first_dup_h = bh % d.H_q;
            st.first_dup_of_b = it->second / d.H_q;
            st.first_dup_of_h = it->second % d.H_q;
        }
    }
}

/// The first rule st fails as a sentence (n elements and `pairs` neighbour pairs per head, keep
/// probability q, probability `same` that a pair is equal), or nullopt.
std::optional<std::string> mask_failure(const MaskStatistics& st, i64 n, i64 pairs, double q, double same) {
    if (st.keep.p_value < st.threshold)
        return fmt::format("dropout mask: head (b,h) = ({},{}) keeps {:.4f} of its {} elements, expected {:.4f} "
                           "(binomial p-value {:.3g} < {:.3g})",
                st.keep.b, st.keep.h, st.keep.rate, n, q, st.keep.p_value, st.threshold);
    if (pairs > 0 && st.pairs.p_value < st.threshold)
        return fmt::format("dropout mask: head (b,h) = ({},{}) has equal neighbours (j = 2k, 2k+1) in {:.4f} of "
                           "{} pairs, expected {:.4f} for independent draws (binomial p-value {:.3g} < {:.3g})",
                st.pairs.b, st.pairs.h, st.pairs.rate, pairs, same, st.pairs.p_value, st.threshold);
    if (st.identical_heads > 0)
        return fmt::format("dropout mask: {} head(s) repeat an earlier head's mask, e.g. (b,h) = ({},{}) equals "
                           "({},{})",
                st.identical_heads, st.first_dup_b, st.first_dup_h, st.first_dup_of_b, st.first_dup_of_h);
    return std::nullopt;
}

}  // namespace

std::optional<Dropout> parse_dropout(std::string_view text, std::string* why) {
    auto fail = [&](std::string msg) -> std::optional<Dropout> {
        if (why) *why = std::move(msg);
        return std::nullopt;
    };
    Dropout d;
    const auto c1 = text.find(':');
    const std::string_view ps = text.substr(0, c1);
    NumberError err{};
    const auto parsed = parse_number<double>(ps, &err);
    if (err == NumberError::not_finite) return fail(fmt::format("the probability {} must be a finite number in [0, 1)", ps));
    if (!parsed)
        return fail(fmt::format("the probability '{}' is not a number (want P[:SEED[:OFFSET]], P in [0, 1))", ps));
    const double pv = *parsed;
    if (pv < 0) return fail(fmt::format("the probability {} must be in [0, 1)", ps));
    if (pv >= 1) return fail(fmt::format("the probability {} must be in [0, 1) (1 would drop every element)", ps));
    // The vendors take p as an f32 scalar: it must stay in [0, 1) and nonzero stays nonzero.
    d.p = static_cast<float>(pv);
    if (d.p >= 1.f)
        return fail(fmt::format("the probability {} rounds to 1 in f32 (the largest below 1 is {})", ps,
                std::nextafter(1.f, 0.f)));
    if (pv > 0 && d.p == 0.f)
        return fail(fmt::format("the probability {} rounds to 0 in f32 (write 0 for a Dropout that drops nothing)", ps));
    d.p = d.p == 0.f ? 0.f : d.p;  // -0 is 0
    if (c1 != std::string_view::npos) {
        const std::string_view rest = text.substr(c1 + 1);
        const auto c2 = rest.find(':');
        const std::string_view ss = rest.substr(0, c2);
        const auto seed = parse_number<std::uint64_t>(ss);
        if (!seed) return fail(fmt::format("the seed '{}' is not an unsigned 64-bit integer", ss));
        d.seed = *seed;
        if (c2 != std::string_view::npos) {
            const auto offset = parse_number<std::uint64_t>(rest.substr(c2 + 1));
            if (!offset) return fail(fmt::format("the offset '{}' is not an unsigned 64-bit integer", rest.substr(c2 + 1)));
            d.offset = *offset;
        }
    }
    return d;
}

std::string dropout_name(const Dropout& d) { return fmt::format("{}:{}:{}", d.p, d.seed, d.offset); }

bool philox_keeps(u32 r, float p) {
    const double pc = std::clamp(static_cast<double>(p), 0.0, 1.0);
    return static_cast<double>(r) > static_cast<double>(std::numeric_limits<u32>::max()) * pc;
}

void philox4x32_10(u32 ctr[4], u64 key) {
    u32 k0 = static_cast<u32>(key), k1 = static_cast<u32>(key >> 32);
    for (int round = 0; round < 10; ++round) {
        const u64 p0 = u64{0xD2511F53u} * ctr[0], p1 = u64{0xCD9E8D57u} * ctr[2];
        const u32 c0 = static_cast<u32>(p1 >> 32) ^ ctr[1] ^ k0, c2 = static_cast<u32>(p0 >> 32) ^ ctr[3] ^ k1;
        ctr[1] = static_cast<u32>(p1);
        ctr[3] = static_cast<u32>(p0);
        ctr[0] = c0;
        ctr[2] = c2;
        k0 += 0x9E3779B9u;  // the Weyl key schedule
        k1 += 0xBB67AE85u;
    }
}

std::shared_ptr<const DropoutMask> ref_dropout_mask(const Problem& p) {
    return std::make_shared<RefGenerator>(p.dropout.value_or(Dropout{}));
}

std::shared_ptr<const DropoutMask> onednn_dropout_mask(const Problem& p) {
    Problem q = p;
    if (!q.dropout) q.dropout = Dropout{};
    return std::make_shared<OnednnGenerator>(q);
}

std::shared_ptr<const DropoutMask> stored_dropout_mask(const Problem& p, std::vector<std::uint8_t> keep, std::string what) {
    return std::make_shared<StoredMask>(p, std::move(keep), std::move(what));
}

std::shared_ptr<const DropoutMask> remapped_dropout_mask(std::shared_ptr<const DropoutMask> m,
        std::function<std::pair<i64, i64>(i64, i64)> f, std::string what) {
    return std::make_shared<RemappedMask>(std::move(m), std::move(f), std::move(what));
}

MaskStatistics mask_statistics(const Problem& p, const DropoutMask& m) {
    const Dims& d = p.dims;
    const double q = 1.0 - static_cast<double>(p.dropout.value_or(Dropout{}).p);
    const i64 heads = d.B * d.H_q, n = d.S_q * d.S_kv, pairs = d.S_q * (d.S_kv / 2);
    const double same = q * q + (1 - q) * (1 - q);
    MaskStatistics st;
    st.heads = heads;
    st.threshold = kDropoutFalseAlarm / static_cast<double>(2 * heads);
    const HeadCounts counts = head_counts(d, m);
    st.keep = worst_head(d, counts.kept, n, q);
    if (pairs > 0) st.pairs = worst_head(d, counts.equal, pairs, same);
    // Identical masks by chance: probability same^n per pair of heads.
    const double chance = chance_masks_agree(p.dropout.value_or(Dropout{}).p, n) * 0.5 * static_cast<double>(heads) *
                          static_cast<double>(heads - 1);
    st.distinct_checked = heads > 1 && chance < 1e-9;
    if (st.distinct_checked) find_identical_heads(d, m, counts.hash, st);
    st.failure = mask_failure(st, n, pairs, q, same);
    return st;
}

double chance_masks_agree(float p, i64 n) {
    const double q = 1.0 - static_cast<double>(p), same = q * q + (1 - q) * (1 - q);
    return std::exp(static_cast<double>(n) * std::log(same));
}

i64 visible_mask_differences(const Problem& p, const DropoutMask& a, const DropoutMask& b) {
    const Dims& d = p.dims;
    i64 n = 0;
#pragma omp parallel for collapse(2) reduction(+ : n) schedule(dynamic, 1)
    for (i64 bb = 0; bb < d.B; ++bb)
        for (i64 h = 0; h < d.H_q; ++h) {
            std::vector<std::uint8_t> ra(static_cast<std::size_t>(d.S_kv)), rb(ra.size());
            for (i64 i = 0; i < d.S_q; ++i) {
                const auto [lo, hi] = visible_keys(p, bb, i);
                if (lo >= hi) continue;
                a.keep_row(bb, h, i, lo, hi - lo, ra.data());
                b.keep_row(bb, h, i, lo, hi - lo, rb.data());
                for (i64 j = 0; j < hi - lo; ++j) n += ra[static_cast<std::size_t>(j)] != rb[static_cast<std::size_t>(j)];
            }
        }
    return n;
}

std::optional<std::string> first_mask_difference(const Problem& p, const DropoutMask& a, std::string_view a_name,
        const DropoutMask& b, std::string_view b_name) {
    const Dims& d = p.dims;
    std::vector<std::uint8_t> ra(static_cast<std::size_t>(d.S_kv)), rb(ra.size());
    for (i64 bb = 0; bb < d.B; ++bb)
        for (i64 h = 0; h < d.H_q; ++h)
            for (i64 i = 0; i < d.S_q; ++i) {
                a.keep_row(bb, h, i, 0, d.S_kv, ra.data());
                b.keep_row(bb, h, i, 0, d.S_kv, rb.data());
                for (i64 j = 0; j < d.S_kv; ++j)
                    if (ra[static_cast<std::size_t>(j)] != rb[static_cast<std::size_t>(j)])
                        return fmt::format("element (b,h,i,j) = ({},{},{},{}) is {} by the {} and {} by the {}", bb, h, i,
                                j, ra[static_cast<std::size_t>(j)] ? "kept" : "dropped", a_name,
                                rb[static_cast<std::size_t>(j)] ? "kept" : "dropped", b_name);
            }
    return std::nullopt;
}

}  // namespace sdpa
