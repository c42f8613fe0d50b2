// The results store: every run's context and every case's record in one database (SQLite, one
// file; or PostgreSQL, which many machines write at once), written through SOCI as the run goes
// (--report=sqlite:PATH, --report=postgresql:URL; sdpabench-store ingest for JSONL reports).
// Schema, keys and migrations: docs/tracking.md#what-the-store-holds; scripts/history reads it.
#pragma once

#include <array>
#include <memory>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "core/enum_table.hpp"

namespace sdpa {

/// The databases a store can live in (SOCI's backends).
enum class StoreKind { sqlite, postgresql };

inline constexpr std::array<EnumName<StoreKind>, 2> kStoreKindNames{
        {{StoreKind::sqlite, "sqlite"}, {StoreKind::postgresql, "postgresql"}}};

inline std::string_view format_as(StoreKind v) { return enum_name(kStoreKindNames, v); }

/// Where a store is: `sqlite` with a file path (created when absent), or `postgresql` with a libpq
/// connection string, keywords ("host=127.0.0.1 port=5432 dbname=results") or a URI
/// ("postgresql://user@host:5432/results"), as libpq's PQconnectdb takes it.
struct StoreUrl {
    StoreKind kind = StoreKind::sqlite;
    std::string target;
};

/// Parses "sqlite:PATH" or "postgresql:URL" (the text after the first ':' is the target, which may
/// hold ':'). nullopt with `error` naming the text and the accepted kinds for another kind, a
/// missing ':' or an empty target.
std::optional<StoreUrl> parse_store_url(std::string_view text, std::string* error);

/// A libpq connection string or URI in the keyword form SOCI's PostgreSQL backend takes
/// ("host=127.0.0.1 port=5432 dbname=results user=me"; libpq's PQconninfoParse reads it). Throws
/// StoreError for text libpq cannot read, or a value with a blank or a quote (SOCI 4.0 splits at
/// blanks and drops quotes).
std::string postgresql_keywords(const std::string& conninfo);

/// How messages name the store at `url`: "sqlite:PATH", or "postgresql:" with the connection's
/// host, port, database and user (never a password). Throws StoreError (not transient) for a
/// PostgreSQL connection string libpq cannot read.
std::string store_where(const StoreUrl& url);

/// The run-context fields that name the build running a run's cases: the parts of one run must
/// agree on them and on every `libraries.NAME` version (ResultsStore::begin_part refuses a shard
/// that differs; scripts/merge_reports.py's SAME_RUN is the same list for reports, and the unit
/// test StoreBuildFields.AreMergeReportsSameRun keeps the two equal).
inline constexpr std::array<const char*, 2> kRunBuildFields{"git_commit", "sdpabench"};

/// The schema version this build writes and reads (docs/tracking.md#schema).
inline constexpr int kStoreSchemaVersion = 2;

/// Every failure of the store: the message names the database and what failed (never a
/// password: core/redact.hpp). `transient` when the failure can pass: the database could not be
/// reached or answered with an error (a server restarting, SQLite busy past its timeout, a full
/// disk), where trying again later may succeed; false for a refusal that trying again gives
/// again (a run key that names another run, a case given twice, a schema newer than this build,
/// a connection string that does not parse).
class StoreError : public std::runtime_error {
public:
    explicit StoreError(const std::string& what, bool transient = false)
        : std::runtime_error(what), transient_(transient) {}
    bool transient() const { return transient_; }

private:
    bool transient_;
};

/// The key a run's rows are stored under, from its context (the object of the JSONL context
/// record, reports/jsonl_reporter.hpp context_record): the value of its `run` tag when it has one
/// (--tags=run:ID; the shards of one run give the same ID), else its `run_id` (unique to the
/// process: RunContext::run_id), else, for a report from before run ids, "HOST START COMMAND".
/// Either is the same for a live run and for its JSONL report ingested later. Throws StoreError
/// for the context of a shard of a sharded run without a `run` tag: its shards could not be told
/// to be one run.
std::string run_key(const nlohmann::json& context);

/// One connection to a store, writing the parts of runs. A "part" is what one process writes: the
/// run itself, or one shard of a sharded run (its index; 0 unsharded). Rows are keyed by (run key,
/// part) and (run key, case id), so a case is stored once per run: a part written again (a shard
/// resubmitted after a kill, a report ingested twice) replaces its own rows, and a case id that
/// another part of the run already holds is refused.
class ResultsStore {
public:
    /// Connects and brings the schema to kStoreSchemaVersion in one transaction (creating it in an
    /// empty database, migrating an older one), serialised against other writers (SQLite's write
    /// lock, a PostgreSQL advisory lock). `wait_s`: how long one statement may wait for another
    /// writer's lock (SQLite's busy timeout) and one connection attempt may take (libpq's
    /// connect_timeout, at least 2 s, unless the URL sets one). Throws StoreError when the
    /// database cannot be opened (transient) or its schema is newer than this build's.
    explicit ResultsStore(const StoreUrl& url, double wait_s = 60);
    ~ResultsStore();
    ResultsStore(const ResultsStore&) = delete;
    ResultsStore& operator=(const ResultsStore&) = delete;

