// Dropout on the attention probabilities: the knob's value, the keep masks the vendors' counter-based
// generators produce, and the checks on a mask that need no knowledge of its generator.
//
// Semantics (Srivastava et al., "Dropout", JMLR 2014, applied to P as in Dao et al.,
// "FlashAttention", NeurIPS 2022, Algorithms 2 and 4; oneDNN's SDPA training graphs put the
// Dropout op at the same two places): with Z the keep mask (Z_ij in {0, 1}) and p the drop
// probability,
//   forward:  P_d = Z o P / (1 - p);  O = P_d V;  stats = log-sum-exp of the *undropped* scores;
//   backward: dV = P_d^T dO;  dP = dO V^T;  D = rowsum(dO o O);  dS = P o (Z o dP / (1 - p) - D);
//             dQ = scale * dS K;  dK = scale * dS^T Q.
// The backward's dS uses the undropped P (the softmax Jacobian) and the dropped dP.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace sdpa {

struct Problem;

/// --dropout=P[:SEED[:OFFSET]]: drop probability p in [0, 1), the generator's seed and offset.
/// OFFSET 0 is legal and selects oneDNN's legacy generator path (see onednn_dropout_mask).
struct Dropout {
    float p = 0.f;
    std::uint64_t seed = 1;
    std::uint64_t offset = 1;
    friend bool operator==(const Dropout&, const Dropout&) = default;
};

/// Parses "P[:SEED[:OFFSET]]" (P a decimal in [0, 1), SEED and OFFSET unsigned 64-bit integers;
/// omitted ones take Dropout{}'s defaults). nullopt on any other text, with `why` (when given)
/// set to a sentence naming the part and the rule.
std::optional<Dropout> parse_dropout(std::string_view text, std::string* why = nullptr);

/// The canonical spelling "P:SEED:OFFSET" (P printed so that it parses back equal).
std::string dropout_name(const Dropout& d);

/// oneDNN's keep rule: element kept when its 32-bit draw r satisfies r > p * (2^32 - 1),
/// compared in double (its reference dropout; the keep probability is 1 - p to within 2^-32, and
/// p = 0 still drops a draw of exactly 0).
bool philox_keeps(std::uint32_t r, float p);

/// Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC 2011): the
/// four 32-bit outputs for counter `ctr` and 64-bit key `key` (low word first).
void philox4x32_10(std::uint32_t ctr[4], std::uint64_t key);

/// Which score elements a kernel kept. Shape [B, H_q, S_q, S_kv] of the problem it was made for;
/// thread-safe (const, no state), so the reference may call it from every thread.
class DropoutMask {
public:
    virtual ~DropoutMask() = default;
    /// keep[jj] = 1 when element (b, h, i, j0 + jj) is kept, else 0, for 0 <= jj < n.
    virtual void keep_row(std::int64_t b, std::int64_t h, std::int64_t i, std::int64_t j0, std::int64_t n,
            std::uint8_t* keep) const = 0;
    /// One line for -v and the README: which generator or source, seed and offset.
    virtual std::string describe() const = 0;
};

/// sdpabench's own generator (the ref backend's): Philox4x32-10 with the counter (j, i, h, b) and
/// the key seed XOR SplitMix64(offset) (Steele et al., OOPSLA 2014), the first output word r kept
/// when r >= p * 2^32 (so p = 0 keeps every element). Counter-based and keyed by (seed, offset, b, h, i,
/// j), so any thread count and any tiling give the same mask; no index ever wraps.
std::shared_ptr<const DropoutMask> ref_dropout_mask(const Problem& p);

/// oneDNN's generator, bit for bit: its documented Dropout op (doc/graph_api/operations/
/// Dropout.md in oneDNN: mask = PRNG(seed, offset, idx) > p, "a variation of Philox") is its
/// reference dropout, Philox4x32-10 aligned with PyTorch's PhiloxRNGEngine: idx the linear index
/// of the element in the dense [B, H_q, S_q, S_kv] probabilities, counter (offset, idx & ~3),
/// key seed, output word idx & 3. With offset 0 oneDNN keeps a legacy path: 32-bit idx and seed,
/// counter ((x+1)<<32 | x, (x+3)<<32 | (x+2)) for x = idx & ~3, output word 2, so four neighbours
/// share one draw and the mask repeats every 2^32 elements. Verified against the library by
/// tests/unit/core/test_dropout.cpp.
std::shared_ptr<const DropoutMask> onednn_dropout_mask(const Problem& p);

