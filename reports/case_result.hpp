// Plain data handed from the driver to the reporters: one record per case, one summary.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <utility>
#include <string>
#include <vector>

#include "core/dropout.hpp"
#include "core/enum_table.hpp"
#include "core/output_check.hpp"
#include "core/implementation.hpp"
#include "core/noise_probe.hpp"
#include "core/status.hpp"
#include "core/timing_stats.hpp"

namespace sdpa {

/// What a case was and where it ran, for reports, perf templates and --expect conditions (empty
/// for a parse error). The sizes are the problem's (an imported graph's as derived from it).
struct CaseInfo {
    std::string backend, engine;  ///< e.g. "onednn", "cpu"
    std::string mode;             ///< C, P, CP, L
    std::string dir, dt, mask;    ///< knob spellings, e.g. "bwd", "bf16", "causal_tl"
    std::string prb;              ///< descriptor without the name, e.g. "b1hq32hkv8sq4096d128"
    std::string name;             ///< n=NAME or ""
    std::string dropout;          ///< --dropout spelling "P:SEED:OFFSET", "" without dropout
    std::int64_t B = 0, H_q = 0, H_kv = 0, S_q = 0, S_kv = 0, D_qk = 0, D_v = 0;
    std::string attention{};      ///< MHA (H_kv = H_q), GQA (1 < H_kv < H_q), MQA (H_kv = 1 < H_q)
    /// Every knob that applies to the case as "NAME=VALUE", defaults included, in knob-table order
    /// (driver/knobs.hpp): the case's canonical form, which --expect conditions read knobs from.
    std::vector<std::string> knobs{};
    std::string cpu_isa{};        ///< --cpu-isa: the level the vendor was capped at ("default": none)
    /// The ISA level the vendor dispatched to (Backend::cpu_isa: the cap met with the CPU's
    /// levels, e.g. "avx512_core_amx"); "" for a backend without ISA control.
    std::string isa{};
    std::string vendor_version{}; ///< the vendor library's version (Backend::library_version), "" when none
    std::string device{};         ///< the GPU (Backend::device_name) or else the CPU model the case ran on
};

/// What the dropout checks saw (cases with --dropout, C mode): the mask the reference was fed,
/// the generator-free statistics on it, and every failed dropout rule
/// (docs/knobs_dropout.md#checks-that-need-no-knowledge-of-the-generator).
struct DropoutReport {
    std::string mask;                   ///< DropoutMask::describe() of that mask
    MaskStatistics stats;               ///< core/dropout.hpp mask_statistics
    std::vector<std::string> failures;  ///< failed rules (statistics, fwd/bwd mask, p = 0, seed)
};

/// What an --expect entry made of a case's status (driver/expect.hpp, docs/ci.md#expected-results---expectfile).
enum class Expected { none, xfail, xpass, not_applicable };

inline constexpr std::array<EnumName<Expected>, 4> kExpectedNames{{{Expected::none, "NONE"},
    {Expected::xfail, "XFAIL"}, {Expected::xpass, "XPASS"}, {Expected::not_applicable, "NOT_APPLICABLE"}}};

inline std::string_view format_as(Expected v) { return enum_name(kExpectedNames, v); }

/// The expectation outcome of one case: XFAIL (the expected non-PASSED status came), XPASS (it
/// PASSED instead), NOT_APPLICABLE (it PASSED on a platform the entry does not apply to).
struct ExpectOutcome {
    Expected kind = Expected::none;
    std::string reason;        ///< the entry's reason; for NOT_APPLICABLE also what the platform lacks
    bool allow_xpass = false;  ///< the entry lets an XPASS pass the run (a flaky bug)
};

/// The phases of a case whose wall time a result reports (as benchdnn's -v does), in pipeline
/// order: filling the inputs; displacing O and stats from the reference forward (bwd); the vendor
/// plan (support, building and compiling it, copying the inputs into its buffers); running it (the
/// checked run, or the timed loop); reading its outputs back (decoding, guard bands, stride gaps);
/// the f32 reference; comparing the outputs; the dropout checks (mask statistics and the vendor
/// reruns they need); --mode=B's second run; and `other`, what none of them accounts for (the
/// case's time minus theirs: validation, the memory guard, freeing the case's buffers).
enum class Phase { fill, displace, prepare, vendor, read, reference, compare, dropout, rerun, other };

inline constexpr std::array<EnumName<Phase>, 10> kPhaseNames{{{Phase::fill, "fill"}, {Phase::displace, "displace"},
    {Phase::prepare, "prepare"}, {Phase::vendor, "vendor"}, {Phase::read, "read"}, {Phase::reference, "reference"},
    {Phase::compare, "compare"}, {Phase::dropout, "dropout"}, {Phase::rerun, "rerun"}, {Phase::other, "other"}}};

inline std::string_view format_as(Phase v) { return enum_name(kPhaseNames, v); }

/// What --minimize made of a FAILED case (driver/minimize.hpp minimize()).
struct MinimizeReport {
    std::string repro;      ///< the smallest case that still fails the same way
    std::string signature;  ///< that way, e.g. "dQ:bound" (driver/minimize.hpp failure_signature)
    std::size_t runs = 0;   ///< cases run while shrinking
    std::size_t steps = 0;  ///< shrinking steps kept
    bool hit_limit = false; ///< stopped at the run limit, not at a fixed point
};

/// The one result of one case, on every path (parse error, validation, skip, run, compare).
struct CaseResult {
    std::size_t index = 0;      ///< 0-based position in the batch
    /// Canonical id: the repro (name and knobs, no run index), "file:line" for a parse error,
    /// " #2", " #3" appended to repeats; unique within a run (driver/main.cpp case_ids).
    std::string id;
    bool timed_out = false;     ///< killed by --timeout-per-case (status FAILED, reason "timeout: ...")
    bool crashed = false;       ///< its child process died without a result (--isolate; status FAILED)
    ExpectOutcome expect;       ///< --expect outcome (Expected::none without a matching entry)
    Status status = Status::passed;
    std::string reason;         ///< for any status but PASSED/LISTED: why
    double ms = 0;              ///< wall time of the whole case (fill, run, reference, compare)
    std::string repro;          ///< complete runnable repro ("" for a parse error)
    std::vector<OutputCheck> checks;   ///< per-output verdicts (C mode)
    std::vector<std::string> notes;    ///< backend notes shown with -v
    CaseInfo info;                     ///< backend, dir, dt, ... as text
    bool checked = false;              ///< outputs were compared (C and CP modes)
    /// --check=sample:N: what the check covered, "64/32768 query rows, 64/32768 key rows"
    /// (ref/row_sample.hpp describe_sample); "" for a full check (or a sample that held every row).
    std::string sample;
    std::int64_t flops = 0;            ///< core/flops.hpp flops() (0 for an invalid case)
    std::int64_t bytes = 0;            ///< core/flops.hpp bytes_moved()
    std::optional<PerfResult> perf;    ///< timings and rates (P and CP modes, when it ran)
    std::optional<DropoutReport> dropout;  ///< cases with --dropout that were checked
    std::array<double, kPhaseNames.size()> phases_ms{};  ///< wall ms per Phase (0: not run)
    std::optional<MinimizeReport> minimized;  ///< --minimize on a FAILED case
    /// A FAILED case of a run of several cases, rerun alone in a fresh process (driver/main.cpp):
    /// that run's status ("" when not rerun). PASSED means the failure depends on what ran
    /// before it in this process (a vendor's state), so its repro alone does not reproduce it.
    std::string alone_status;
    /// What the vendor ran (Plan::implementation after its first run): its implementation name and
    /// the implementations inside (oneDNN's primitives with their times); for fwd_bwd the two
    /// plans', the name "fwd: A; bwd: B" and each part's `where` prefixed "fwd: " or "bwd: ".
    Implementation impl;
    /// The tensors as the plan bound them (Plan::bound_tensors); for fwd_bwd each name prefixed
    /// "fwd: " or "bwd: ".
    std::vector<BoundTensor> tensors;
    /// The process's CPU time over the vendor phase's wall time (Phase::vendor): how many cores the
    /// vendor's kernels kept busy on average (0 when the vendor did not run in this process's view).
    double vendor_cpu_util = 0;
};

/// Where and how a run ran, for the reports' first record (JSONL "context"), so that two runs
/// can be told comparable or not (scripts/compare_runs.py).
struct RunContext {
    std::string sdpabench;    ///< version
    std::string git_commit;   ///< `git describe --always --dirty` of the build, "unknown" outside git
    std::string command;      ///< the command line, arguments space-separated
    std::string host;         ///< gethostname
    std::string cpu;          ///< /proc/cpuinfo "model name"
    int threads = 0;          ///< OpenMP threads (omp_get_max_threads): the reference's, --threads when given
    int cpus = 0;             ///< CPUs in the process's affinity mask (--threads, taskset, numactl narrow it)
    /// Per backend with a host threading runtime: "NAME: RUNTIME N (SOURCE)", the concurrency the
    /// library reports (Backend::threading), e.g. "onednn: SYCL (TBB) 2 (tbb::this_task_arena::max_concurrency)".
    std::vector<std::string> vendor_threads;
    /// The ISA level oneDNN dispatches to in this process (Backend::cpu_isa; the case workers of
    /// other --cpu-isa levels have theirs, which each result's "isa" names); "" without oneDNN.
    std::string isa;
    std::string gpu;          ///< Backend::device_name() of the GPU backends ("" without a GPU)
    std::vector<std::pair<std::string, std::string>> libraries;  ///< backend -> library_version()
    std::vector<std::pair<std::string, std::string>> tags;       ///< --tags=KEY:VALUE, in order
    std::string start;        ///< UTC start time, ISO 8601
    /// This process's run, unique: "HOST-YYYYMMDDTHHMMSS.mmmZ-PID" (the start to the millisecond);
    /// the results store's run key when the run has no --tags=run:ID (reports/results_store.hpp).
    std::string run_id;
    /// --shard=I/N: this shard, the number of shards and the number of cases of the whole run
    /// (shard_count 0 when the run is not sharded), and driver/shard.hpp cases_fingerprint of
    /// the whole run's case ids.
    std::size_t shard_index = 0, shard_count = 0, cases_total = 0;
    std::string cases_fingerprint;
    /// CMAKE_BUILD_TYPE of the sdpabench build ("Release", "Debug", "RelWithDebInfo"; "" when the
    /// build set none): a debug build's timings are not a release's.
    std::string build_type;
    /// CPU 0's frequency governor (core/host_cpu.hpp cpu_scaling_governor; "" without cpufreq).
    std::string cpu_governor;
    /// The machine's noise before the first case (core/noise_probe.hpp noise_sample); nullopt
    /// when none was taken.
    std::optional<NoiseSample> noise_start;
};

/// The status a report shows: the expectation outcome's name (XFAIL, XPASS, NOT_APPLICABLE)
/// when there is one, else the status's.
std::string_view shown_status(const CaseResult& r);

/// Counts over a run: each case is counted once, by its expectation outcome when it has one,
/// else by its status (an XFAIL is not also a FAILED).
struct Summary {
    std::array<std::size_t, kStatusNames.size()> counts{};      ///< indexed by Status
    std::array<std::size_t, kExpectedNames.size()> expected{};  ///< indexed by Expected (none unused)
    std::size_t tests = 0;
    std::size_t timeouts = 0;       ///< FAILED cases that were timeouts
    std::size_t allowed_xpass = 0;  ///< XPASS cases whose entry allows them
    std::size_t write_errors = 0;   ///< files the run was asked to write and could not (--emit-onednn-json)
    double ms = 0;                  ///< the cases' wall times summed (CaseResult::ms)
    std::array<double, kPhaseNames.size()> phases_ms{};  ///< each phase's wall time summed over the cases
    /// Cases whose vendor ran a reference implementation where the reports flag one
    /// (core/implementation.hpp reference_fallback): the summary line's ref_fallback:N.
    std::size_t ref_fallbacks = 0;
    /// The same counts per --cpu-isa level (CaseInfo::cpu_isa), in the order the levels first
    /// came; each entry's own per-level list stays empty.
    std::vector<std::pair<std::string, Summary>> by_cpu_isa;
    /// The machine's noise after the last case (core/noise_probe.hpp noise_sample), set by the
    /// driver before the reporters' end(); nullopt when none was taken. The JSONL report's end
    /// record and the results store's end_record carry it (the start's is RunContext::noise_start).
    std::optional<NoiseSample> noise_end;
    void add(const CaseResult& r);
    std::size_t operator[](Status s) const { return counts[static_cast<std::size_t>(s)]; }
    std::size_t operator[](Expected e) const { return expected[static_cast<std::size_t>(e)]; }

private:
    void add_counts(const CaseResult& r);  ///< everything add() counts but the per-level list
};

}  // namespace sdpa
