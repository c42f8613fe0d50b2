#include "reports/results_store.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <string>
#include <vector>

#include <fmt/chrono.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <libpq-fe.h>
#include <soci/postgresql/soci-postgresql.h>
#include <soci/soci.h>
#include <soci/sqlite3/soci-sqlite3.h>

#include "core/redact.hpp"
#include "reports/jsonl_reporter.hpp"

namespace sdpa {

namespace {

/// One schema step: the statements that take a store from version - 1 to version. A new version
/// appends a step (ALTER TABLE, new tables, a view redefined); a step is never edited once released,
/// as stores written by that release hold its result (docs/tracking.md#schema).
struct Migration {
    int version;
    std::vector<std::string> statements;
};

/// Every step, in order. The SQL is the common subset of SQLite 3.38 and PostgreSQL 12: TEXT,
/// INTEGER (flags 0/1), BIGINT, DOUBLE PRECISION and JSON columns (SQLite keeps the JSON text,
/// PostgreSQL checks it), ON CONFLICT upserts, and the `->` / `->>` JSON operators both understand.
const std::vector<Migration>& migrations() {
    static const std::vector<Migration> m{
        {1,
            {
                // One row per run: what its parts must agree on.
                "CREATE TABLE runs ("
                "  run_key TEXT PRIMARY KEY,"
                "  shard_count INTEGER NOT NULL,"  // 1 for an unsharded run
                "  cases_total BIGINT,"            // the whole run's case count (sharded runs)
                "  cases_fingerprint TEXT,"        // driver/shard.hpp cases_fingerprint (sharded runs)
                "  first_start TEXT NOT NULL)",    // the first part's UTC start, ISO 8601
                // One row per process that wrote the run: the run itself or one of its shards.
                "CREATE TABLE run_parts ("
                "  run_key TEXT NOT NULL REFERENCES runs (run_key),"
                "  part INTEGER NOT NULL,"         // the shard index, 0 unsharded
                "  host TEXT NOT NULL,"
                "  start TEXT NOT NULL,"           // the part's UTC start, ISO 8601
                "  finished TEXT,"                 // its UTC end, NULL while running or when killed
                "  complete INTEGER NOT NULL,"     // 1 once its process ended normally
                "  context JSON NOT NULL,"         // the JSONL context object
                "  PRIMARY KEY (run_key, part))",
                // One row per case of a run, committed when the case ends.
                "CREATE TABLE cases ("
                "  run_key TEXT NOT NULL,"
                "  case_id TEXT NOT NULL,"         // the record's "id"
                "  part INTEGER NOT NULL,"
                "  idx BIGINT,"                    // the record's "idx"
                "  status TEXT NOT NULL,"          // the record's "status"
                "  backend TEXT NOT NULL,"         // the record's "backend"
                "  noisy INTEGER NOT NULL,"        // the record's "perf"."noisy" (0 untimed)
                "  record JSON NOT NULL,"          // the whole JSONL record
                "  PRIMARY KEY (run_key, case_id),"
                "  FOREIGN KEY (run_key, part) REFERENCES run_parts (run_key, part))",
                // One row per checked output of a case: the margins.
                "CREATE TABLE case_outputs ("
                "  run_key TEXT NOT NULL,"
                "  case_id TEXT NOT NULL,"
                "  output TEXT NOT NULL,"          // kOutputNames (core/sdpa_tensors.hpp)
                "  pass INTEGER NOT NULL,"
                "  failure TEXT NOT NULL,"         // the check that failed, "none"
                "  worst_ratio DOUBLE PRECISION,"  // NULL when not finite
                "  PRIMARY KEY (run_key, case_id, output),"
                "  FOREIGN KEY (run_key, case_id) REFERENCES cases (run_key, case_id) ON DELETE CASCADE)",
                "CREATE INDEX cases_by_series ON cases (case_id, backend)",
                // A run is complete when all its shards' parts are.
                "CREATE VIEW run_state AS"
                "  SELECT r.run_key, r.shard_count, r.first_start,"
                "    COUNT(p.part) AS parts, COALESCE(SUM(p.complete), 0) AS parts_complete,"
                "    CASE WHEN COALESCE(SUM(p.complete), 0) >= r.shard_count THEN 1 ELSE 0 END AS complete"
                "  FROM runs r LEFT JOIN run_parts p ON p.run_key = r.run_key"
                "  GROUP BY r.run_key, r.shard_count, r.first_start",
            }},
        {2,
            {
                // The part's end record (the JSONL end record's object: its case count and the
                // machine's noise after its last case), NULL until the part ends.
                "ALTER TABLE run_parts ADD COLUMN end_record JSON",
            }},
    };
    return m;
}

/// A PostgreSQL advisory lock key for schema changes (any constant that other applications of the
/// same database are unlikely to use: "sdpabnch" in ASCII).
constexpr long long kSchemaLock = 0x73647061626e6368LL;

std::string utc_now() {
    return fmt::format("{:%Y-%m-%dT%H:%M:%SZ}",
            fmt::gmtime(std::chrono::system_clock::to_time_t(std::chrono::system_clock::now())));
}

/// A PostgreSQL connection as libpq reads a connection string or URI (PQconninfoParse): the
/// keyword form SOCI passes on, and the host, port, database and user for messages (no password).
struct PgConnection {
    std::string keywords;  ///< "host=... port=... dbname=..." for SOCI
    std::string where;     ///< "postgresql:host=... port=... dbname=... user=..."
};

PgConnection parse_postgresql(const std::string& conninfo) {
    char* err = nullptr;
    PQconninfoOption* opts = PQconninfoParse(conninfo.c_str(), &err);
    // libpq's reasons quote the text they stopped at, which may be a password no pattern
    // recognises alone ("invalid percent-encoded token: ..."): where the text holds a secret,
    // the reason is left out.
    const bool secret = redact_secrets(conninfo) != conninfo;
    if (!opts) {
        std::string why = err ? err : "unreadable";
        PQfreemem(err);
        if (secret) why = "libpq's reason is not shown, as it may quote the password";
        while (!why.empty() && (why.back() == '\n' || why.back() == ' ')) why.pop_back();
        throw StoreError(fmt::format("postgresql: '{}' is not a libpq connection string or URI: {} ({})",
                redact_secrets(conninfo), redact_secrets(why),
                conninfo.starts_with("//") ? "a URL needs its scheme after the store's kind: postgresql:postgresql://..."
                                           : "a '/', '@', ':' or '%' in a URL's password must be percent-encoded: %2F, "
                                             "%40, %3A, %25"));
    }
    PgConnection c{"", "postgresql:"};
    std::string bad, misread;
    for (PQconninfoOption* o = opts; o->keyword; ++o) {
        if (!o->val || !*o->val) continue;
        const std::string_view k = o->keyword, v = o->val;
        // SOCI 4.0's PostgreSQL backend splits its connection string at blanks and drops quotes.
        if (v.find_first_of(" \t\n\"'") != std::string_view::npos) bad = k;
        c.keywords += fmt::format("{}{}={}", c.keywords.empty() ? "" : " ", k, v);
        if ((k == "port" && v.find_first_not_of("0123456789,") != std::string_view::npos) ||
                ((k == "host" || k == "hostaddr") && v.find('@') != std::string_view::npos))
            misread = k;
        if (k == "host" || k == "hostaddr" || k == "port" || k == "dbname" || k == "user")
            c.where += fmt::format("{}{}={}", c.where.back() == ':' ? "" : " ", k, v);
    }
    PQconninfoFree(opts);
    // What libpq made of a URL whose password holds a raw '/' or '@': a port that is no number or a
    // host with '@' (parts of the password; not shown).
    if (!misread.empty())
        throw StoreError(fmt::format("postgresql: '{}' does not read as postgresql://USER:PASSWORD@HOST:PORT/DB: its {} "
                                     "is not one (a '/', '@' or ':' in the password must be percent-encoded: %2F, %40, %3A)",
                redact_secrets(conninfo), misread));
    if (!bad.empty())
        throw StoreError(fmt::format("{}: the value of {} holds a blank or a quote, which SOCI's PostgreSQL backend "
                                     "cannot pass on: use a service file (PGSERVICE) or ~/.pgpass for it", c.where, bad));
    return c;
}

/// A string member of `j`, or `fallback` when absent or not a string.
std::string text_of(const nlohmann::json& j, const char* key, std::string fallback = "") {
    const auto it = j.find(key);
    return it != j.end() && it->is_string() ? it->get<std::string>() : fallback;
}

/// The process that wrote a part, from its context: its run_id ("HOST-START-PID"), or for a report
/// from before run ids "HOST START COMMAND" (as run_key()). Two contexts of one invocation (a live
/// run, its spool, its JSONL report) give the same.
std::string invocation_of(const nlohmann::json& context) {
    if (std::string id = text_of(context, "run_id"); !id.empty()) return id;
    return fmt::format("{} {} {}", text_of(context, "host"), text_of(context, "start"), text_of(context, "command"));
}

/// Each field of the run context that the parts of one run must share and in which `there` (a
/// stored part's context) and `here` (the joining part's) differ, as "FIELD ('A' there, 'B' here)":
/// kRunBuildFields and every library version (`libraries.NAME`; an absent one reads "").
std::vector<std::string> build_differences(const nlohmann::json& there, const nlohmann::json& here) {
    std::vector<std::string> out;
    const auto differ = [&](const std::string& name, const std::string& a, const std::string& b) {
        if (a != b) out.push_back(fmt::format("{} ('{}' there, '{}' here)", name, a, b));
    };
    for (const char* f : kRunBuildFields) differ(f, text_of(there, f), text_of(here, f));
    std::set<std::string> libs;
    for (const nlohmann::json* c : {&there, &here})
        if (const auto l = c->find("libraries"); l != c->end() && l->is_object())
            for (const auto& [name, _] : l->items()) libs.insert(name);
    const auto version = [](const nlohmann::json& c, const std::string& name) {
        const auto l = c.find("libraries");
        return l != c.end() && l->is_object() ? text_of(*l, name.c_str()) : std::string();
    };
    for (const std::string& name : libs) differ("libraries." + name, version(there, name), version(here, name));
    return out;
}

}  // namespace

std::string postgresql_keywords(const std::string& conninfo) { return parse_postgresql(conninfo).keywords; }

std::string store_where(const StoreUrl& url) {
    return url.kind == StoreKind::sqlite ? fmt::format("sqlite:{}", url.target) : parse_postgresql(url.target).where;
}

std::optional<StoreUrl> parse_store_url(std::string_view text, std::string* error) {
    const auto fail = [&](std::string why) -> std::optional<StoreUrl> {
        if (error) *error = std::move(why);
        return std::nullopt;
    };
    const std::size_t colon = text.find(':');
    if (colon == std::string_view::npos)
        return fail(fmt::format("'{}' is not KIND:TARGET (sqlite:PATH or postgresql:URL)", redact_secrets(text)));
    const auto kind = enum_parse(kStoreKindNames, text.substr(0, colon));
    if (!kind)
        return fail(fmt::format("'{}': unknown store kind '{}' (accepted: sqlite:PATH, postgresql:URL)", redact_secrets(text),
                text.substr(0, colon)));
    StoreUrl u{*kind, std::string(text.substr(colon + 1))};
    if (u.target.empty()) return fail(fmt::format("'{}': empty {} after '{}:'", redact_secrets(text), u.kind == StoreKind::sqlite ? "path" : "URL", u.kind));
    return u;
}

std::string run_key(const nlohmann::json& context) {
    if (const auto tags = context.find("tags"); tags != context.end() && tags->is_object())
        if (const auto run = tags->find("run"); run != tags->end() && run->is_string() && !run->get<std::string>().empty())
            return run->get<std::string>();
    if (const auto shard = context.find("shard"); shard != context.end() && shard->is_object())
        throw StoreError(fmt::format("shard {} of {} has no run tag: give every shard of one run the same "
                                     "--tags=run:ID so that its cases are stored as one run",
                shard->value("index", 0), shard->value("count", 0)));
    if (std::string id = text_of(context, "run_id"); !id.empty()) return id;
    return fmt::format("{} {} {}", text_of(context, "host"), text_of(context, "start"), text_of(context, "command"));
}

struct ResultsStore::Impl {
    Impl(StoreKind k, const soci::backend_factory& factory, const std::string& conninfo) : kind(k), sql(factory, conninfo) {}
    StoreKind kind;
    soci::session sql;

