#include "reports/result_fields.hpp"

#include <type_traits>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace sdpa {

namespace {

using V = FieldValue;

// Values to and from FieldValue, by the member's type.
V to_value(const std::string& x) { return V{x}; }
V to_value(bool x) { return V{x}; }
template <class T>
    requires std::is_floating_point_v<T>
V to_value(T x) {
    return V{static_cast<double>(x)};
}
template <class T>
    requires(std::is_integral_v<T> && !std::is_same_v<T, bool>)
V to_value(T x) {
    return V{static_cast<std::int64_t>(x)};
}
template <std::size_t N>
V to_value(const std::array<std::int64_t, N>& x) {
    return V{std::vector<std::int64_t>(x.begin(), x.end())};
}
V to_value(const std::vector<std::int64_t>& x) { return V{x}; }
V to_value(const std::vector<double>& x) { return V{x}; }
V to_value(const std::vector<std::string>& x) { return V{x}; }
template <class E>
    requires std::is_enum_v<E>
V to_value(E x) {
    return V{std::string(format_as(x))};
}

std::string text(const V& v) {
    const auto* s = std::get_if<std::string>(&v);
    return s ? *s : std::string();
}
double number(const V& v) {
    if (const auto* d = std::get_if<double>(&v)) return *d;
    if (const auto* i = std::get_if<std::int64_t>(&v)) return static_cast<double>(*i);
    return 0;
}
/// Every element of a list value as T (a number list may hold integers or numbers; an empty list
/// has no type).
template <class T>
std::vector<T> list(const V& v) {
    std::vector<T> out;
    std::visit([&](const auto& x) {
        using X = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<X, std::vector<std::int64_t>> || std::is_same_v<X, std::vector<double>>) {
            if constexpr (std::is_arithmetic_v<T>)
                for (const auto e : x) out.push_back(static_cast<T>(e));
        } else if constexpr (std::is_same_v<X, std::vector<std::string>> && std::is_same_v<T, std::string>) {
            out = x;
        }
    }, v);
    return out;
}

void from_value(const V& v, std::string& x) { x = text(v); }
void from_value(const V& v, bool& x) {
    const auto* b = std::get_if<bool>(&v);
    x = b && *b;
}
template <class T>
    requires std::is_floating_point_v<T>
void from_value(const V& v, T& x) {
    x = static_cast<T>(number(v));
}
template <class T>
    requires(std::is_integral_v<T> && !std::is_same_v<T, bool>)
void from_value(const V& v, T& x) {
    x = static_cast<T>(number(v));
}
template <std::size_t N>
void from_value(const V& v, std::array<std::int64_t, N>& x) {
    const auto l = list<std::int64_t>(v);
    for (std::size_t k = 0; k < N && k < l.size(); ++k) x[k] = l[k];
}
void from_value(const V& v, std::vector<std::int64_t>& x) { x = list<std::int64_t>(v); }
void from_value(const V& v, std::vector<double>& x) { x = list<double>(v); }
void from_value(const V& v, std::vector<std::string>& x) { x = list<std::string>(v); }
template <class E, std::size_t N>
void from_name(const V& v, const std::array<EnumName<E>, N>& names, E& x) {
    if (const auto e = enum_parse(names, text(v))) x = *e;
}
void from_value(const V& v, Status& x) { from_name(v, kStatusNames, x); }
void from_value(const V& v, Output& x) { from_name(v, kOutputNames, x); }
void from_value(const V& v, CheckFailure& x) { from_name(v, kCheckFailureNames, x); }

/// A field stored in the member `access(r)` returns (a generic lambda taking R& or const R&).
template <class R, class A>
Field<R> stored(std::string key, std::string what, A access) {
    return {std::move(key), std::move(what), [access](const R& r) { return to_value(access(r)); },
        [access](R& r, const V& v) { from_value(v, access(r)); }};
}

/// A field derived from others on demand (not set back: recomputed).
template <class R, class G>
Field<R> derived(std::string key, std::string what, G get) {
    return {std::move(key), std::move(what), std::move(get), nullptr};
}

