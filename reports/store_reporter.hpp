// --report=sqlite:PATH and --report=postgresql:URL: the run's context and each case's record into
// the results store (reports/results_store.hpp), each case committed when it ends, so that a
// killed run keeps every finished case and stays marked incomplete.
#pragma once

#include "reports/reporter.hpp"
#include "reports/results_store.hpp"

namespace sdpa {

/// Writes one process's part of a run into a results store (ResultsStore): begin() its context,
/// on_case() each case's JSONL record, end() marks it complete.
class StoreReporter final : public Reporter {
public:
    /// Connects to the store and brings its schema up to date; throws StoreError (a
    /// std::runtime_error naming the database) when it cannot.
    explicit StoreReporter(const StoreUrl& url);
    /// Starts this process's part of the run: the context record (context_record) is its row.
    /// Throws StoreError, e.g. for a shard without --tags=run:ID.
    void begin(const RunContext& ctx) override;
    /// Commits the case's JSONL record (json_record) and its outputs' margins.
    void on_case(const CaseResult& r) override;
    /// Marks the part complete.
    void end(const Summary& s) override;

private:
    ResultsStore store_;
};

}  // namespace sdpa
