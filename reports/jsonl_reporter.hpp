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

/// The JSON record of one case:
/// {"idx", "status", "reason", "repro", "backend", "engine", "mode", "dir", "dt", "mask", "prb",
///  "name", "case_ms", "checked", "outputs": [{"output", "pass", "mistrusted", "reason",
///  "worst_ratio", "worst_index": [b,h,i,j], "got", "expected", "err", "bound", "nonfinite",
///  "zero_fraction"}], "flops", "bytes", "perf": null | {"runs", "min_ms", "median_ms",
///  "mean_ms", "max_ms", "compile_ms", "cold_cache", "gflops", "gflops_best", "gflops_worst",
///  "gbytes_per_s"}, "notes": [...]}.
/// A non-finite number is written as null with a sibling "<key>_nonfinite": "nan"|"inf"|"-inf".
/// "gflops" is at the median time, "gflops_best" at the min, "gflops_worst" at the max.
nlohmann::json json_record(const CaseResult& r);

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
