// --minimize: shrinks a FAILED case to a smaller one that still fails the same way
// (docs/knobs_run.md#minimizing-a-failure---minimize): sizes first (B, heads, S_q, S_kv, D), then
// knobs toward the plainest case, repeated until nothing more shrinks.
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <string>

#include "driver/case.hpp"
#include "reports/case_result.hpp"

namespace sdpa {

/// How a FAILED result failed, as a key: "OUTPUT:CHECK" of its first failed output check (e.g.
/// "dQ:bound", "O:masked_rows", "dV:guard"), else "dropout:RULE" of its first failed dropout rule
/// (the rule's text without its numbers), else "case:REASON" (its reason without numbers, e.g. a
/// --mode=B difference or an exception). nullopt unless r.status is FAILED, or for a timeout or
/// a crash (a hang or a crash is not shrunk: each try would cost the timeout).
std::optional<std::string> failure_signature(const CaseResult& r);

/// Every failure key of a FAILED result (the keys failure_signature() describes), the primary
/// first; empty when failure_signature() is nullopt.
std::vector<std::string> failure_keys(const CaseResult& r);

/// True when `r` FAILED with `signature` among its failures (any of its failed checks or rules):
/// the minimizer's "fails the same way".
bool fails_like(const CaseResult& r, const std::string& signature);

/// What minimize() found.
struct Minimized {
    Case smallest;           ///< the smallest case that still fails like the original
    std::string signature;   ///< failure_signature() of the original result
    std::size_t runs = 0;    ///< cases run while shrinking (the original not counted)
    std::size_t steps = 0;   ///< shrinking steps that were kept
    bool hit_limit = false;  ///< stopped at the run limit before a fixed point
};

/// Runs one case and returns its result (in process, or isolated in a child).
using CaseRunner = std::function<CaseResult(const Case&)>;

/// Shrinks `failed` (whose result was `first`, FAILED with a failure_signature) by greedy passes
/// until a pass keeps nothing: each integer size is bisected down to the smallest value that still
/// fails (B, then H_kv at a fixed GQA ratio, the ratio, S_q, S_kv, D_qk and D_v together, then each),
/// then the knobs are tried one at a time toward the plainest case: --dir to fwd_t or bwd from
/// fwd_bwd and to fwd_i from fwd_t, dropout, dMask, padding, --strides, --layout, the mask (to
/// none, a window to causal_br, a bias to its 1x1xSqxSkv shape, random fill, io dtype), the scale
/// knobs, --deterministic, --dt to f32, --fill to exact. When no output of the original case has a
/// mostly-zero reference (compare.hpp kZeroTrust), neither may the candidates: the minimized case is
/// one a correct kernel PASSES, not one it is MISTRUSTED on. A candidate that breaks a rule of
/// validate() is skipped without a run; padding lengths and explicit strides follow the sizes
/// (core/geometry.hpp: explicit strides keep their order and their gaps). An imported graph is
/// shrunk as the descriptor case of its problem. Stops after `max_runs` runs.
Minimized minimize(const Case& failed, const CaseResult& first, const CaseRunner& run, std::size_t max_runs = 400);

}  // namespace sdpa