/// A top-level (or phases_ms) column of CaseResult from a Field.
ResultField column(Field<CaseResult> f, FieldGroup g = FieldGroup::top) {
    return {f.key, g, f.key, std::move(f.what), std::move(f.get), std::move(f.set)};
}

V text_or_none(const std::string& s) { return s.empty() ? V{} : V{s}; }

/// The output with the largest |err|/bound (a NaN ratio wins), or nullptr without checks.
const OutputCheck* worst_check(const CaseResult& r) {
    const OutputCheck* worst = nullptr;
    for (const auto& c : r.checks)
        if (!worst || !(c.worst_ratio <= worst->worst_ratio)) worst = &c;
    return worst;
}

bool has_mask_stats(const CaseResult& r) { return r.dropout && r.dropout->stats.heads > 0; }

/// A stored field of the "perf" object: absent when the case was not timed; setting it makes r.perf.
template <class A>
ResultField perf_field(std::string key, std::string what, A access) {
    return {key, FieldGroup::perf, key, std::move(what),
        [access](const CaseResult& r) { return r.perf ? to_value(access(*r.perf)) : V{}; },
        [access](CaseResult& r, const V& v) {
            if (!r.perf) r.perf.emplace();
            from_value(v, access(*r.perf));
        }};
}

/// A field of the "perf" object derived from the stored ones.
template <class F>
ResultField perf_derived(std::string key, std::string what, F f) {
    return {key, FieldGroup::perf, key, std::move(what),
        [f](const CaseResult& r) { return r.perf ? V{f(*r.perf)} : V{}; }, nullptr};
}