    /// BEGIN: SQLite's takes the write lock at once (BEGIN IMMEDIATE), so that two writers never
    /// deadlock upgrading a read lock; both wait up to the busy timeout for another writer.
    void begin() { sql << (kind == StoreKind::sqlite ? "BEGIN IMMEDIATE" : "BEGIN"); }
    void commit() { sql << "COMMIT"; }
    void rollback() noexcept {
        try {
            sql << "ROLLBACK";
        } catch (...) {  // nothing open: the error that brought us here is the one to report
        }
    }

    /// A transaction of its own unless the store is in a batch (ResultsStore::begin): commits on
    /// commit(), rolls back when left by an exception.
    class Tx {
    public:
        Tx(Impl& db, bool batch) : db_(db), own_(!batch) {
            if (own_) db_.begin();
        }
        ~Tx() {
            if (own_ && !done_) db_.rollback();
        }
        Tx(const Tx&) = delete;
        Tx& operator=(const Tx&) = delete;
        void commit() {
            if (own_) db_.commit();
            done_ = true;
        }

    private:
        Impl& db_;
        bool own_, done_ = false;
    };
};

/// `j` with every string in it (at any depth) redacted (core/redact.hpp).
static nlohmann::json redacted(nlohmann::json j) {
    if (j.is_string()) return redact_secrets(j.get<std::string>());
    if (j.is_structured())
        for (auto& v : j) v = redacted(std::move(v));
    return j;
}

ResultsStore::ResultsStore(const StoreUrl& url, double wait_s) {
    const int wait = static_cast<int>(std::ceil(std::max(0.0, std::min(wait_s, 86400.0))));
    try {
        if (url.kind == StoreKind::sqlite) {
            where_ = fmt::format("sqlite:{}", url.target);
            if (url.target.find('"') != std::string::npos)
                throw StoreError(fmt::format("{}: a path with '\"' cannot be given to SQLite through SOCI", where_));
            // Writers wait up to 60 s for each other's transactions (busy timeout).
            impl_ = std::make_unique<Impl>(url.kind, soci::sqlite3, fmt::format("db=\"{}\" timeout={}", url.target, wait));
            impl_->sql << "PRAGMA foreign_keys = ON";
        } else {
            const PgConnection c = parse_postgresql(url.target);
            where_ = c.where;
            // A server that cannot be reached, or a connection that goes silent (a host or network
            // gone), fails within the wait, unless the URL says otherwise: libpq's connect timeout,
            // TCP keepalives and the kernel's limit on unacknowledged data.
            std::string keywords = c.keywords;
            const auto add = [&keywords](const char* key, int value) {
                if (keywords.find(std::string(key) + "=") == std::string::npos) keywords += fmt::format(" {}={}", key, value);
            };
            add("connect_timeout", std::max(2, wait));
            add("keepalives", 1);
            add("keepalives_idle", std::max(1, wait / 2));
            add("keepalives_interval", 1);
            add("keepalives_count", 3);
            add("tcp_user_timeout", 1000 * std::max(2, wait));
            impl_ = std::make_unique<Impl>(url.kind, soci::postgresql, keywords);
            // No statement of the store waits longer than that for a lock (another writer's schema
            // change holds the advisory lock) or runs longer; the server's notices ("relation
            // already exists, skipping") are not the run's output.
            const int ms = 1000 * std::max(1, wait);
            impl_->sql << fmt::format("SET lock_timeout = {}", ms);
            impl_->sql << fmt::format("SET statement_timeout = {}", ms);
            impl_->sql << "SET client_min_messages = warning";
        }
    } catch (const StoreError&) {
        throw;
    } catch (const std::exception& e) {
        throw StoreError(fmt::format("{}: cannot open the results store: {}", where_, redact_secrets(e.what())), true);
    }
    try {
        Impl::Tx tx(*impl_, false);
        long long lock = kSchemaLock;
        if (url.kind == StoreKind::postgresql) impl_->sql << "SELECT pg_advisory_xact_lock(:k)", soci::use(lock, "k");
        impl_->sql << "CREATE TABLE IF NOT EXISTS store_schema (version INTEGER NOT NULL)";
        int version = 0;
        soci::indicator ind = soci::i_null;
        impl_->sql << "SELECT MAX(version) FROM store_schema", soci::into(version, ind);
        if (ind != soci::i_ok) {
            version = 0;
            impl_->sql << "INSERT INTO store_schema (version) VALUES (0)";
        }
        if (version > kStoreSchemaVersion)
            throw StoreError(fmt::format("{}: the store has schema version {}, newer than this sdpabench's {}: use the "
                                         "sdpabench that wrote it or a newer one (docs/tracking.md#schema)",
                    where_, version, kStoreSchemaVersion));
        for (const Migration& m : migrations()) {
            if (m.version <= version) continue;
            for (const std::string& s : m.statements) impl_->sql << s;
            impl_->sql << "UPDATE store_schema SET version = :v", soci::use(m.version, "v");
        }
        tx.commit();
    } catch (const StoreError&) {
        throw;
    } catch (const std::exception& e) {
        throw StoreError(fmt::format("{}: cannot create or migrate the schema: {}", where_, e.what()), true);
    }
}

ResultsStore::~ResultsStore() = default;

int ResultsStore::schema_version() {
    int version = 0;
    impl_->sql << "SELECT MAX(version) FROM store_schema", soci::into(version);
    return version;
}

namespace {

/// "N shard(s) of M cases (fingerprint F)", or "an unsharded run": how a run's parts are split,
/// in the messages of a part that does not fit its run.
std::string split_text(bool sharded, int count, long long total, std::string_view fingerprint) {
    return sharded ? fmt::format("{} shard(s) of {} cases (fingerprint {})", count, total, fingerprint) : "an unsharded run";
}

/// Adds run `key` (as split by `context`'s "shard" object) unless the store has it, and checks
/// that part `part` joins it: the same split, and the build and case list of the part stored
/// first. StoreError says why not.
void join_run(soci::session& sql, const std::string& where, const nlohmann::json& context, std::string key, long long part) {
    const auto shard = context.find("shard");
    const bool sharded = shard != context.end() && shard->is_object();
    int count = sharded ? shard->value("count", 1) : 1;
    long long total = sharded ? shard->value("cases_total", 0LL) : 0;
    std::string fingerprint = sharded ? text_of(*shard, "cases_fingerprint") : "";
    soci::indicator total_ind = sharded ? soci::i_ok : soci::i_null, fp_ind = total_ind;
    std::string start = text_of(context, "start");
    sql << "INSERT INTO runs (run_key, shard_count, cases_total, cases_fingerprint, first_start) "
           "VALUES (:k, :n, :t, :f, :s) ON CONFLICT (run_key) DO NOTHING",
            soci::use(key, "k"), soci::use(count, "n"), soci::use(total, total_ind, "t"),
            soci::use(fingerprint, fp_ind, "f"), soci::use(start, "s");
    int stored_count = 0;
    long long stored_total = 0;
    std::string stored_fp;
    soci::indicator t_ind = soci::i_ok, f_ind = soci::i_ok;
    sql << "SELECT shard_count, cases_total, cases_fingerprint FROM runs WHERE run_key = :k",
            soci::use(key, "k"), soci::into(stored_count), soci::into(stored_total, t_ind), soci::into(stored_fp, f_ind);
    const std::string stored = split_text(t_ind == soci::i_ok, stored_count, stored_total,
            f_ind == soci::i_ok ? std::string_view(stored_fp) : "none");
    const std::string mine = split_text(sharded, count, total, fingerprint.empty() ? std::string_view("none") : fingerprint);
    // Another part of the run already stored (the lowest): what this part must agree with.
    long long sibling = -1;
    std::string sibling_text;
    soci::indicator sibling_ind = soci::i_null;
    sql << "SELECT part, CAST(context AS TEXT) FROM run_parts WHERE run_key = :k AND part <> :p "
           "ORDER BY part LIMIT 1",
            soci::use(key, "k"), soci::use(part, "p"), soci::into(sibling), soci::into(sibling_text, sibling_ind);
    if (!sql.got_data()) sibling_ind = soci::i_null;
    const nlohmann::json there = sibling_ind == soci::i_ok
            ? nlohmann::json::parse(sibling_text, nullptr, false) : nlohmann::json::object();
    if (stored != mine)
        throw StoreError(fmt::format("{}: run '{}' is stored as {}, but this part is of {}{}: a run key names one run "
                                     "(give another --tags=run:ID)", where, key, stored, mine,
                sibling_ind == soci::i_ok ? fmt::format(" (shard {} ran '{}', this part runs '{}')", sibling,
                                                    text_of(there, "command"), text_of(context, "command"))
                                          : ""));
    if (sibling_ind == soci::i_ok)
        if (const std::vector<std::string> d = build_differences(there, context); !d.empty())
            throw StoreError(fmt::format("{}: this part (shard {}) cannot join run '{}': it differs from the "
                                         "run's shard {} (host {}, started {}) in {}: the shards of one run run "
                                         "one case list with one build (give another --tags=run:ID)",
                    where, part, key, sibling, text_of(there, "host"), text_of(there, "start"), fmt::join(d, ", ")));
}

/// Part `part` of run `key` as stored by another invocation than `context`'s (a run tag reused, a
/// shard resubmitted) deleted with its cases and their outputs, so that no case of that
/// invocation stays mixed with this one's; the sentence that says so ("" when the part is new or
/// the same invocation's: a reconnect, its spool or report ingested keeps its rows).
std::string delete_other_invocation(soci::session& sql, const nlohmann::json& context, std::string key, long long part) {
    std::string earlier_text;
    soci::indicator earlier_ind = soci::i_null;
    sql << "SELECT CAST(context AS TEXT) FROM run_parts WHERE run_key = :k AND part = :p",
            soci::use(key, "k"), soci::use(part, "p"), soci::into(earlier_text, earlier_ind);
    if (!sql.got_data() || earlier_ind != soci::i_ok) return "";
    const nlohmann::json earlier = nlohmann::json::parse(earlier_text, nullptr, false);
    const std::string was = invocation_of(earlier.is_object() ? earlier : nlohmann::json::object());
    if (was == invocation_of(context)) return "";
    long long cases = 0;
    sql << "SELECT COUNT(*) FROM cases WHERE run_key = :k AND part = :p", soci::use(key, "k"), soci::use(part, "p"),
            soci::into(cases);
    sql << "DELETE FROM case_outputs WHERE run_key = :k AND case_id IN "
           "(SELECT case_id FROM cases WHERE run_key = :k2 AND part = :p)",
            soci::use(key, "k"), soci::use(key, "k2"), soci::use(part, "p");
    sql << "DELETE FROM cases WHERE run_key = :k AND part = :p", soci::use(key, "k"), soci::use(part, "p");
    return fmt::format("run '{}' part {} was written by {} (started {}); this run {} (started {}) replaces it whole: "
                       "its {} case(s) are deleted",
            key, part, was, earlier.is_object() ? text_of(earlier, "start", "?") : "?", invocation_of(context),
            text_of(context, "start"), cases);
}

}  // namespace

std::string ResultsStore::begin_part(const nlohmann::json& given) {
    replaced_.clear();
    const nlohmann::json context = redacted(given);
    std::string key = run_key(context);
    const auto shard = context.find("shard");
    const long long part = shard != context.end() && shard->is_object() ? shard->value("index", 0LL) : 0;
    const std::string host = text_of(context, "host"), start = text_of(context, "start");
    const std::string ctx_text = json_line(context);
    try {
        Impl::Tx tx(*impl_, in_batch_);
        join_run(impl_->sql, where_, context, key, part);
        std::string replaced = delete_other_invocation(impl_->sql, context, key, part);
        impl_->sql << "INSERT INTO run_parts (run_key, part, host, start, finished, complete, context, end_record) "
                      "VALUES (:k, :p, :h, :s, NULL, 0, :c, NULL) ON CONFLICT (run_key, part) DO UPDATE SET "
                      "host = excluded.host, start = excluded.start, finished = NULL, complete = 0, "
                      "context = excluded.context, end_record = NULL",
                soci::use(key, "k"), soci::use(part, "p"), soci::use(host, "h"), soci::use(start, "s"),
                soci::use(ctx_text, "c");
        if (!replaced.empty())  // the run's first start is that of the parts it now has
            impl_->sql << "UPDATE runs SET first_start = (SELECT MIN(start) FROM run_parts WHERE run_key = :k) "
                          "WHERE run_key = :k2",
                    soci::use(key, "k"), soci::use(key, "k2");
        tx.commit();
        replaced_ = std::move(replaced);
    } catch (const StoreError&) {
        throw;
    } catch (const std::exception& e) {
        throw StoreError(fmt::format("{}: cannot store run '{}': {}", where_, key, e.what()), true);
    }
    run_key_ = key;
    part_ = part;
    ids_.clear();
    return key;
}

void ResultsStore::add_case(const nlohmann::json& record) {
    if (run_key_.empty()) throw StoreError(fmt::format("{}: a case before the run's context", where_));
    std::string id = text_of(record, "id");
    if (id.empty())
        throw StoreError(fmt::format("{}: a case record without an \"id\" (a report from before case ids) cannot be "
                                     "stored", where_));
    if (ids_.count(id))
        throw StoreError(fmt::format("{}: case '{}' is given twice for run '{}'", where_, id, run_key_));
    const long long idx = record.value("idx", -1LL);
    soci::indicator idx_ind = idx >= 0 ? soci::i_ok : soci::i_null;
    const std::string status = text_of(record, "status"), backend = text_of(record, "backend");
    const auto perf = record.find("perf");
    const int noisy = perf != record.end() && perf->is_object() && perf->value("noisy", false) ? 1 : 0;
    const std::string text = json_line(record);
    try {
        Impl::Tx tx(*impl_, in_batch_);
        soci::statement st = (impl_->sql.prepare <<
                "INSERT INTO cases (run_key, case_id, part, idx, status, backend, noisy, record) "
                "VALUES (:k, :id, :p, :i, :st, :b, :n, :r) ON CONFLICT (run_key, case_id) DO UPDATE SET "
                "idx = excluded.idx, status = excluded.status, backend = excluded.backend, noisy = excluded.noisy, "
                "record = excluded.record WHERE cases.part = excluded.part",
                soci::use(run_key_, "k"), soci::use(id, "id"), soci::use(part_, "p"), soci::use(idx, idx_ind, "i"),
                soci::use(status, "st"), soci::use(backend, "b"), soci::use(noisy, "n"), soci::use(text, "r"));
        st.execute(true);
        if (st.get_affected_rows() == 0) {
            long long other = -1;
            impl_->sql << "SELECT part FROM cases WHERE run_key = :k AND case_id = :id", soci::use(run_key_, "k"),
                    soci::use(id, "id"), soci::into(other);
            throw StoreError(fmt::format("{}: case '{}' of run '{}' is already stored by shard {}, not this shard {}: "
                                         "the shards of one run must not share a case",
                    where_, id, run_key_, other, part_));
        }
        impl_->sql << "DELETE FROM case_outputs WHERE run_key = :k AND case_id = :id", soci::use(run_key_, "k"),
                soci::use(id, "id");
        if (const auto outs = record.find("outputs"); outs != record.end() && outs->is_array())
            for (const auto& o : *outs) {
                std::string name = text_of(o, "output"), failure = text_of(o, "failure", "none");
                const int pass = o.value("pass", false) ? 1 : 0;
                const auto w = o.find("worst_ratio");
                const double ratio = w != o.end() && w->is_number() ? w->get<double>() : 0.0;
                soci::indicator ratio_ind = w != o.end() && w->is_number() ? soci::i_ok : soci::i_null;
                impl_->sql << "INSERT INTO case_outputs (run_key, case_id, output, pass, failure, worst_ratio) "
                              "VALUES (:k, :id, :o, :p, :f, :w)",
                        soci::use(run_key_, "k"), soci::use(id, "id"), soci::use(name, "o"), soci::use(pass, "p"),
                        soci::use(failure, "f"), soci::use(ratio, ratio_ind, "w");
            }
        tx.commit();
    } catch (const StoreError&) {
        throw;
    } catch (const std::exception& e) {
        throw StoreError(fmt::format("{}: cannot store case '{}' of run '{}': {}", where_, id, run_key_, e.what()), true);
    }
    ids_.insert(std::move(id));
}

long long ResultsStore::part_cases() {
    long long n = 0;
    try {
        impl_->sql << "SELECT COUNT(*) FROM cases WHERE run_key = :k AND part = :p", soci::use(run_key_, "k"),
                soci::use(part_, "p"), soci::into(n);
    } catch (const std::exception& e) {
        throw StoreError(fmt::format("{}: cannot count the cases of run '{}': {}", where_, run_key_, e.what()), true);
    }
    return n;
}

void ResultsStore::finish_part(const nlohmann::json& end) {
    if (run_key_.empty()) return;
    const std::string now = utc_now();
    try {
        Impl::Tx tx(*impl_, in_batch_);
        impl_->sql << "UPDATE run_parts SET complete = 1, finished = :f WHERE run_key = :k AND part = :p",
                soci::use(now, "f"), soci::use(run_key_, "k"), soci::use(part_, "p");
        if (!end.is_null()) write_end(end);
        tx.commit();
    } catch (const std::exception& e) {
        throw StoreError(fmt::format("{}: cannot mark run '{}' complete: {}", where_, run_key_, e.what()), true);
    }
}

void ResultsStore::note_end(const nlohmann::json& end) {
    if (run_key_.empty()) return;
    try {
        Impl::Tx tx(*impl_, in_batch_);
        write_end(end);
        tx.commit();
    } catch (const std::exception& e) {
        throw StoreError(fmt::format("{}: cannot store the end of run '{}': {}", where_, run_key_, e.what()), true);
    }
}

void ResultsStore::write_end(const nlohmann::json& end) {
    std::string text = json_line(end);
    impl_->sql << "UPDATE run_parts SET end_record = :e WHERE run_key = :k AND part = :p", soci::use(text, "e"),
            soci::use(run_key_, "k"), soci::use(part_, "p");
}

void ResultsStore::begin() {
    impl_->begin();
    in_batch_ = true;
}

void ResultsStore::commit() {
    in_batch_ = false;
    impl_->commit();
}

void ResultsStore::rollback() {
    in_batch_ = false;
    impl_->rollback();
    ids_.clear();
}

}  // namespace sdpa