/// A mask held in memory (read back from a kernel, or built by a fault): keep flags of a dense
/// [B, H_q, S_q, S_kv] tensor, row-major. `what` is its describe() line.
std::shared_ptr<const DropoutMask> stored_dropout_mask(const Problem& p, std::vector<std::uint8_t> keep,
        std::string what);

/// The mask `m` with element (b, h, i, j) replaced by element `f(b, h)` of the same (i, j): a
/// mask whose head (and batch) index is mapped, e.g. to (0, 0) for "one mask for every head".
std::shared_ptr<const DropoutMask> remapped_dropout_mask(std::shared_ptr<const DropoutMask> m,
        std::function<std::pair<std::int64_t, std::int64_t>(std::int64_t b, std::int64_t h)> f, std::string what);

/// One binomial test over every head: the smallest two-sided p-value, and that head's (b, h) and
/// observed rate.
struct WorstHead {
    double p_value = 1;
    double rate = 0;
    std::int64_t b = 0, h = 0;
};

/// What the generator-free checks found on one mask (mask_statistics).
struct MaskStatistics {
    std::int64_t heads = 0;  ///< (b, h) pairs tested
    WorstHead keep;          ///< keep count per head (rate: kept / S_q S_kv)
    WorstHead pairs;         ///< equal neighbour pairs (j = 2k, 2k + 1) per head (rate: equal / pairs)
    std::int64_t identical_heads = 0;  ///< (b, h) whose mask equals an earlier head's
    std::int64_t first_dup_b = -1, first_dup_h = -1, first_dup_of_b = -1, first_dup_of_h = -1;
    bool distinct_checked = false;   ///< false when identical masks are too likely by chance to judge
    double threshold = 0;            ///< p-values below it FAIL (the per-case false-alarm rate / tests)
    /// First failed rule as a sentence with the values, or nullopt when every test passed.
    std::optional<std::string> failure;
};

/// The per-case false-alarm rate of mask_statistics: a correct generator FAILs a case with at
/// most this probability (Bonferroni over the 2 B H_q tests of the case).
inline constexpr double kDropoutFalseAlarm = 1e-6;

/// The checks that need no knowledge of the generator, over every (b, h) of `m`'s problem:
/// - keep rate: the keep count of each head's S_q S_kv elements against Binomial(S_q S_kv,
///   1 - p), two-sided exact p-value (Boost.Math);
/// - independence: among the non-overlapping neighbour pairs (j = 2k, 2k + 1) of each row, the
///   count of equal pairs against Binomial(pairs, (1-p)^2 + p^2) (catches draws shared by
///   neighbours);
/// - distinct heads: no two (b, h) have identical masks (skipped when chance makes identical
///   masks likelier than 1e-9, i.e. tiny S_q S_kv).
/// A p-value below kDropoutFalseAlarm / (2 B H_q) fails. Cost: one pass over the mask.
MaskStatistics mask_statistics(const Problem& p, const DropoutMask& m);

/// Probability that two independent masks of drop probability p agree on n given elements:
/// ((1-p)^2 + p^2)^n.
double chance_masks_agree(float p, std::int64_t n);

/// Number of elements visible under p's mask and padding (core/problem.hpp visible_keys) where
/// masks a and b differ: the differences that can reach the outputs.
std::int64_t visible_mask_differences(const Problem& p, const DropoutMask& a, const DropoutMask& b);

/// The first element where masks a and b differ as "(b,h,i,j) kept by the forward, dropped by the
/// backward"-style text ("a"/"b" named by the caller), or nullopt when equal everywhere.
std::optional<std::string> first_mask_difference(const Problem& p, const DropoutMask& a, std::string_view a_name,
        const DropoutMask& b, std::string_view b_name);

}  // namespace sdpa