    /// "sqlite:PATH" or "postgresql:" with the connection's host, port, database and user (never a
    /// password), for messages.
    const std::string& where() const { return where_; }

    /// The schema version stored in the database.
    int schema_version();

    /// Starts this process's part of the run `context` belongs to (the JSONL context object): the
    /// run's row is created unless present (a run whose stored shard count or case fingerprint
    /// differs is refused), and the part's row is (re)written with the context, incomplete, its
    /// end_record NULL. A part stored by another invocation (its context's run_id differs from
    /// `context`'s: a run tag reused, a shard resubmitted) is replaced whole: its cases and their
    /// outputs are deleted in the same transaction, and replaced() says so; the same invocation
    /// again (a reconnect, its spool or report ingested) keeps its rows, which its cases then
    /// replace one by one. Every string of the context is stored with its secrets redacted
    /// (core/redact.hpp: a report written before redaction loses its password here). Returns the
    /// run key (run_key()). Throws StoreError.
    std::string begin_part(const nlohmann::json& context);

    /// After begin_part: "" when it replaced no part of another invocation, else one sentence
    /// naming both ("run 'nightly' part 0 was written by HOST-...-123 (started ...); this run
    /// HOST-...-456 (started ...) replaces it whole: its 12 case(s) are deleted"), for the caller
    /// to print (without the store's name: where()).
    const std::string& replaced() const { return replaced_; }

    /// Stores one case (the JSONL record, reports/jsonl_reporter.hpp json_record) of the current
    /// part, with its outputs, in one transaction (or in the caller's, begin()): committed when it
    /// returns. Throws StoreError for a record without an "id", an id given twice in this part, or
    /// an id another part of the run holds.
    void add_case(const nlohmann::json& record);

    /// How many cases the store holds for the current part (those of this connection's batch
    /// included).
    long long part_cases();

    /// Marks the current part complete (its process ended normally) and, unless `end` is null,
    /// stores `end` as its end_record (the object of the JSONL end record, reports/jsonl_reporter.hpp
    /// end_record: {"cases": N, "noise": ...}). A part never finished stays incomplete, and so
    /// does its run (the `run_state` view). Throws StoreError.
    void finish_part(const nlohmann::json& end = nullptr);

    /// Stores `end` as the current part's end_record without marking it complete (a spool whose
    /// run ended but whose cases are not all in this store). Throws StoreError.
    void note_end(const nlohmann::json& end);

    /// Groups every write until commit() into one transaction (an ingested file is stored whole or
    /// not at all); rollback() drops them. Without begin() each call commits on its own.
    void begin();
    void commit();
    void rollback();

private:
    /// UPDATE of the current part's end_record, in the caller's transaction.
    void write_end(const nlohmann::json& end);

    struct Impl;
    std::unique_ptr<Impl> impl_;
    std::string where_;
    std::string replaced_;                ///< what the last begin_part replaced (replaced())
    std::string run_key_;                 ///< the current part's run ("" before begin_part)
    long long part_ = 0;                  ///< the current part's shard index
    std::set<std::string> ids_;           ///< case ids stored by the current part
    bool in_batch_ = false;               ///< begin() was called
};

}  // namespace sdpa