// #lizard forgives: the field table, one row a field (scripts/function_length.sh)
std::vector<ResultField> make_fields() {
    using R = CaseResult;
    using P = PerfResult;
    std::vector<ResultField> t{
        column(stored<R>("idx", "0-based position of the case in the whole run", [](auto& r) -> auto& { return r.index; })),
        column(stored<R>("id", "the case id (its repro, FILE:LINE for a line that did not parse, ' #2' for a repeat)",
            [](auto& r) -> auto& { return r.id; })),
        column(stored<R>("status", fmt::format("the case's status ({})", enum_choices(kStatusNames)),
            [](auto& r) -> auto& { return r.status; })),
        column({"expect", "the --expect outcome (XFAIL, XPASS, NOT_APPLICABLE), absent without one",
            [](const R& r) { return r.expect.kind == Expected::none ? V{} : V{fmt::format("{}", r.expect.kind)}; },
            [](R& r, const V& v) { from_name(v, kExpectedNames, r.expect.kind); }}),
        column(stored<R>("reason", "why it is not PASSED", [](auto& r) -> auto& { return r.reason; })),
        column(stored<R>("repro", "the complete repro line", [](auto& r) -> auto& { return r.repro; })),
        column(stored<R>("backend", "backend name", [](auto& r) -> auto& { return r.info.backend; })),
        column(stored<R>("engine", "engine kind (cpu, gpu)", [](auto& r) -> auto& { return r.info.engine; })),
        column(stored<R>("mode", "--mode", [](auto& r) -> auto& { return r.info.mode; })),
        column(stored<R>("dir", "--dir", [](auto& r) -> auto& { return r.info.dir; })),
        column(stored<R>("dt", "--dt", [](auto& r) -> auto& { return r.info.dt; })),
        column(stored<R>("mask", "--mask", [](auto& r) -> auto& { return r.info.mask; })),
        column(stored<R>("prb", "problem descriptor without the name", [](auto& r) -> auto& { return r.info.prb; })),
        column(stored<R>("name", "n=NAME of the descriptor", [](auto& r) -> auto& { return r.info.name; })),
        column(stored<R>("case_ms", "wall time of the whole case, ms", [](auto& r) -> auto& { return r.ms; })),
        column(stored<R>("flops", "FLOPs of one run (docs/perf_and_reports.md#flop-and-byte-counts)",
            [](auto& r) -> auto& { return r.flops; })),
        column(stored<R>("bytes", "bytes one run must move", [](auto& r) -> auto& { return r.bytes; })),
        perf_field("runs", "timed runs", [](auto& p) -> auto& { return p.time.runs; }),
        perf_field("min_ms", "fastest timed run, ms", [](auto& p) -> auto& { return p.time.min_ms; }),
        perf_field("median_ms", "median timed run, ms", [](auto& p) -> auto& { return p.time.median_ms; }),
        perf_field("mean_ms", "mean timed run, ms", [](auto& p) -> auto& { return p.time.mean_ms; }),
        perf_field("max_ms", "slowest timed run, ms", [](auto& p) -> auto& { return p.time.max_ms; }),
        perf_field("compile_ms", "vendor plan build and compile time, ms", [](auto& p) -> auto& { return p.compile_ms; }),
        perf_field("gflops", "GFLOP/s at the median time", [](auto& p) -> auto& { return p.gflops_at_median; }),
        perf_field("gflops_best", "GFLOP/s at the min time", [](auto& p) -> auto& { return p.gflops_at_min; }),
        perf_field("gbytes_per_s", "GB/s at the median time", [](auto& p) -> auto& { return p.gbytes_per_s_at_median; }),
        column(derived<R>("worst_output", "the output with the largest |err|/bound (checked cases)", [](const R& r) {
            const OutputCheck* w = worst_check(r);
            return w ? V{fmt::format("{}", w->output)} : V{};
        })),
        column(derived<R>("worst_ratio", "its largest |err|/bound (< 1 passes)", [](const R& r) {
            const OutputCheck* w = worst_check(r);
            return w ? V{w->worst_ratio} : V{};
        })),
        column({"dropout", "--dropout as P:SEED:OFFSET, absent without dropout",
            [](const R& r) { return text_or_none(r.info.dropout); }, [](R& r, const V& v) { r.info.dropout = text(v); }}),
        column(derived<R>("dropout_keep_p_value", "smallest per-head keep-rate p-value (p > 0)",
            [](const R& r) { return has_mask_stats(r) ? V{r.dropout->stats.keep.p_value} : V{}; })),
        column(derived<R>("dropout_pairs_p_value", "smallest per-head neighbour-pair p-value (p > 0)",
            [](const R& r) { return has_mask_stats(r) ? V{r.dropout->stats.pairs.p_value} : V{}; })),
        column(stored<R>("expect_reason", "the --expect entry's reason", [](auto& r) -> auto& { return r.expect.reason; })),
        column(derived<R>("shown_status", "the status reports show: the --expect outcome, else the status",
            [](const R& r) { return V{std::string(shown_status(r))}; })),
        column(stored<R>("timed_out", "killed by --timeout-per-case", [](auto& r) -> auto& { return r.timed_out; })),
        column(stored<R>("crashed", "its child process died without a result", [](auto& r) -> auto& { return r.crashed; })),
        column(stored<R>("checked", "the outputs were compared (a mode that checks)", [](auto& r) -> auto& { return r.checked; })),
        perf_field("gflops_worst", "GFLOP/s at the max time", [](auto& p) -> auto& { return p.gflops_at_max; }),
        perf_derived("tflops", "TFLOP/s at the median time", [](const P& p) { return 1e-3 * p.gflops_at_median; }),
        perf_derived("tflops_best", "TFLOP/s at the min time", [](const P& p) { return 1e-3 * p.gflops_at_min; }),
        perf_derived("tflops_worst", "TFLOP/s at the max time", [](const P& p) { return 1e-3 * p.gflops_at_max; }),
        perf_field("cold_cache", "--cold-cache was on", [](auto& p) -> auto& { return p.cold_cache; }),
        column(derived<R>("minimized_repro", "--minimize: the smallest repro that fails the same way",
            [](const R& r) { return r.minimized ? V{r.minimized->repro} : V{}; })),
        column({"alone_status",
            "a FAILED case of a run of several, rerun alone in a fresh process: that status (PASSED: the failure "
            "depends on the cases before it)",
            [](const R& r) { return text_or_none(r.alone_status); }, [](R& r, const V& v) { r.alone_status = text(v); }}),
    };
    // One field per phase (reports/case_result.hpp Phase), in the "phases_ms" object.
    for (const auto& ph : kPhaseNames) {
        const auto k = static_cast<std::size_t>(ph.value);
        t.push_back({fmt::format("{}_ms", ph.name), FieldGroup::phases, std::string(ph.name),
            fmt::format("wall time of the {} phase, ms (0: not run)", ph.name),
            [k](const R& r) { return V{r.phases_ms[k]}; }, [k](R& r, const V& v) { r.phases_ms[k] = number(v); }});
    }
    // Appended after the phases, so that every earlier column keeps its place.
    t.push_back({"peak_tflops", FieldGroup::perf, "peak_tflops",
        "the device's peak dense TFLOP/s for the io type (absent when unknown)",
        [](const R& r) { return r.perf && r.perf->peak_tflops > 0 ? V{r.perf->peak_tflops} : V{}; },
        [](R& r, const V& v) {
            if (!r.perf) r.perf.emplace();
            r.perf->peak_tflops = number(v);
        }});
    t.push_back({"pct_peak", FieldGroup::perf, "pct_peak", "TFLOP/s at the median time as a percentage of peak_tflops",
        [](const R& r) {
            return r.perf && r.perf->peak_tflops > 0 ? V{100.0 * 1e-3 * r.perf->gflops_at_median / r.perf->peak_tflops} : V{};
        },
        nullptr});
    // What ran (core/implementation.hpp): appended, so that every earlier column keeps its place.
    t.push_back(column({"impl",
        "the vendor's name for what ran: oneDNN's partition kernel, cuDNN's plan, PyTorch's operator and SDPBackend "
        "(absent when the case did not reach the vendor)",
        [](const R& r) { return text_or_none(r.impl.name); }, [](R& r, const V& v) { r.impl.name = text(v); }}));
    t.push_back(column(derived<R>("ref_fallback",
        "the matmuls or softmax the vendor ran with a reference implementation, 'KIND IMPL (SHAPE)' joined by '; ' "
        "(absent when none did)",
        [](const R& r) { return text_or_none(reference_fallback(r.impl)); })));
    t.push_back(column(derived<R>("ref_parts",
        "how many implementations inside the plan are reference ones, of any kind (absent when the vendor lists none)",
        [](const R& r) { return r.impl.parts.empty() ? V{} : V{reference_parts(r.impl)}; })));
    t.push_back(perf_field("cv", "coefficient of variation of the timed runs: standard deviation / mean (NaN: fewer than 2)",
        [](auto& p) -> auto& { return p.time.cv; }));
    t.push_back(perf_field("noisy", "cv is above --noisy-cv: too noisy to tell a small change",
        [](auto& p) -> auto& { return p.noisy; }));
    // What the case was and where it ran (CaseInfo): appended, so that every earlier column keeps
    // its place. --expect conditions (driver/expect.hpp) read these by column name.
    t.push_back(column(stored<R>("B", "batch", [](auto& r) -> auto& { return r.info.B; })));
    t.push_back(column(stored<R>("H_q", "query heads", [](auto& r) -> auto& { return r.info.H_q; })));
    t.push_back(column(stored<R>("H_kv", "key and value heads", [](auto& r) -> auto& { return r.info.H_kv; })));
    t.push_back(column(stored<R>("S_q", "query sequence length", [](auto& r) -> auto& { return r.info.S_q; })));
    t.push_back(column(stored<R>("S_kv", "key and value sequence length", [](auto& r) -> auto& { return r.info.S_kv; })));
    t.push_back(column(stored<R>("D_qk", "head size of Q and K", [](auto& r) -> auto& { return r.info.D_qk; })));
    t.push_back(column(stored<R>("D_v", "head size of V", [](auto& r) -> auto& { return r.info.D_v; })));
    t.push_back(column(stored<R>("attention", "MHA (H_kv = H_q), GQA (1 < H_kv < H_q) or MQA (H_kv = 1 < H_q)",
        [](auto& r) -> auto& { return r.info.attention; })));
    t.push_back(column(stored<R>("cpu_isa", "--cpu-isa: the ISA level the vendor's dispatch was capped at (default: none)",
        [](auto& r) -> auto& { return r.info.cpu_isa; })));
    t.push_back(column({"isa",
        "the ISA level the vendor dispatched to (oneDNN's effective ISA: the cap met with the CPU), absent for a "
        "backend without ISA control",
        [](const R& r) { return text_or_none(r.info.isa); }, [](R& r, const V& v) { r.info.isa = text(v); }}));
    t.push_back(column({"vendor_version", "the vendor library's version, absent when it has none",
        [](const R& r) { return text_or_none(r.info.vendor_version); }, [](R& r, const V& v) { r.info.vendor_version = text(v); }}));
    t.push_back(column(stored<R>("device", "the GPU, or the CPU model, the case ran on", [](auto& r) -> auto& { return r.info.device; })));
    t.push_back(column(derived<R>("impls",
        "every implementation inside the plan as KIND:IMPL (oneDNN: matmul:brg_matmul:avx10_1_512_amx), each once, "
        "space-separated (absent when the vendor lists none)",
        [](const R& r) { return text_or_none(implementation_kinds(r.impl)); })));
    t.push_back(column(derived<R>("mask_tensor",
        "the dims of the mask tensor the vendor was given, in its rank and order, e.g. 1x1x64x80 (absent: none)",
        [](const R& r) {
            for (const auto& t : r.tensors)
                if (t.name == "mask" || t.name.ends_with(": mask")) return V{fmt::format("{}", fmt::join(t.dims, "x"))};
            return V{};
        })));
    t.push_back(column(stored<R>("vendor_cpu_util",
        "the process's CPU time over the vendor phase's wall time: the cores the vendor kept busy on average",
        [](auto& r) -> auto& { return r.vendor_cpu_util; })));
    t.push_back(column(stored<R>("sample", "--check=sample:N: the rows the check covered (\"64/32768 query rows, "
        "64/32768 key rows\"); \"\" for a full check (docs/trust.md#sampled-checks)", [](auto& r) -> auto& { return r.sample; })));
    // The lists: JSONL and the pipe only.
    ResultField notes = column(stored<R>("notes", "the backend's and the checks' notes (-v prints them)",
        [](auto& r) -> auto& { return r.notes; }));
    notes.column_field = false;
    t.push_back(std::move(notes));
    ResultField samples = perf_field("samples_ms", "every timed run, in order, ms", [](auto& p) -> auto& { return p.samples_ms; });
    samples.column_field = false;
    t.push_back(std::move(samples));
    ResultField knobs = column(stored<R>("knobs", "every knob that applies to the case as NAME=VALUE, defaults included",
        [](auto& r) -> auto& { return r.info.knobs; }));
    knobs.column_field = false;
    t.push_back(std::move(knobs));
    return t;
}

