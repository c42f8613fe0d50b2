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

/// Writes json_record() of every case as one line to a file.
/// The run's context record: {"context": {"sdpabench", "git_commit", "command", "host", "cpu",
/// "threads", "gpu", "libraries": {backend: version}, "tags": {key: value}, "start", "run_id", "shard":
/// null or {"index", "count", "cases_total", "cases_fingerprint"}}}. The one
/// spelling of the context: CSV and JUnit write it flattened (context_fields).
nlohmann::json context_record(const RunContext& ctx);

/// context_record flattened to (key, text) pairs, nested keys joined by '.' ("libraries.onednn",
/// "tags.nightly"), for CSV comment lines and JUnit properties.
std::vector<std::pair<std::string, std::string>> context_fields(const RunContext& ctx);

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
    void end(const Summary& s) override;

private:
    std::FILE* f_ = nullptr;
    std::string path_;  ///< for error messages
};

}  // namespace sdpa
