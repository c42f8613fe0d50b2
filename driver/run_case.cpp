#include "driver/run_case.hpp"

#include <chrono>
#include <algorithm>
#include <exception>
#include <cstring>
#include <thread>

#include <fmt/format.h>

#include "compare/compare.hpp"
#include "core/flops.hpp"
#include "driver/determinism.hpp"
#include "core/memory_estimate.hpp"
#include "fillers/fill.hpp"
#include "ref/sdpa_ref.hpp"
#include "driver/knobs.hpp"

namespace sdpa {

std::string failure_reason(const OutputCheck& c) {
    if (!c.located) return fmt::format("{}: {}", c.output, c.reason);
    const auto& w = c.worst_index;
    return fmt::format("{}: {} at ({},{},{},{}): got {} expected {} (|err| {:.3g} vs bound {:.3g})", c.output,
            c.reason, w[0], w[1], w[2], w[3], c.got, c.expected, c.err, c.bound);
}

namespace {

/// The SKIPPED reason when the case's host memory estimate exceeds the limit, else nullopt.
std::optional<std::string> memory_guard(const Problem& p, const Backend& backend, const RunLimits& limits) {
    if (limits.max_memory_bytes == 0) return std::nullopt;
    const unsigned threads = std::thread::hardware_concurrency();
    std::vector<MemoryItem> vendor = backend.host_memory(p, threads);
    if (p.dropout) {  // the dropout rerun (seed + 1, or no dropout) holds a second plan
        const std::size_t n = vendor.size();
        for (std::size_t k = 0; k < n; ++k)
            vendor.push_back({"dropout rerun: " + vendor[k].what, vendor[k].bytes});
    }
    const MemoryEstimate est = estimate_host_memory(p, threads, std::move(vendor));
    if (est.total <= static_cast<double>(limits.max_memory_bytes)) return std::nullopt;
    const auto largest = std::max_element(est.items.begin(), est.items.end(),
            [](const MemoryItem& a, const MemoryItem& b) { return a.bytes < b.bytes; });
    return fmt::format("not enough memory: the case needs about {} of host memory, more than --max-memory={} "
                       "(largest part: {}, {})", format_bytes(est.total),
            format_bytes(static_cast<double>(limits.max_memory_bytes)), largest->what, format_bytes(largest->bytes));
}

/// Runs f() and adds its wall time to r's phase `ph`; returns what f returns.
template <class F>
decltype(auto) timed(CaseResult& r, Phase ph, F&& f) {
    struct Stop {
        CaseResult& r;
        Phase ph;
        std::chrono::steady_clock::time_point t0 = std::chrono::steady_clock::now();
        ~Stop() {
            r.phases_ms[static_cast<std::size_t>(ph)] +=
                    std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
        }
    } stop{r, ph};
    return f();
}

/// Status and reason from the output checks: INVALID_ARGUMENTS when the reference itself is
/// non-finite (the case overflows f32), FAILED if any check (or dropout rule) failed, else
/// MISTRUSTED if any output was mistrusted, else PASSED.
void judge(CaseResult& r) {
    for (const auto& c : r.checks)
        if (c.ref_nonfinite > 0) {
            r.status = Status::invalid_arguments;
            r.reason = fmt::format("{}: {}", c.output, c.reason);
            return;
        }
    std::string failed, mistrusted;
    for (const auto& c : r.checks) {
        if (!c.pass) failed += (failed.empty() ? "" : "; ") + failure_reason(c);
        else if (c.mistrusted && !c.mistrust.empty())  // fp8 saturation, nothing checked (compare/compare.hpp)
            mistrusted += (mistrusted.empty() ? "" : "; ") + c.mistrust;
        else if (c.mistrusted)
            mistrusted += fmt::format("{}{}: {:.0f}% of the reference and {:.0f}% of the output are zero",
                    mistrusted.empty() ? "" : "; ", c.output, 100.0 * c.zero_fraction, 100.0 * c.got_zero_fraction);
    }
    if (r.dropout)
        for (const auto& f : r.dropout->failures) failed += (failed.empty() ? "" : "; ") + f;
    if (!failed.empty()) {
        r.status = Status::failed;
        r.reason = failed;
    } else if (!mistrusted.empty()) {
        r.status = Status::mistrusted;
        r.reason = mistrusted;
    } else {
        r.status = Status::passed;
    }
}

/// Appends the plan's notes that r does not hold yet, each prefixed by `tag`: what running it found
/// (a GPU's launch gate dropped, the log-sum-exp shape PyTorch returned and its warnings).
void add_run_notes(const Plan& plan, CaseResult& r, const std::string& tag = "") {
    for (const std::string& n : plan.notes())
        if (std::string line = tag + n; std::find(r.notes.begin(), r.notes.end(), line) == r.notes.end())
            r.notes.push_back(std::move(line));
}

/// P/CP: times the plan and stores the stats and rates in r.perf, with the device's peak rate for
/// the io type `dt` (0 unknown); noisy when the runs' spread is above timing.noisy_cv.
void measure(Plan& plan, const TimingOptions& timing, double peak_tflops, CaseResult& r) {
    std::vector<double> samples = timed(r, Phase::vendor, [&] { return time_plan(plan, timing); });
    add_run_notes(plan, r);
    const TimingStats t = summarize(samples);
    r.perf = make_perf_result(t, plan.compile_ms(), timing.cold_cache, r.flops, r.bytes);
    r.perf->samples_ms = std::move(samples);
    r.perf->peak_tflops = peak_tflops;
    r.perf->noisy = t.cv > timing.noisy_cv;  // false for a NaN cv (fewer than 2 runs)
}


/// The keep mask `backend` applies for p (null without dropout). Throws BackendError
/// UNIMPLEMENTED when a backend that accepted a dropout case names no mask.
std::shared_ptr<const DropoutMask> vendor_mask(const Backend& backend, const Problem& p) {
    if (!p.dropout) return nullptr;
    auto m = backend.dropout_mask(p);
    if (!m) throw BackendError(Status::unimplemented, fmt::format("backend {} has no dropout", backend.name()));
    return m;
}

/// The dropout report of p on mask m: the generator-free statistics (core/dropout.hpp), a
/// failure when they fail. Statistics only when p > 0 (p = 0 keeps everything).
DropoutReport dropout_report(const Problem& p, const DropoutMask& m) {
    DropoutReport d;
    d.mask = m.describe();
    if (p.dropout->p > 0.f) {
        d.stats = mask_statistics(p, m);
        if (d.stats.failure) d.failures.push_back(*d.stats.failure);
    }
    return d;
}

/// The -v line of a dropout report.
std::string dropout_note(const DropoutReport& d) {
    const MaskStatistics& s = d.stats;
    if (s.heads == 0) return fmt::format("dropout: {} (p = 0: no mask statistics)", d.mask);
    return fmt::format("dropout: {}; {} heads: keep-rate p-value {:.3g} (worst head (b,h) = ({},{}) keeps {:.4f}), "
                       "neighbour-pair p-value {:.3g} (head ({},{})), threshold {:.3g}, {}", d.mask, s.heads,
            s.keep.p_value, s.keep.b, s.keep.h, s.keep.rate, s.pairs.p_value, s.pairs.b, s.pairs.h, s.threshold,
            s.distinct_checked ? fmt::format("{} identical heads", s.identical_heads) : "heads too small to compare");
}

/// The first element where two runs' outputs differ bitwise, as "O at (b,h,i,d): X vs Y"; nullopt
/// when every output is bitwise equal.
std::optional<std::string> first_bitwise_difference(const SdpaOutputs& a, const SdpaOutputs& b) {
    for (const auto& row : kOutputNames) {
        const Tensor& x = a.of(row.value);
        const Tensor& y = b.of(row.value);
        if (x.empty() && y.empty()) continue;
        if (x.size() != y.size()) return fmt::format("{}: {} vs {} elements", row.name, x.size(), y.size());
        for (std::size_t e = 0; e < x.size(); ++e)
            if (std::memcmp(&x.data[e], &y.data[e], sizeof(float)) != 0) {
                const auto c = x.index(e);
                return fmt::format("{} at ({},{},{},{}): {} vs {}", row.name, c[0], c[1], c[2], c[3], x.data[e], y.data[e]);
            }
    }
    return std::nullopt;
}

/// Visible elements where the masks of seed and seed + 1 must differ before the outputs must: fewer
/// differences may all sit where P is too small to change a rounded output.
constexpr std::int64_t kMinVisibleDifferences = 64;

/// The vendor-level dropout rules, by rerunning the vendor on the same inputs: with p = 0 and
/// --fill=exact the outputs must be bitwise those of the problem without dropout; with p > 0 a seed changed to
/// seed + 1 must change the mask (unless identical masks are likelier than 1e-9 by chance) and,
/// when the masks differ in at least kMinVisibleDifferences visible elements and some output is
/// nonzero, some output.
/// Failures go to d.
void dropout_rerun_checks(const Problem& p, Backend& backend, const SdpaInputs& in, const SdpaOutputs& out,
        const DropoutMask& mask, DropoutReport& d) {
    Problem q = p;
    bool outputs_must_change = false;
    if (p.dropout->p == 0.f) {
        // Bitwise only where every product and sum is exact (--fill=exact): with other fills a
        // vendor may run the graph with the Dropout op through another kernel whose rounding
        // differs (oneDNN does), and the p = 0 outputs are held to the reference like any other.
        if (p.fill != Fill::exact) return;
        q.dropout.reset();
    } else {
        ++q.dropout->seed;
        const auto other = vendor_mask(backend, q);
        const Dims& n = p.dims;
        if (chance_masks_agree(p.dropout->p, n.B * n.H_q * n.S_q * n.S_kv) < 1e-9 &&
                !first_mask_difference(p, mask, "first", *other, "second"))
            d.failures.push_back(fmt::format("dropout: the mask for seed {} equals the mask for seed {}",
                    q.dropout->seed, p.dropout->seed));
        // Outputs that are all zero (V and dO zero, e.g. a sparse fill with D = 1) cannot show any mask.
        bool any_nonzero = false;
        for (const auto& row : kOutputNames)
            for (const float x : out.of(row.value).data) any_nonzero = any_nonzero || x != 0.f;
        outputs_must_change = any_nonzero && visible_mask_differences(p, mask, *other) >= kMinVisibleDifferences;
        if (!outputs_must_change) return;
    }
    if (backend.support(q)) return;
    std::unique_ptr<Plan> plan = backend.prepare(q, in);
    plan->execute();
    const auto diff = first_bitwise_difference(out, plan->read_outputs());
    if (p.dropout->p == 0.f && diff)
        d.failures.push_back(fmt::format("dropout: --dropout={} is not bitwise equal to no dropout: {}",
                dropout_name(*p.dropout), *diff));
    if (outputs_must_change && !diff)
        d.failures.push_back(fmt::format("dropout: changing the seed from {} to {} left every output bitwise unchanged "
                "(the masks differ in at least {} visible elements)", p.dropout->seed, q.dropout->seed,
                kMinVisibleDifferences));
}

/// Sets r to `no`'s status when the backend will not run `p`; true when it will.
bool supported(const Backend& backend, const Problem& p, CaseResult& r) {
    if (auto no = backend.support(p)) {
        r.status = no->status;
        r.reason = no->reason;
        return false;
    }
    return true;
}

/// Backend::prepare on the prepare phase's clock, the plan's notes (prefixed by `tag`), then
/// --expected-n-partitions (benchdnn --graph's knob; a backend that does not partition was refused
/// before filling): another partition count is FAILED. Throws BackendError.
std::unique_ptr<Plan> prepare_plan(const Case& c, Backend& backend, const Problem& p, const SdpaInputs& in,
        CaseResult& r, const std::string& tag) {
    std::unique_ptr<Plan> plan = timed(r, Phase::prepare, [&] { return backend.prepare(p, in); });
    for (auto& n : plan->notes()) r.notes.push_back(tag + n);
    if (c.expected_partitions > 0)
        if (const std::size_t n = plan->partitions().value_or(0); static_cast<std::int64_t>(n) != c.expected_partitions)
            throw BackendError(Status::failed, fmt::format("{} split the {} graph into {} partition(s), "
                    "--expected-n-partitions={}", backend.name(), p.dir, n, c.expected_partitions));
    return plan;
}

/// What the steps of one case share: the inputs, and the last prepared plan with its outputs.
struct StepState {
    SdpaInputs in;
    bool filled = false;
    std::unique_ptr<Plan> plan;
    SdpaOutputs out;
    std::shared_ptr<const DropoutMask> first_mask;  ///< the first direction's vendor mask
    std::int64_t o_saturated = 0;                   ///< fp8 O inputs saturated by the displacement
    bool checked_before = false;                    ///< a direction was checked by an earlier step
};

/// Fills the inputs (once per case) and prepares the plan of direction `q.dir`. A backward after a
/// checked forward (fwd_bwd) takes the forward's own O and stats, exactly as it gave them; any
/// other backward gets O and stats displaced from the reference forward. `tag` prefixes notes.
void prepare_step(const Case& c, Backend& backend, const Problem& q, StepState& st, CaseResult& r,
        const std::string& tag) {
    if (!st.filled) {
        st.in = timed(r, Phase::fill, [&] { return fill_inputs(c.prb); });
        st.filled = true;
        st.first_mask = vendor_mask(backend, q);
        st.o_saturated = timed(r, Phase::displace, [&] { return displace(q, st.in, st.first_mask.get()); });
    } else if (q.dir == Dir::bwd && st.checked_before) {
        st.in.O = std::move(st.out.O);
        st.in.stats = std::move(st.out.stats);
        // Rows the forward leaves unspecified (Conventions: past the valid query length) hold whatever
        // it left there, NaN included; the backward's inputs get the fully masked row's O = 0 and the
        // backend's masked-row stats instead (the backward masks those rows either way).
        const Conventions conv = backend.conventions();
        if (conv.padded_rows_unspecified)
            for (std::int64_t b = 0; b < q.dims.B; ++b)
                for (std::int64_t h = 0; h < q.dims.H_q; ++h)
                    for (std::int64_t i = valid_q(q, b); i < q.dims.S_q; ++i) {
                        std::fill_n(&st.in.O.at(b, h, i, 0), q.dims.D_v, 0.f);
                        st.in.stats.at(b, h, i, 0) = conv.masked_row_stats;
                    }
    }
    st.plan.reset();  // one plan at a time
    st.plan = prepare_plan(c, backend, q, st.in, r, tag);
}

/// Check step: runs the plan of `q.dir` once, computes the reference (fed the first direction's
/// dropout mask, as the vendor's backward must regenerate it) and appends the output checks; the
/// dropout checks go with it. Returns false when a later direction must not run: its reference
/// would be fed a wrong forward.
bool check_step(const Case& c, Backend& backend, const Problem& q, StepState& st, CaseResult& r,
        const std::string& tag, bool more_directions) {
    const bool chained = q.dir == Dir::bwd && st.checked_before;
    prepare_step(c, backend, q, st, r, tag);
    timed(r, Phase::vendor, [&] { st.plan->execute(); });
    add_run_notes(*st.plan, r, tag);
    st.out = st.plan->read_outputs();
    if (auto seen = observed_masked_rows(q, st.out)) r.notes.push_back(tag + *seen);
    const RefOptions opt = default_ref_options(c.prb, st.first_mask.get());
    std::vector<OutputCheck> checks;
    if (q.dir == Dir::bwd) {
        const RefBackward ref = timed(r, Phase::reference, [&] { return ref_backward(q, st.in, opt); });
        checks = timed(r, Phase::compare, [&] { return check_outputs(q, st.out, nullptr, &ref, backend.conventions()); });
    } else {
        const RefForward ref = timed(r, Phase::reference, [&] { return ref_forward(q, st.in, opt); });
        checks = timed(r, Phase::compare, [&] { return check_outputs(q, st.out, &ref, nullptr, backend.conventions()); });
    }
    for (auto& chk : checks) r.checks.push_back(std::move(chk));
    if (const auto mask = chained ? vendor_mask(backend, q) : st.first_mask) {
        if (!r.dropout) {
            r.dropout = dropout_report(q, *mask);
            r.notes.push_back(dropout_note(*r.dropout));
        }
        if (chained)
            if (auto diff = first_mask_difference(c.prb, *st.first_mask, "forward", *mask, "backward"))
                r.dropout->failures.push_back("dropout: the backward's mask is not the forward's: " + *diff);
        dropout_rerun_checks(q, backend, st.in, st.out, *mask, *r.dropout);
    }
    st.checked_before = true;
    if (chained) r.reason.clear();
    judge(r);
    if (more_directions && r.status != Status::passed && r.status != Status::mistrusted) {
        r.reason += "; backward not run";
        return false;
    }
    r.checked = !more_directions;
    if (st.o_saturated > 0 && (r.status == Status::passed || r.status == Status::mistrusted)) {
        const float d = geometry(q).at(Role::O).descale;
        r.reason += fmt::format("{}O input: {} value(s) of the reference forward past the {} range at descale_O {} "
                "(largest {:.6g}), saturated (a larger --fp8-descale=O:... tells more)", r.reason.empty() ? "" : "; ",
                st.o_saturated, q.dt, d, max_finite(q.dt) * d);
        r.status = Status::mistrusted;
    }
    return true;
}

void run_checked(const Case& c, Backend& backend, CaseResult& r, const TimingOptions& timing,
        const RunLimits& limits) {
    const Problem& p = c.prb;
    if (auto err = validate(p)) {  // named where the case came from, like the parser's errors
        r.status = Status::invalid_arguments;
        r.reason = c.where.empty() ? *err : fmt::format("{}: error: {}", c.where, *err);
        return;
    }
    r.flops = flops(p);
    r.bytes = bytes_moved(p);
    if (c.mode == Mode::L) {
        r.status = Status::listed;
        return;
    }
    if (auto over = memory_guard(p, backend, limits)) {
        r.status = Status::skipped;
        r.reason = *over;
        return;
    }
    const auto steps = case_steps(c);
    if (!steps) {  // a skip, not an error: a P sweep over a mixed file still exits 0
        r.status = Status::skipped;
        r.reason = fmt::format("--dir={} is checked in --mode=C only (got --mode={}); {}", p.dir, c.mode,
                c.mode == Mode::B ? "check --dir=fwd_t and --dir=bwd for bitwise reruns instead"
                                  : "time fwd_t and bwd instead");
        return;
    }
    if (c.expected_partitions > 0 && !backend.partitions_graphs()) {
        r.status = Status::unimplemented;
        r.reason = fmt::format("--expected-n-partitions={}: backend {} does not partition its graph",
                c.expected_partitions, backend.name());
        return;
    }
    const std::vector<Dir> dirs = directions(p.dir);
    for (const Dir d : dirs) {
        Problem q = p;
        q.dir = d;
        if (!supported(backend, q, r)) return;
    }
    StepState st;
    for (std::size_t k = 0; k < steps->size(); ++k) {
        const Step& s = (*steps)[k];
        Problem q = p;
        q.dir = s.dir;
        const std::string tag = dirs.size() > 1 ? fmt::format("{}: ", s.dir == Dir::bwd ? "bwd" : "fwd") : "";
        switch (s.kind) {
        case Step::Kind::check: {
            const bool more = k + 1 < steps->size() && (*steps)[k + 1].kind == Step::Kind::check;
            if (!check_step(c, backend, q, st, r, tag, more)) return;
            break;
        }
        case Step::Kind::time:
            if (!st.plan) {  // P: nothing checked, the plan is timed alone
                prepare_step(c, backend, q, st, r, tag);
                measure(*st.plan, timing, backend.peak_tflops(q.dt), r);
                r.status = Status::executed;  // ran, nothing checked: never PASSED
            } else if (!is_error(r.status)) {
                measure(*st.plan, timing, backend.peak_tflops(q.dt), r);
            }
            break;
        case Step::Kind::rerun:
            if (r.status != Status::failed)
                if (auto diff = rerun_differs(*st.plan, st.out)) {
                    r.status = Status::failed;
                    r.reason = *diff;
                }
            break;
        }
    }
}

}  // namespace

std::optional<std::vector<Step>> case_steps(const Case& c) {
    const std::vector<Dir> dirs = directions(c.prb.dir);
    if (dirs.size() > 1 && c.mode != Mode::C && c.mode != Mode::L) return std::nullopt;
    std::vector<Step> steps;
    const Dir d = dirs.back();
    switch (c.mode) {
    case Mode::L: break;
    case Mode::C:
        for (const Dir x : dirs) steps.push_back({Step::Kind::check, x});
        break;
    case Mode::P: steps.push_back({Step::Kind::time, d}); break;
    case Mode::CP: steps = {{Step::Kind::check, d}, {Step::Kind::time, d}}; break;
    case Mode::B: steps = {{Step::Kind::check, d}, {Step::Kind::rerun, d}}; break;
    }
    return steps;
}

CaseResult run_case(const Case& c, Backend& backend, std::size_t index, const TimingOptions& timing,
        const RunLimits& limits) {
    CaseResult r;
    r.index = index;
    r.repro = repro(c);
    r.info = case_info(c);
    // An imported graph's repro names the file; -v shows the problem derived from it.
    if (!c.graph_file.empty())
        r.notes.push_back(fmt::format("graph: {} {}", knobs(c.prb), descriptor(c.prb.dims, c.prb.name)));
    if (is_fp8(c.prb.dt)) r.notes.push_back(fmt::format("fp8 descales: {}", describe(c.prb.fp8)));
    const auto t0 = std::chrono::steady_clock::now();
    try {
        run_checked(c, backend, r, timing, limits);
    } catch (const BackendError& e) {
        r.status = e.status;
        r.reason = e.what();
    } catch (const std::bad_alloc&) {
        r.status = Status::skipped;
        r.reason = "out of host memory";
    } catch (const std::exception& e) {
        r.status = Status::failed;
        r.reason = fmt::format("exception: {}", e.what());
    }
    // A listed case ran nothing: no time, so that two listings of the same cases are byte-equal.
    r.ms = r.status == Status::listed ? 0.0
                                      : std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    return r;
}

}  // namespace sdpa