std::vector<Field<OutputCheck>> make_check_fields() {
    using C = OutputCheck;
    return {
        stored<C>("output", "the output, as kOutputNames spells it (core/sdpa_tensors.hpp)", [](auto& c) -> auto& { return c.output; }),
        stored<C>("pass", "it passed every check", [](auto& c) -> auto& { return c.pass; }),
        stored<C>("failure", "the check that failed first (none when it passed; docs/design.md)",
            [](auto& c) -> auto& { return c.failure; }),
        stored<C>("mistrusted", "a pass that proves little (zero trust, fp8 saturation, nothing checked)",
            [](auto& c) -> auto& { return c.mistrusted; }),
        stored<C>("reason", "why it failed", [](auto& c) -> auto& { return c.reason; }),
        stored<C>("worst_ratio", "max |err|/bound over the elements (the margin: < 1 passes)",
            [](auto& c) -> auto& { return c.worst_ratio; }),
        stored<C>("worst_index", "(b,h,i,j) of the worst element", [](auto& c) -> auto& { return c.worst_index; }),
        stored<C>("got", "the output there", [](auto& c) -> auto& { return c.got; }),
        stored<C>("expected", "the reference there", [](auto& c) -> auto& { return c.expected; }),
        stored<C>("err", "|got - expected|", [](auto& c) -> auto& { return c.err; }),
        stored<C>("bound", "the bound there", [](auto& c) -> auto& { return c.bound; }),
        stored<C>("nonfinite", "non-finite elements where the reference is finite", [](auto& c) -> auto& { return c.nonfinite; }),
        stored<C>("ref_nonfinite", "non-finite reference elements (the case overflows f32)",
            [](auto& c) -> auto& { return c.ref_nonfinite; }),
        stored<C>("mag_nonfinite", "elements whose reference magnitude (the bound's M) is not finite where the reference is",
            [](auto& c) -> auto& { return c.mag_nonfinite; }),
        stored<C>("zero_fraction", "zeros in the reference outside the structural ones and those zero by construction",
            [](auto& c) -> auto& { return c.zero_fraction; }),
        stored<C>("got_zero_fraction", "zeros in the output outside the same elements",
            [](auto& c) -> auto& { return c.got_zero_fraction; }),
        stored<C>("structural_zeros", "elements the mask forces to 0", [](auto& c) -> auto& { return c.structural_zeros; }),
        stored<C>("norm_worst", "max over heads of the norm check's |difference|/bound (< 1 passes)",
            [](auto& c) -> auto& { return c.norm_worst; }),
        stored<C>("norm_ratio", "||X||/||X_ref|| at that head", [](auto& c) -> auto& { return c.norm_ratio; }),
        stored<C>("norm_head", "(b,h) of that head", [](auto& c) -> auto& { return c.norm_head; }),
        stored<C>("stats_sum_worst", "stats: max |sum_j exp(s_ij - stats_i) - 1|/slack (< 1 passes)",
            [](auto& c) -> auto& { return c.stats_sum_worst; }),
        stored<C>("saturated", "fp8: reference values past the output's range", [](auto& c) -> auto& { return c.saturated; }),
        stored<C>("unchecked", "elements not checked (ragged absent rows, rows a backend leaves unspecified)",
            [](auto& c) -> auto& { return c.unchecked; }),
        stored<C>("elements", "the output's size, as the comparison went over it (with compare_ms, its rate)",
            [](auto& c) -> auto& { return c.elements; }),
        stored<C>("mistrust", "why MISTRUSTED when not zero trust (\"\" otherwise)", [](auto& c) -> auto& { return c.mistrust; }),
        stored<C>("located", "worst_index, got, expected, err and bound describe one element (false: the failure is "
            "about the buffer)", [](auto& c) -> auto& { return c.located; }),
        stored<C>("zero_by_construction", "elements whose exact value the problem makes 0 (docs/trust.md): held to the "
            "bound, not counted by zero trust", [](auto& c) -> auto& { return c.zero_by_construction; }),
        stored<C>("bound_c", "the bound's constant c (bound = c (u_eff (mag + floor) + tiny))",
            [](auto& c) -> auto& { return c.bound_c; }),
        stored<C>("bound_u_eff", "its effective roundoff u_eff", [](auto& c) -> auto& { return c.bound_u_eff; }),
        stored<C>("bound_mag", "the reference's magnitude M at the worst element", [](auto& c) -> auto& { return c.bound_mag; }),
        stored<C>("bound_floor", "max(M) / 1024", [](auto& c) -> auto& { return c.bound_floor; }),
        stored<C>("bound_tiny", "the absolute term tiny", [](auto& c) -> auto& { return c.bound_tiny; }),
        stored<C>("sampled", "a sampled check (--check=sample:N): the rows of each head it compared (dMask: columns); 0 "
            "for a full check", [](auto& c) -> auto& { return c.sampled; }),
        stored<C>("sample_of", "the rows (dMask: columns) of each head there are; 0 for a full check",
            [](auto& c) -> auto& { return c.sample_of; }),
        stored<C>("unsampled_nonfinite", "a sampled check: non-finite elements outside its rows (the whole output is "
            "scanned)", [](auto& c) -> auto& { return c.unsampled_nonfinite; }),
        stored<C>("column_sum_worst", "dK, dV of a sampled check: max |sum_j X_j - expected|/bound over (b,h_kv,d) (< 1 "
            "passes; docs/trust.md#sampled-checks)", [](auto& c) -> auto& { return c.column_sum_worst; }),
    };
}

