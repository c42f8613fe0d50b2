// --report=sqlite:PATH and --report=postgresql:URL: the run's context and each case's record into
// the results store (reports/results_store.hpp), each case committed when it ends, so that a
// killed run keeps every finished case and stays marked incomplete. A store that cannot be
// reached does not end the run: the reporter retries with backoff for --store-wait seconds, then
// keeps the cases in a spool file (a JSONL report of them: `sdpabench-store ingest` loads it
// later; a case stored twice is stored once) and tries the store again every --store-wait
// seconds, sending the spooled cases when it is back (docs/tracking.md#when-the-store-is-away).
#pragma once

#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "reports/report_files.hpp"
#include "reports/reporter.hpp"
#include "reports/results_store.hpp"

namespace sdpa {

/// Writes one process's part of a run into a results store (ResultsStore): begin() its context,
/// on_case() each case's JSONL record, end() marks it complete; a store that is away for a
/// while is waited for, then spooled around.
class StoreReporter final : public Reporter {
public:
    /// Connects to the store and brings its schema up to date, retrying a store that cannot be
    /// reached for opts.store_wait_s seconds (then the run goes on with the spool). Throws
    /// StoreError for a refusal (a URL that does not parse, a schema newer than this build's).
    /// opts.spool_dir: the spool's folder (report_files.hpp spool_folder).
    StoreReporter(const StoreUrl& url, const ReportOptions& opts);
    ~StoreReporter() override;
    /// Starts this process's part of the run: the context record (context_record) is its row.
    /// A part another invocation wrote under the same run key is replaced whole, with one line on
    /// stderr naming both (ResultsStore::replaced). Throws StoreError for a refusal, e.g. a shard
    /// without --tags=run:ID.
    void begin(const RunContext& ctx) override;
    /// Commits the case's JSONL record (json_record) and its outputs' margins, or spools it.
    void on_case(const CaseResult& r) override;
    /// Marks the part complete with its end record (end_record: the cases given, s.noise_end) as
    /// its end_record: after one more wait for a store that is away, the spooled cases are sent
    /// and the spool removed; otherwise the spool ends with that end record.
    void end(const Summary& s) override;
    /// "" when every case is in the store and the part is marked complete; else how many cases
    /// are where, and the `sdpabench-store ingest` command that completes the store.
    std::string incomplete() const override;

    /// The spool file ("" until a case had to go there).
    const std::string& spool_path() const { return spool_path_; }

private:
    using Clock = std::chrono::steady_clock;
    /// Tries to (re)connect, start the part and send every pending record until `deadline`
    /// (once when `deadline` has passed), backing off between tries. True when online.
    bool reach(Clock::time_point deadline);
    /// One try of reach(); throws StoreError.
    void try_once(double wait_s);
    /// Appends `record` to the spool (opened with the context record first). False, with
    /// spool_error_ set, when it cannot be written.
    bool spool(const nlohmann::json& record);
    /// e's message on one line, without the store's name at its start (say() prints that).
    std::string text_of(const StoreError& e) const;
    /// Prints "WHERE: MESSAGE" on stderr.
    void say(const std::string& message) const;

    StoreUrl url_;
    ReportOptions opts_;
    std::string where_;                  ///< the store's name for messages (no password)
    std::unique_ptr<ResultsStore> store_;  ///< null while the store is away
    nlohmann::json context_;             ///< the run's context object (after begin)
    std::string run_id_;                 ///< RunContext::run_id: the spool's name
    bool begun_ = false, part_started_ = false, finished_ = false;
    std::vector<nlohmann::json> pending_;  ///< records not yet in the store, in order (also in the spool)
    std::FILE* spool_ = nullptr;
    std::string spool_path_, spool_error_;
    std::size_t spooled_ = 0, spool_lost_ = 0, cases_ = 0;
    std::vector<std::string> refused_;   ///< cases the store refused (never retried)
    std::string last_error_;             ///< why the store was last away
    Clock::time_point last_try_{};
};

}  // namespace sdpa
