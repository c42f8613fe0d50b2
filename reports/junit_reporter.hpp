// JUnit XML report for CI systems: one <testcase> per case, the repro in every failure message.
// The XML is written when the run ends; along the way every case goes to PATH.partial (JSON
// Lines), which is removed once PATH is complete, so a killed run still leaves its records.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "reports/jsonl_reporter.hpp"
#include "reports/reporter.hpp"

namespace sdpa {

/// The complete JUnit document for `results` (one <testsuites> with one <testsuite
/// name="sdpabench">). Per case: <testcase classname="sdpabench.BACKEND.DIR" name="IDX:REPRO"
/// time="SECONDS">; FAILED -> <failure type="FAILED" message="REASON __REPRO: REPRO">;
/// UNIMPLEMENTED, INVALID_ARGUMENTS -> <error type=STATUS ...>; SKIPPED, LISTED -> <skipped
/// message=...>; MISTRUSTED passes with its reason in <system-out>; perf figures also go to
/// <system-out>. All text is xml_escape()d.
std::string junit_document(const std::vector<CaseResult>& results, const Summary& s, const RunContext* ctx = nullptr);

/// Collects results, writes PATH.partial as it goes and PATH at end().
class JunitReporter final : public Reporter {
public:
    /// Opens PATH.partial now (throws std::runtime_error when it cannot); PATH is written by end().
    explicit JunitReporter(std::string path);
    /// Keeps the run context for the document's <properties> and writes it to PATH.partial.
    void begin(const RunContext& ctx) override;
    void on_case(const CaseResult& r) override;
    /// Writes PATH, then removes PATH.partial; throws std::runtime_error when PATH cannot be written.
    void end(const Summary& s) override;

private:
    std::string path_;
    std::unique_ptr<JsonlReporter> partial_;
    std::vector<CaseResult> results_;
    std::optional<RunContext> ctx_;
};

}  // namespace sdpa