/// A mask-statistics field: absent when there are none (p = 0: heads = 0).
template <class A>
Field<DropoutReport> stat(std::string key, std::string what, A access) {
    Field<DropoutReport> f = stored<DropoutReport>(std::move(key), std::move(what), access);
    f.get = [access](const DropoutReport& d) { return d.stats.heads > 0 ? to_value(access(d)) : V{}; };
    return f;
}

/// The (b, h) of a WorstHead as one [b, h] field.
template <class A>
Field<DropoutReport> head(std::string key, std::string what, A access) {
    return {std::move(key), std::move(what),
        [access](const DropoutReport& d) {
            return d.stats.heads > 0 ? V{std::vector<std::int64_t>{access(d).b, access(d).h}} : V{};
        },
        [access](DropoutReport& d, const V& v) {
            const auto l = list<std::int64_t>(v);
            if (l.size() != 2) return;
            access(d).b = l[0];
            access(d).h = l[1];
        }};
}

std::vector<Field<DropoutReport>> make_dropout_fields() {
    using D = DropoutReport;
    return {
        stored<D>("mask", "the mask the reference was fed (DropoutMask::describe)", [](auto& d) -> auto& { return d.mask; }),
        stored<D>("failures", "every failed dropout rule", [](auto& d) -> auto& { return d.failures; }),
        stat("heads", "(b, h) pairs the mask statistics tested", [](auto& d) -> auto& { return d.stats.heads; }),
        stat("threshold", "p-values below it FAIL", [](auto& d) -> auto& { return d.stats.threshold; }),
        stat("keep_p_value", "smallest per-head keep-rate p-value", [](auto& d) -> auto& { return d.stats.keep.p_value; }),
        stat("keep_rate_worst", "that head's keep rate", [](auto& d) -> auto& { return d.stats.keep.rate; }),
        head("keep_worst_head", "that head's (b, h)", [](auto& d) -> auto& { return d.stats.keep; }),
        stat("pairs_p_value", "smallest per-head neighbour-pair p-value", [](auto& d) -> auto& { return d.stats.pairs.p_value; }),
        stat("pairs_rate_worst", "that head's rate of equal neighbour pairs", [](auto& d) -> auto& { return d.stats.pairs.rate; }),
        head("pairs_worst_head", "that head's (b, h)", [](auto& d) -> auto& { return d.stats.pairs; }),
        stat("identical_heads", "heads whose mask equals an earlier head's", [](auto& d) -> auto& { return d.stats.identical_heads; }),
        stat("distinct_checked", "the distinct-heads rule could judge (false: identical masks too likely by chance)",
            [](auto& d) -> auto& { return d.stats.distinct_checked; }),
    };
}

