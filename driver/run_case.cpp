#include "driver/run_case.hpp"

#include <chrono>
#include <ctime>
#include <algorithm>
#include <numeric>
#include <exception>
#include <stdexcept>
#include <map>
#include <thread>
#include <tuple>

#include <fmt/format.h>

#include "compare/compare.hpp"
#include "core/flops.hpp"
#include "driver/determinism.hpp"
#include "driver/dropout_checks.hpp"
#include "driver/input_check.hpp"
#include "core/memory_estimate.hpp"
#include "core/host_cpu.hpp"
#include "fillers/fill.hpp"
#include "ref/sdpa_ref.hpp"
#include "driver/knobs.hpp"

namespace sdpa {

std::string failure_reason(const OutputCheck& c) {
    if (!c.located) return fmt::format("{}: {}", c.output, c.reason);
    const auto& w = c.worst_index;
    // A sampled check's floor, max(M) / 1024, is over its rows: where it makes most of the bound a
    // full check may pass (docs/trust.md#sampled-checks).
    const bool floor_bound = c.sampled > 0 && c.failure == CheckFailure::bound && c.bound_mag < c.bound_floor;
    return fmt::format("{}: {} at ({},{},{},{}): got {} expected {} (|err| {:.3g} vs bound {:.3g}{})", c.output,
            c.reason, w[0], w[1], w[2], w[3], c.got, c.expected, c.err, c.bound,
            floor_bound ? ", mostly the sampled rows' floor: --check=full tells" : "");
}

namespace {

/// The parts `items_of` gives for the largest step of p (one plan at a time: driver/run_case.hpp
/// case_steps), doubled with dropout (the dropout rerun, seed + 1 or no dropout, holds a second plan).
template <class ItemsOf>
std::vector<MemoryItem> largest_step_items(const Problem& p, ItemsOf items_of) {
    std::vector<MemoryItem> largest;
    double largest_total = -1;
    for (const Dir d : directions(p.dir)) {
        std::vector<MemoryItem> items = items_of(step_problem(p, d));
        double total = 0;
        for (const MemoryItem& it : items) total += it.bytes;
        if (total > largest_total) {
            largest_total = total;
            largest = std::move(items);
        }
    }
    if (p.dropout) {
        const std::size_t n = largest.size();
        for (std::size_t k = 0; k < n; ++k) largest.push_back({"dropout rerun: " + largest[k].what, largest[k].bytes});
    }
    return largest;
}

/// The largest of `items`.
const MemoryItem& largest_item(const std::vector<MemoryItem>& items) {
    return *std::max_element(items.begin(), items.end(), [](const MemoryItem& a, const MemoryItem& b) { return a.bytes < b.bytes; });
}

/// The SKIPPED reason when the case's host memory estimate exceeds the limit, else nullopt.
std::optional<std::string> memory_guard(const Problem& p, const Backend& backend, const RunLimits& limits) {
    if (limits.max_memory_bytes == 0) return std::nullopt;
    const unsigned threads = std::thread::hardware_concurrency();
    std::vector<MemoryItem> vendor = largest_step_items(p, [&](const Problem& q) { return backend.host_memory(q, threads); });
    const MemoryEstimate est = estimate_host_memory(p, threads, std::move(vendor));
    if (est.total <= static_cast<double>(limits.max_memory_bytes)) return std::nullopt;
    const MemoryItem& largest = largest_item(est.items);
    return fmt::format("not enough memory: the case needs about {} of host memory, more than --max-memory={} "
                       "(largest part: {}, {})", format_bytes(est.total),
            format_bytes(static_cast<double>(limits.max_memory_bytes)), largest.what, format_bytes(largest.bytes));
}

/// The SKIPPED reason when the case's device memory (Backend::device_memory) exceeds the limit
/// (--max-device-memory, by default kDeviceMemoryShare of the device's free memory), else nullopt.
std::optional<std::string> device_memory_guard(const Problem& p, const Backend& backend, const RunLimits& limits) {
    const std::vector<MemoryItem> items = largest_step_items(p, [&](const Problem& q) { return backend.device_memory(q); });
    if (items.empty()) return std::nullopt;
    double total = 0;
    for (const MemoryItem& it : items) total += it.bytes;
    const std::uint64_t given = limits.max_device_memory_bytes;
    const std::uint64_t free = given > 0 ? 0 : backend.device_free_bytes();
    const std::uint64_t limit = device_memory_limit_from(given, free);
    if (limit == 0 || total <= static_cast<double>(limit)) return std::nullopt;
    const MemoryItem& largest = largest_item(items);
    return fmt::format("not enough device memory: the case needs about {} on the device, more than {} (largest part: "
                       "{}, {})", format_bytes(total),
            given > 0 ? fmt::format("--max-device-memory={}", format_bytes(static_cast<double>(given)))
                      : fmt::format("{:.0f}% of the device's free {} (--max-device-memory sets the limit)",
                                100 * kDeviceMemoryShare, format_bytes(static_cast<double>(free))),
            largest.what, format_bytes(largest.bytes));
}

/// This process's CPU time (all its threads), ms.
double process_cpu_ms() {
    timespec ts{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return 1e3 * static_cast<double>(ts.tv_sec) + 1e-6 * static_cast<double>(ts.tv_nsec);
}

/// Runs f() and adds its wall time to r's phase `ph`; returns what f returns. The vendor phase
/// also adds the process's CPU time to r.vendor_cpu_util, which run_case divides by the phase's
/// wall time at the end.
template <class F>
decltype(auto) timed(CaseResult& r, Phase ph, F&& f) {
    struct Stop {
        CaseResult& r;
        Phase ph;
        double cpu0 = ph == Phase::vendor ? process_cpu_ms() : 0;
        std::chrono::steady_clock::time_point t0 = std::chrono::steady_clock::now();
        ~Stop() {
            r.phases_ms[static_cast<std::size_t>(ph)] +=
                    std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
            if (ph == Phase::vendor) r.vendor_cpu_util += process_cpu_ms() - cpu0;
        }
    } stop{r, ph};
    return f();
}

/// --cpu-isa: the SKIPPED reason of a case whose level this backend cannot run here (no ISA
/// control, or a level the CPU lacks), nullopt when it runs; throws std::logic_error when the
/// process is not capped at the case's level (a driver bug: the result would name the wrong ISA).
std::optional<std::string> cpu_isa_skip(const Case& c, const Backend& backend) {
    if (c.cpu_isa == CpuIsa::none) return std::nullopt;
    if (!backend.caps_cpu_isa())
        return fmt::format("--cpu-isa={}: backend {} has no ISA cap (--cpu-isa caps oneDNN's CPU dispatch); run it at "
                           "--cpu-isa=default", c.cpu_isa, backend.name());
    const std::optional<CpuIsa> got = backend.cpu_isa();
    if (!got || !isa_includes(c.cpu_isa, *got))
        throw std::logic_error(fmt::format("--cpu-isa={}: this process's {} dispatches to {}, above the level", c.cpu_isa,
                backend.name(), got ? fmt::format("{}", *got) : std::string("an unknown level")));
    if (!isa_includes(*got, c.cpu_isa))
        return fmt::format("--cpu-isa={}: this CPU lacks that level ({} dispatches to {} at most under it)", c.cpu_isa,
                backend.name(), *got);
    return std::nullopt;
}

/// Status and reason from the output checks: INVALID_ARGUMENTS when the reference itself, or its
/// magnitude (the bound's M), is non-finite (the case overflows f32: it cannot be judged there), FAILED if any check (or dropout rule) failed, else
/// MISTRUSTED if any output was mistrusted, else PASSED.
void judge(CaseResult& r) {
    for (const auto& c : r.checks)
        if (c.ref_nonfinite > 0 || c.mag_nonfinite > 0) {
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
            mistrusted += fmt::format("{}{}: {:.0f}% of the reference and {:.0f}% of the output are zero{}",
                    mistrusted.empty() ? "" : "; ", c.output, 100.0 * c.zero_fraction, 100.0 * c.got_zero_fraction,
                    c.sampled > 0 ? " (the reference's in the sampled rows, the output's elsewhere)" : "");
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

/// The INVALID_ARGUMENTS, LISTED, SKIPPED or UNIMPLEMENTED status that stops case `c` before
/// anything is filled (validation, --mode=L, the memory guard, a mode fwd_bwd has no steps for,
/// --expected-n-partitions on a backend that does not partition, Backend::support() of each
/// step's direction), set on r; false when the case goes on to its steps. Sets r's FLOPs and bytes.
bool stopped_before_steps(const Case& c, const Backend& backend, const RunLimits& limits, CaseResult& r) {
    const Problem& p = c.prb;
    const auto stop = [&r](Status s, std::string reason) {
        r.status = s;
        r.reason = std::move(reason);
        return true;
    };
    if (auto err = validate(p))  // named where the case came from, like the parser's errors
        return stop(Status::invalid_arguments, c.where.empty() ? *err : fmt::format("{}: error: {}", c.where, *err));
    r.flops = flops(p);
    r.bytes = bytes_moved(p);
    if (listing(c)) return stop(Status::listed, "");
    if (auto no = cpu_isa_skip(c, backend)) return stop(Status::skipped, *no);
    if (auto over = memory_guard(p, backend, limits)) return stop(Status::skipped, *over);
    if (!case_steps(c))  // a skip, not an error: a P sweep over a mixed file still exits 0
        return stop(Status::skipped, fmt::format("--dir={} is checked in --mode=C only (got --mode={}); {}", p.dir,
                c.mode, c.mode == Mode::B ? "check --dir=fwd_t and --dir=bwd for bitwise reruns instead"
                                          : "time fwd_t and bwd instead"));
    if (c.expected_partitions > 0 && !backend.partitions_graphs())
        return stop(Status::unimplemented, fmt::format("--expected-n-partitions={}: backend {} does not partition its "
                "graph", c.expected_partitions, backend.name()));
    for (const Dir d : directions(p.dir))  // may load the backend's library: the prepare phase's time
        if (auto no = timed(r, Phase::prepare, [&] { return backend.support(step_problem(p, d)); }))
            return stop(no->status, no->reason);
    if (auto over = timed(r, Phase::prepare, [&] { return device_memory_guard(p, backend, limits); }))
        return stop(Status::skipped, *over);
    return false;
}

/// --impl / --skip-impl on the plan's implementation (core/implementation.hpp impl_excluded):
/// throws BackendError SKIPPED with the reason when the selection leaves the case out.
void select_impl(const Plan& plan, const ImplSelection& sel, bool complete) {
    if (sel.empty()) return;
    if (std::string why = impl_excluded(plan.implementation(), sel, complete); !why.empty())
        throw BackendError(Status::skipped, why);
}

/// One case's steps on one backend: what they share (the inputs, the plan of the last prepared
/// step, its outputs and its reference) and one member per kind of step. Writes into r.
class CaseRun {
public:
    CaseRun(const Case& c, Backend& backend, const TimingOptions& timing, const ImplSelection& impls, CaseResult& r)
        : c_(c), backend_(backend), timing_(timing), impls_(impls), r_(r), chained_(directions(c.prb.dir).size() > 1) {}

    /// Runs `steps` (case_steps) in order; stops after a check a later direction must not build on.
    void run(const std::vector<Step>& steps) {
        for (std::size_t k = 0; k < steps.size(); ++k) {
            const Problem q = step_problem(c_.prb, steps[k].dir);
            switch (steps[k].kind) {
                case Step::Kind::check: {
                    const bool more = k + 1 < steps.size() && steps[k + 1].kind == Step::Kind::check;
                    if (!check(q, more)) return;
                    break;
                }
                case Step::Kind::time: time(q); break;
                case Step::Kind::rerun: rerun(q); break;
            }
        }
    }

private:
    /// Prefix of the notes of a step of a chained case ("fwd: ", "bwd: "), "" otherwise.
    std::string tag(const Problem& q) const {
        return chained_ ? step_tag(q.dir) : "";
    }

    /// Fills the inputs (once per case) and prepares the plan of direction `q.dir`. A backward
    /// after a checked forward (fwd_bwd) takes the forward's own O and stats, exactly as it gave
    /// them; any other backward gets O and stats displaced from the reference forward.
    void prepare(const Problem& q) {
        if (!filled_) {
            in_ = timed(r_, Phase::fill, [&] { return fill_inputs(c_.prb); });
            filled_ = true;
            first_mask_ = vendor_mask(backend_, q);
            o_saturated_ = timed(r_, Phase::displace, [&] { return displace(q, in_, first_mask_.get(), &qk_); });
        } else if (q.dir == Dir::bwd && checked_before_) {
            take_forward_outputs(q);
        }
        plan_.reset();  // one plan at a time
        plan_ = prepare_plan(q);
        record_plan(q);
        select_impl(*plan_, impls_, false);
    }

    /// Records what plan_ ran and bound under tag(q) (replacing that tag's record) and sets r's
    /// record from all of them: one plan's as it is; fwd_bwd's two with the tag on the name
    /// ("fwd: A; bwd: B"), on each part's place and on each tensor's name.
    void record_plan(const Problem& q) {
        const std::string t0 = tag(q);
        ran_[t0] = {plan_->implementation(), plan_->bound_tensors()};
        if (!chained_) {
            std::tie(r_.impl, r_.tensors) = ran_.begin()->second;
            return;
        }
        r_.impl = {};
        r_.tensors.clear();
        for (const std::string t : {step_tag(Dir::fwd_t), step_tag(Dir::bwd)}) {  // in run order
            const auto it = ran_.find(t);
            if (it == ran_.end()) continue;
            const auto& [im, tensors] = it->second;
            r_.impl.name += fmt::format("{}{}{}", r_.impl.name.empty() ? "" : "; ", t, im.name);
            for (ImplPart part : im.parts) {
                part.where = part.where.empty() ? t.substr(0, 3) : t + part.where;
                r_.impl.parts.push_back(std::move(part));
            }
            for (BoundTensor b : tensors) {
                b.name = t + b.name;
                r_.tensors.push_back(std::move(b));
            }
        }
    }

    /// Backend::prepare on the prepare phase's clock, the plan's notes, then
    /// --expected-n-partitions (benchdnn --graph's knob; a backend that does not partition was
    /// refused before filling): another partition count is FAILED. Throws BackendError.
    std::unique_ptr<Plan> prepare_plan(const Problem& q) {
        std::unique_ptr<Plan> plan = timed(r_, Phase::prepare, [&] { return backend_.prepare(q, in_); });
        for (auto& n : plan->notes()) r_.notes.push_back(tag(q) + n);
        if (c_.expected_partitions > 0)
            if (const std::size_t n = plan->partitions().value_or(0); static_cast<std::int64_t>(n) != c_.expected_partitions)
                throw BackendError(Status::failed, fmt::format("{} split the {} graph into {} partition(s), "
                        "--expected-n-partitions={}", backend_.name(), q.dir, n, c_.expected_partitions));
        return plan;
    }

    /// fwd_bwd: the checked forward's O and stats become the backward's inputs. Rows the forward
    /// leaves unspecified (Conventions: past the valid query length) hold whatever it left there,
    /// NaN included; they get the fully masked row's O = 0 and the backend's masked-row stats
    /// instead (the backward masks those rows either way).
    void take_forward_outputs(const Problem& q) {
        in_.O = std::move(out_.O);
        in_.stats = std::move(out_.stats);
        const Conventions conv = backend_.conventions();
        if (!conv.padded_rows_unspecified) return;
        for (std::int64_t b = 0; b < q.dims.B; ++b)
            for (std::int64_t h = 0; h < q.dims.H_q; ++h)
                for (std::int64_t i = valid_q(q, b); i < q.dims.S_q; ++i) {
                    std::fill_n(&in_.O.at(b, h, i, 0), q.dims.D_v, 0.f);
                    in_.stats.at(b, h, i, 0) = conv.masked_row_stats;
                }
    }

    /// The reference of direction q.dir on the step's inputs, fed the first direction's dropout
    /// mask (as the vendor's backward must regenerate it).
    void run_reference(const Problem& q) {
        RefOptions opt = default_ref_options(c_.prb, first_mask_.get());
        const Conventions conv = backend_.conventions();
        opt.emulate_rounding = conv.reference_rounds_intermediates;
        opt.io_scores = conv.scores_in_io_type;
        opt.save_qk = &qk_;  // a forward leaves it, a backward takes it
        opt.qk = &qk_;
        ref_fwd_.reset();
        ref_bwd_.reset();
        if (c_.sample_rows > 0 && !sample_) {  // --check=sample:N: the same rows for every step
            sample_ = choose_rows(q, c_.sample_rows);
            const auto dirs = directions(c_.prb.dir);
            if (std::find(dirs.begin(), dirs.end(), Dir::bwd) == dirs.end()) {  // no key rows in a forward's outputs
                sample_->kv.resize(static_cast<std::size_t>(q.dims.S_kv));
                std::iota(sample_->kv.begin(), sample_->kv.end(), std::int64_t{0});
            }
            if (!sample_->sampled(q)) {
                sample_.reset();  // it holds every row: a full check
            } else {
                r_.sample = describe_sample(q, *sample_);
                if (is_fp8(q.dt)) r_.notes.push_back("amax not checked: a sampled check computes no maximum over every row");
                if (c_.prb.dir == Dir::bwd)
                    r_.notes.push_back("O and stats displaced by the full reference forward, O(S_q S_kv D): --dir=fwd_bwd "
                            "feeds the vendor's own (docs/trust.md#sampled-checks)");
            }
        }
        timed(r_, Phase::reference, [&] {
            if (q.dir == Dir::bwd) ref_bwd_ = sample_ ? ref_backward_sampled(q, in_, opt, *sample_) : ref_backward(q, in_, opt);
            else ref_fwd_ = sample_ ? ref_forward_sampled(q, in_, opt, *sample_) : ref_forward(q, in_, opt);
        });
    }

    /// Outputs `out` of problem `q` checked against the step's reference.
    std::vector<OutputCheck> checks_against_reference(const Problem& q, const SdpaOutputs& out) const {
        return check_outputs(q, out, ref_fwd_ ? &*ref_fwd_ : nullptr, ref_bwd_ ? &*ref_bwd_ : nullptr,
                backend_.conventions(), sample_ ? &*sample_ : nullptr);
    }

    /// The dropout report (on the first check), the fwd_bwd mask agreement and the vendor reruns
    /// (driver/dropout_checks.hpp).
    void dropout_checks(const Problem& q, bool chained) {
        const auto mask = chained ? vendor_mask(backend_, q) : first_mask_;
        if (!mask) return;
        if (!r_.dropout) {
            r_.dropout = dropout_report(q, *mask);
            r_.notes.push_back(dropout_note(*r_.dropout));
        }
        if (chained)
            if (auto diff = first_mask_difference(c_.prb, *first_mask_, "forward", *mask, "backward"))
                r_.dropout->failures.push_back("dropout: the backward's mask is not the forward's: " + *diff);
        const DropoutRerun run{backend_, in_, out_, c_.mode == Mode::B || q.deterministic,
            [this](const Problem& x, const SdpaOutputs& o) { return checks_against_reference(x, o); }};
        dropout_rerun_checks(q, *mask, run, *r_.dropout);
    }

    /// The input check (driver/input_check.hpp) after the checked run: FAILED when the vendor wrote
    /// into one of its input buffers, whatever the outputs' verdict was.
    void input_check(const Problem& q) {
        const auto changed = timed(r_, Phase::compare, [&] { return modified_input(q, in_, plan_->input_buffers()); });
        if (!changed) return;
        r_.status = Status::failed;
        r_.reason += fmt::format("{}{}input {}", r_.reason.empty() ? "" : "; ", tag(q), *changed);
    }

    /// Check step: runs the plan of `q.dir` once, checks its outputs against the reference and
    /// the dropout rules, and judges. Returns false when a later direction must not run (`more`):
    /// its reference would be fed a wrong forward.
    bool check(const Problem& q, bool more) {
        const bool chained = q.dir == Dir::bwd && checked_before_;
        prepare(q);
        timed(r_, Phase::vendor, [&] { plan_->execute(); });
        record_plan(q);
        select_impl(*plan_, impls_, true);
        add_run_notes(*plan_, r_, tag(q));
        out_ = timed(r_, Phase::read, [&] { return plan_->read_outputs(); });
        if (auto seen = timed(r_, Phase::compare, [&] { return observed_masked_rows(q, out_); }))
            r_.notes.push_back(tag(q) + *seen);
        run_reference(q);
        for (auto& chk : timed(r_, Phase::compare, [&] { return checks_against_reference(q, out_); })) {
            if (chained && sample_ && chk.failure == CheckFailure::ref_nonfinite)  // fed the forward's unchecked rows
                chk.reason += ", or the vendor forward's O or stats are wrong in rows the sample did not check "
                              "(--check=full tells)";
            if (chk.zero_by_construction > 0)
                r_.notes.push_back(fmt::format("{}{}: {} element(s) zero by construction (docs/trust.md#zero-by-construction): "
                        "held to the bound, not to zero trust", tag(q), chk.output, chk.zero_by_construction));
            r_.checks.push_back(std::move(chk));
        }
        if (q.dropout) timed(r_, Phase::dropout, [&] { dropout_checks(q, chained); });
        checked_before_ = true;
        if (chained) r_.reason.clear();
        judge(r_);
        input_check(q);
        if (more && r_.status != Status::passed && r_.status != Status::mistrusted) {
            r_.reason += "; backward not run";
            return false;
        }
        r_.checked = !more;
        if (o_saturated_ > 0 && (r_.status == Status::passed || r_.status == Status::mistrusted)) {
            const float d = geometry(q).at(Role::O).descale;
            r_.reason += fmt::format("{}O input: {} value(s) of the reference forward past the {} range at descale_O {} "
                    "(largest {:.6g}), saturated (a larger --fp8-descale=O:... tells more)", r_.reason.empty() ? "" : "; ",
                    o_saturated_, q.dt, d, max_finite(q.dt) * d);
            r_.status = Status::mistrusted;
        }
        return true;
    }

    /// Time step (P, CP): times the checked plan when the check did not fail, or in P a plan
    /// prepared for it alone (EXECUTED: nothing is checked, never PASSED).
    void time(const Problem& q) {
        if (!plan_) {
            prepare(q);
            if (!impls_.empty()) {  // the run that names every part, before the selection
                plan_->execute();
                record_plan(q);
                select_impl(*plan_, impls_, true);
            }
            measure(*plan_, timing_, backend_.peak_tflops(q.dt), r_);
            record_plan(q);
            r_.status = Status::executed;
        } else if (!is_error(r_.status)) {
            measure(*plan_, timing_, backend_.peak_tflops(q.dt), r_);
        }
    }

    /// Rerun step (B): the checked plan again, every output bitwise equal to the check's.
    void rerun(const Problem& q) {
        if (r_.status == Status::failed) return;
        if (auto diff = timed(r_, Phase::rerun, [&] { return rerun_differs(*plan_, geometry(q).output_list(), out_); })) {
            r_.status = Status::failed;
            r_.reason = *diff;
        }
    }

    const Case& c_;
    Backend& backend_;
    const TimingOptions& timing_;
    const ImplSelection& impls_;  ///< --impl / --skip-impl (RunLimits)
    CaseResult& r_;
    const bool chained_;  ///< more than one direction (fwd_bwd): notes are tagged by direction
    SdpaInputs in_;
    bool filled_ = false;
    std::unique_ptr<Plan> plan_;
    SdpaOutputs out_;
    std::optional<RefForward> ref_fwd_;  ///< the reference of the last check step (one of the two)
    std::optional<RefBackward> ref_bwd_;
    std::shared_ptr<const DropoutMask> first_mask_;  ///< the first direction's vendor mask
    std::int64_t o_saturated_ = 0;                   ///< fp8 O inputs saturated by the displacement
    RefQK qk_;  ///< the reference's work on Q and K (which no step changes), done once per case
    std::optional<RowSample> sample_;  ///< --check=sample:N's rows (chosen at the first reference), else none
    bool checked_before_ = false;                    ///< a direction was checked by an earlier step
    /// What each direction's plan ran and bound, by its tag ("" alone, "fwd: " and "bwd: " for fwd_bwd).
    std::map<std::string, std::pair<Implementation, std::vector<BoundTensor>>> ran_;
};

}  // namespace

Problem step_problem(const Problem& p, Dir d) {
    if (d == Dir::fwd_bwd) throw std::logic_error("step_problem: fwd_bwd is a list of steps (core/problem.hpp directions)");
    Problem q = p;
    q.dir = d;
    if (d != Dir::bwd) q.dmask = false;  // dMask is the backward's
    return q;
}

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

std::string step_tag(Dir d) { return fmt::format("{}: ", d == Dir::bwd ? "bwd" : "fwd"); }

std::string_view without_step_tag(std::string_view reason) {
    for (const Dir d : {Dir::fwd_t, Dir::bwd})
        if (const std::string t = step_tag(d); reason.starts_with(t)) return reason.substr(t.size());
    return reason;
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
        if (!stopped_before_steps(c, backend, limits, r)) CaseRun(c, backend, timing, limits.impls, r).run(*case_steps(c));
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
    if (r.status == Status::listed) return r;
    // What only the backend knows: the ISA it dispatched to, its library, its device.
    if (const auto isa = backend.cpu_isa()) r.info.isa = fmt::format("{}", *isa);
    r.info.vendor_version = backend.library_version();
    r.info.device = backend.device_name();
    if (r.info.device.empty() && engine_of(c.backend) == Engine::cpu) r.info.device = cpu_model_name();
    const double vendor_ms = r.phases_ms[static_cast<std::size_t>(Phase::vendor)];
    r.vendor_cpu_util = vendor_ms > 0 ? r.vendor_cpu_util / vendor_ms : 0;
    r.ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    double phases = 0;
    for (const double ms : r.phases_ms) phases += ms;
    r.phases_ms[static_cast<std::size_t>(Phase::other)] = std::max(0.0, r.ms - phases);  // what no phase accounts for
    return r;
}

}  // namespace sdpa
