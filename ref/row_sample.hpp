// The rows a sampled check (--check=sample:N, docs/trust.md#sampled-checks) computes and compares:
// the same N query rows and N key rows in every (batch, head), chosen where kernels break first,
// then drawn from the seed.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/problem.hpp"

namespace sdpa {

/// The tile edges the vendors' kernels use (FlashAttention's and cuDNN's 16..128-row blocks,
/// oneDNN's 32 and 64): rows on both sides of their multiples are chosen first.
inline constexpr std::int64_t kSampleTiles[] = {128, 64, 32, 16};

/// The query rows and key rows a sampled check covers, the same in every batch and head: sorted,
/// distinct, q in [0, S_q) and kv in [0, S_kv). Empty vectors mean every row (a full check).
struct RowSample {
    std::vector<std::int64_t> q, kv;
    /// True when it leaves rows out (some S is larger than the sample).
    bool sampled(const Problem& p) const {
        return static_cast<std::int64_t>(q.size()) < p.dims.S_q || static_cast<std::int64_t>(kv.size()) < p.dims.S_kv;
    }
};

/// n query rows and n key rows of p (n >= 1), live rows only: a query row that sees a key in some
/// batch, a key that some query sees (the others hold structural values, checked in every row by
/// the scan outside the sample: docs/trust.md#sampled-checks). Taken in this order of choice until
/// n are held: the last and the first live query row, the first and the last live key (the richest
/// first); the mask's edges (for queries the first row that sees a key, the first that sees the
/// last key and the first whose band leaves key 0, each with the row before; for keys the last key
/// the first query sees and the first key the last query sees, each with its neighbour) and the
/// padding edges (valid length - 1 and valid length of every batch); the two rows around a
/// multiple of each kSampleTiles size, one size after the other (the last multiple of each size
/// first, then multiples drawn from the seed); then live rows drawn from the seed. Where n covers
/// every live row of a dimension, that dimension gets every row (a full check of it); without any
/// live row, any rows. Deterministic in (p, n): the repro line reproduces the sample.
RowSample choose_rows(const Problem& p, std::int64_t n);

/// "64/32768 query rows, 64/32768 key rows" (what a sampled check covered; a dimension checked
/// whole is left out: "64/32768 query rows" for a forward), "" for a full one.
std::string describe_sample(const Problem& p, const RowSample& s);

}  // namespace sdpa