std::vector<Field<MinimizeReport>> make_minimize_fields() {
    using M = MinimizeReport;
    return {
        stored<M>("repro", "the smallest case that still fails the same way", [](auto& m) -> auto& { return m.repro; }),
        stored<M>("signature", "that way, e.g. dQ:bound", [](auto& m) -> auto& { return m.signature; }),
        stored<M>("runs", "cases run while shrinking", [](auto& m) -> auto& { return m.runs; }),
        stored<M>("steps", "shrinking steps kept", [](auto& m) -> auto& { return m.steps; }),
        stored<M>("hit_limit", "stopped at --minimize-max-runs, not at a fixed point", [](auto& m) -> auto& { return m.hit_limit; }),
    };
}

std::vector<Field<ImplPart>> make_impl_part_fields() {
    using P = ImplPart;
    return {
        stored<P>("where", "the kernel of the plan it belongs to (oneDNN: \"partition 0\"), \"\" when one",
            [](auto& p) -> auto& { return p.where; }),
        stored<P>("kind", "what it computes, in the vendor's words (oneDNN: the primitive kind)", [](auto& p) -> auto& { return p.kind; }),
        stored<P>("impl", "the vendor's implementation name", [](auto& p) -> auto& { return p.impl; }),
        stored<P>("shape", "the vendor's problem description", [](auto& p) -> auto& { return p.shape; }),
        {"ms", "its time in the run that listed it, ms (absent when unknown)",
            [](const P& p) { return p.ms >= 0 ? V{p.ms} : V{}; },
            [](P& p, const V& v) { p.ms = std::holds_alternative<std::monostate>(v) ? -1.0 : number(v); }},
        derived<P>("reference", "a reference (unoptimised) implementation (core/implementation.hpp is_reference_impl)",
            [](const P& p) { return V{is_reference_impl(p.impl)}; }),
    };
}

