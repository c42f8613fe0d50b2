// JSON Lines report: one JSON object per case, written and flushed when the case finishes, so
// a killed run leaves a valid prefix.
#pragma once

#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "reports/reporter.hpp"

namespace sdpa {

/// The JSON record of one case: every field of the tables of reports/result_fields.hpp, the
/// scalar ones at the top (the timing ones in "perf", null for an untimed case, and the phase
/// times in "phases_ms"), "notes", "perf"."samples_ms", "outputs" (one object per OutputCheck,
/// check_fields()), "dropout_checks" (dropout_fields(), null without dropout) and "minimized"
/// (minimize_fields(), null unless --minimize shrank the case). An absent value is null; a
/// non-finite number is null with a sibling "<key>_nonfinite": "nan"|"inf"|"-inf".
nlohmann::json json_record(const CaseResult& r);

/// The case result json_record() describes, every stored field set back (those derived on demand
/// are recomputed from them): json_record(result_from_record(json_record(r))) == json_record(r).
/// What the --isolate pipe reads (driver/isolation.cpp). Fields absent from `record` keep their
/// defaults.
CaseResult result_from_record(const nlohmann::json& record);

/// One line of JSON text for `record` (invalid UTF-8 replaced by U+FFFD, never throws for it).
std::string json_line(const nlohmann::json& record);

/// One noise sample (core/noise_probe.hpp) as the reports write it: {"loadavg": number|null,
/// "steal": fraction|null, "calib_ms": ms, "calib_cv": number, "calib_reps": N} (null where the
/// sample has no value; a non-finite calib_cv null with "calib_cv_nonfinite", as json_record).
nlohmann::json noise_record(const NoiseSample& s);

/// The run's context record: {"context": {"sdpabench", "git_commit", "build_type", "command",
/// "host", "cpu", "cpu_governor", "threads", "cpus", "vendor_threads", "isa", "gpu", "libraries":
/// {backend: version}, "tags": {key: value}, "start", "run_id", "shard": null or {"index", "count",
/// "cases_total", "cases_fingerprint"}, "noise": null or {"start": noise_record}}}. The one
/// spelling of the context: CSV and JUnit write it flattened (context_fields).
nlohmann::json context_record(const RunContext& ctx);

/// The run's end record, the last line of a JSONL report (and of a results store's spool):
/// {"end": {"cases": `cases` (the cases the report holds), "noise": null or {"end":
/// noise_record(s.noise_end)}}}. Readers of case records skip it (a record with "end").
nlohmann::json end_record(std::size_t cases, const Summary& s);

/// context_record flattened to (key, text) pairs, nested keys joined by '.' ("libraries.onednn",
/// "tags.nightly"), for CSV comment lines and JUnit properties.
std::vector<std::pair<std::string, std::string>> context_fields(const RunContext& ctx);

/// Writes the context record, json_record() of every case as one line, and the end record to a file.
class JsonlReporter final : public Reporter {
public:
    /// Opens (truncates) `path`; throws std::runtime_error naming the path when it cannot.
    explicit JsonlReporter(const std::string& path);
    ~JsonlReporter() override;
    JsonlReporter(const JsonlReporter&) = delete;
    JsonlReporter& operator=(const JsonlReporter&) = delete;
    /// Writes the first line, {"context": {...}} (context_record).
    void begin(const RunContext& ctx) override;
    void on_case(const CaseResult& r) override;
    /// Writes the last line, {"end": {...}} (end_record: the cases written, s.noise_end).
    void end(const Summary& s) override;

private:
    std::FILE* f_ = nullptr;
    std::string path_;  ///< for error messages
    std::size_t cases_ = 0;  ///< case records written
};

}  // namespace sdpa
