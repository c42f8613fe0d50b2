#include "driver/dropout_checks.hpp"

#include <fmt/format.h>

#include "core/geometry.hpp"
#include "driver/determinism.hpp"
#include "driver/run_case.hpp"

namespace sdpa {

std::shared_ptr<const DropoutMask> vendor_mask(const Backend& backend, const Problem& p) {
    if (!p.dropout) return nullptr;
    auto m = backend.dropout_mask(p);
    if (!m) throw BackendError(Status::unimplemented, fmt::format("backend {} has no dropout", backend.name()));
    return m;
}

DropoutReport dropout_report(const Problem& p, const DropoutMask& m) {
    DropoutReport d;
    d.mask = m.describe();
    if (p.dropout->p > 0.f) {
        d.stats = mask_statistics(p, m);
        if (d.stats.failure) d.failures.push_back(*d.stats.failure);
    }
    return d;
}

std::string dropout_note(const DropoutReport& d) {
    const MaskStatistics& s = d.stats;
    if (s.heads == 0) return fmt::format("dropout: {} (p = 0: no mask statistics)", d.mask);
    return fmt::format("dropout: {}; {} heads: keep-rate p-value {:.3g} (worst head (b,h) = ({},{}) keeps {:.4f}), "
                       "neighbour-pair p-value {:.3g} (head ({},{})), threshold {:.3g}, {}", d.mask, s.heads,
            s.keep.p_value, s.keep.b, s.keep.h, s.keep.rate, s.pairs.p_value, s.pairs.b, s.pairs.h, s.threshold,
            s.distinct_checked ? fmt::format("{} identical heads", s.identical_heads) : "heads too small to compare");
}

namespace {

/// The outputs of `q` run on the plan of a fresh prepare (nullopt when the backend will not run q).
std::optional<SdpaOutputs> rerun(const Problem& q, const DropoutRerun& run) {
    if (run.backend.support(q)) return std::nullopt;
    std::unique_ptr<Plan> plan = run.backend.prepare(q, run.in);
    plan->execute();
    return plan->read_outputs();
}

/// p = 0 against the problem without dropout (dropout_rerun_checks).
void zero_p_rule(const Problem& p, const DropoutRerun& run, DropoutReport& d) {
    Problem q = p;
    q.dropout.reset();
    const auto out = rerun(q, run);
    if (!out) return;
    if (run.bitwise && p.fill == Fill::exact) {
        if (auto diff = bitwise_difference(geometry(p).output_list(), run.out, *out))
            d.failures.push_back(fmt::format("dropout: --dropout={} is not bitwise equal to no dropout: {}",
                    dropout_name(*p.dropout), *diff));
        return;
    }
    for (const OutputCheck& c : run.check(q, *out))
        if (!c.pass)
            d.failures.push_back(fmt::format("dropout: without dropout (--dropout={} must equal it within the bound): {}",
                    dropout_name(*p.dropout), failure_reason(c)));
}

/// p > 0: seed + 1 must change the mask and, where it can show, some output (dropout_rerun_checks).
void seed_rule(const Problem& p, const DropoutMask& mask, const DropoutRerun& run, DropoutReport& d) {
    Problem q = p;
    ++q.dropout->seed;
    const auto other = vendor_mask(run.backend, q);
    const Dims& n = p.dims;
    if (chance_masks_agree(p.dropout->p, n.B * n.H_q * n.S_q * n.S_kv) < 1e-9 &&
            !first_mask_difference(p, mask, "first", *other, "second"))
        d.failures.push_back(fmt::format("dropout: the mask for seed {} equals the mask for seed {}", q.dropout->seed,
                p.dropout->seed));
    // Outputs that are all zero (V and dO zero, e.g. a sparse fill with D = 1) cannot show any mask.
    const std::vector<Output> outputs = geometry(p).output_list();
    bool any_nonzero = false;
    for (const Output o : outputs)
        for (const float x : run.out.of(o).data) any_nonzero = any_nonzero || x != 0.f;
    if (!any_nonzero || visible_mask_differences(p, mask, *other) < kMinVisibleDifferences) return;
    const auto out = rerun(q, run);
    if (out && !bitwise_difference(outputs, run.out, *out))
        d.failures.push_back(fmt::format("dropout: changing the seed from {} to {} left every output bitwise unchanged "
                "(the masks differ in at least {} visible elements)", p.dropout->seed, q.dropout->seed,
                kMinVisibleDifferences));
}

}  // namespace

void dropout_rerun_checks(const Problem& p, const DropoutMask& mask, const DropoutRerun& run, DropoutReport& d) {
    if (p.dropout->p == 0.f) zero_p_rule(p, run, d);
    else seed_rule(p, mask, run, d);
}

}  // namespace sdpa