std::vector<Field<BoundTensor>> make_tensor_fields() {
    using T = BoundTensor;
    return {
        stored<T>("name", "the geometry role (Q, dQ, stats, ...) or a tensor only the vendor graph has (scale, mask)",
            [](auto& t) -> auto& { return t.name; }),
        stored<T>("dt", "element type", [](auto& t) -> auto& { return t.dt; }),
        stored<T>("dims", "dims as the vendor was given them, in its rank and order (a host scalar: [])",
            [](auto& t) -> auto& { return t.dims; }),
        stored<T>("strides", "strides in elements, in the same order", [](auto& t) -> auto& { return t.strides; }),
    };
}

}  // namespace

const std::vector<ResultField>& result_fields() {
    static const std::vector<ResultField> t = make_fields();
    return t;
}

const ResultField* find_result_field(std::string_view column) {
    for (const auto& f : result_fields())
        if (f.column_field && f.column == column) return &f;
    return nullptr;
}

const std::vector<Field<OutputCheck>>& check_fields() {
    static const std::vector<Field<OutputCheck>> t = make_check_fields();
    return t;
}

const std::vector<Field<DropoutReport>>& dropout_fields() {
    static const std::vector<Field<DropoutReport>> t = make_dropout_fields();
    return t;
}

const std::vector<Field<MinimizeReport>>& minimize_fields() {
    static const std::vector<Field<MinimizeReport>> t = make_minimize_fields();
    return t;
}

const std::vector<Field<ImplPart>>& impl_part_fields() {
    static const std::vector<Field<ImplPart>> t = make_impl_part_fields();
    return t;
}

const std::vector<Field<BoundTensor>>& tensor_fields() {
    static const std::vector<Field<BoundTensor>> t = make_tensor_fields();
    return t;
}

std::string csv_text(const FieldValue& v) {
    struct Visit {
        std::string operator()(std::monostate) const { return {}; }
        std::string operator()(const std::string& s) const { return s; }
        std::string operator()(std::int64_t x) const { return fmt::format("{}", x); }
        std::string operator()(double x) const { return fmt::format("{}", x); }
        std::string operator()(bool b) const { return b ? "true" : "false"; }
        std::string operator()(const std::vector<std::int64_t>& x) const { return fmt::format("{}", fmt::join(x, " ")); }
        std::string operator()(const std::vector<double>& x) const { return fmt::format("{}", fmt::join(x, " ")); }
        std::string operator()(const std::vector<std::string>& x) const { return fmt::format("{}", fmt::join(x, " ")); }
    };
    return std::visit(Visit{}, v);
}

}  // namespace sdpa
