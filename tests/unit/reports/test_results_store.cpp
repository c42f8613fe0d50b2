// The results store (reports/results_store.hpp) on SQLite, and on PostgreSQL when
// SDPABENCH_TEST_PG_URL_FILE names the URL file of a running cluster (scripts/pg_cluster.sh; the
// CTest fixture "postgresql" starts one for the test store.unit.postgresql). What is stored is read
// back through SOCI, as scripts/history reads it.
#include "reports/results_store.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>

#include <unistd.h>

#include <fmt/format.h>
#include <soci/postgresql/soci-postgresql.h>
#include <soci/soci.h>
#include <soci/sqlite3/soci-sqlite3.h>

#include "reports/jsonl_reporter.hpp"
#include "reports/store_reporter.hpp"

namespace sdpa {
namespace {

/// The store kinds this run tests: SQLite always, PostgreSQL when its URL file is given.
std::vector<StoreKind> kinds() {
    std::vector<StoreKind> k{StoreKind::sqlite};
    if (std::getenv("SDPABENCH_TEST_PG_URL_FILE")) k.push_back(StoreKind::postgresql);
    return k;
}

class Store : public ::testing::TestWithParam<StoreKind> {
protected:
    void SetUp() override {
        if (GetParam() == StoreKind::sqlite) {
            dir_ = std::filesystem::temp_directory_path() /
                   fmt::format("sdpabench_store_{}_{}", ::getpid(), ::testing::UnitTest::GetInstance()->random_seed());
            std::filesystem::create_directories(dir_);
            url_ = {StoreKind::sqlite, (dir_ / "results.db").string()};
            return;
        }
        std::ifstream f(std::getenv("SDPABENCH_TEST_PG_URL_FILE"));
        std::string base;
        ASSERT_TRUE(std::getline(f, base)) << "no URL in $SDPABENCH_TEST_PG_URL_FILE (scripts/pg_cluster.sh start)";
        // One database per test: each starts empty.
        const std::string db = fmt::format("t{}_{}", ::getpid(), ++counter_);
        {
            soci::session admin(soci::postgresql, postgresql_keywords(base));
            admin << "CREATE DATABASE " + db;  // a name of digits and letters made here
        }
        // The fixture's URL ends with its database: this test's replaces it.
        url_ = {StoreKind::postgresql, base.substr(0, base.rfind('/') + 1) + db};
    }
    void TearDown() override {
        if (!dir_.empty()) std::filesystem::remove_all(dir_);
    }
    /// A second connection, to read what the store wrote.
    soci::session reader() const {
        if (url_.kind == StoreKind::sqlite) return soci::session(soci::sqlite3, fmt::format("db=\"{}\"", url_.target));
        return soci::session(soci::postgresql, postgresql_keywords(url_.target));
    }
    long long count(const std::string& sql) const {
        soci::session s = reader();
        long long n = -1;
        s << sql, soci::into(n);
        return n;
    }
    StoreUrl url_;
    std::filesystem::path dir_;
    static inline int counter_ = 0;
};

/// A context object as the JSONL report writes it; `shard` "" for an unsharded run, else "I/N".
nlohmann::json context(const std::string& run_tag, const std::string& shard = "") {
    RunContext ctx;
    ctx.sdpabench = "0.1.0";
    ctx.git_commit = "abc123";
    ctx.command = "sdpabench --batch=x.cases";
    ctx.host = "ci-1";
    ctx.cpu = "Test CPU";
    ctx.threads = 2;
    ctx.start = "2026-12-05T02:00:00Z";
    if (!run_tag.empty()) ctx.tags = {{"run", run_tag}, {"rev", "41"}};
    if (!shard.empty()) {
        ctx.shard_index = static_cast<std::size_t>(shard[0] - '0');
        ctx.shard_count = static_cast<std::size_t>(shard[2] - '0');
        ctx.cases_total = 4;
        ctx.cases_fingerprint = "f00d";
    }
    return context_record(ctx).at("context");
}

/// A checked case record with outputs O (worst_ratio `ratio`) and stats, as json_record writes it.
nlohmann::json record(const std::string& id, double ratio = 0.25, Status st = Status::passed) {
    CaseResult r;
    r.id = id;
    r.index = 3;
    r.status = st;
    r.repro = "--backend=ref " + id;
    r.info.backend = "ref";
    r.checked = true;
    OutputCheck o;
    o.output = Output::O;
    o.worst_ratio = ratio;
    OutputCheck s;
    s.output = Output::stats;
    s.worst_ratio = std::numeric_limits<double>::quiet_NaN();
    s.pass = false;
    s.failure = CheckFailure::nonfinite;
    r.checks = {o, s};
    r.perf = make_perf_result(summarize({1.0, 3.0}), 0, false, 1000, 10);
    r.perf->noisy = true;
    return json_record(r);
}

TEST_P(Store, StoresARunCaseByCaseAndMarksItCompleteAtTheEnd) {
    ResultsStore store(url_);
    EXPECT_EQ(store.schema_version(), kStoreSchemaVersion);
    EXPECT_EQ(store.begin_part(context("nightly-41")), "nightly-41");
    const nlohmann::json rec = record("b1hq2sq16d16");
    store.add_case(rec);
    // Committed before the run ends: another connection sees the case, and the run incomplete.
    EXPECT_EQ(count("SELECT COUNT(*) FROM cases"), 1);
    EXPECT_EQ(count("SELECT complete FROM run_state WHERE run_key = 'nightly-41'"), 0);
    store.add_case(record("b1hq2sq32d16", 0.5, Status::failed));
    store.finish_part();
    EXPECT_EQ(count("SELECT complete FROM run_state WHERE run_key = 'nightly-41'"), 1);
    EXPECT_EQ(count("SELECT parts FROM run_state WHERE run_key = 'nightly-41'"), 1);

    soci::session s = reader();
    std::string status, backend, text, ctx;
    long long idx = 0, noisy = 0;
    s << "SELECT status, backend, idx, noisy, record FROM cases WHERE case_id = 'b1hq2sq16d16'", soci::into(status),
            soci::into(backend), soci::into(idx), soci::into(noisy), soci::into(text);
    EXPECT_EQ(status, "PASSED");
    EXPECT_EQ(backend, "ref");
    EXPECT_EQ(idx, 3);
    EXPECT_EQ(noisy, 1);
    EXPECT_EQ(text, json_line(rec));  // the JSONL record, byte for byte
    s << "SELECT context FROM run_parts WHERE run_key = 'nightly-41'", soci::into(ctx);
    EXPECT_EQ(nlohmann::json::parse(ctx), context("nightly-41"));
    double ratio = 0;
    s << "SELECT worst_ratio FROM case_outputs WHERE case_id = 'b1hq2sq32d16' AND output = 'O'", soci::into(ratio);
    EXPECT_EQ(ratio, 0.5);
    soci::indicator ind = soci::i_ok;
    std::string failure;
    long long pass = 1;
    s << "SELECT worst_ratio, failure, pass FROM case_outputs WHERE case_id = 'b1hq2sq32d16' AND output = 'stats'",
            soci::into(ratio, ind), soci::into(failure), soci::into(pass);
    EXPECT_EQ(ind, soci::i_null);  // NaN is stored as NULL
    EXPECT_EQ(failure, "nonfinite");
    EXPECT_EQ(pass, 0);
    // The JSON operators the docs show read the record in both databases.
    double median = 0;
    s << "SELECT record -> 'perf' ->> 'median_ms' FROM cases WHERE case_id = 'b1hq2sq16d16'", soci::into(median);
    EXPECT_EQ(median, 2.0);
}

TEST_P(Store, RunKeyIsTheRunTagElseTheRunIdElseHostStartCommand) {
    EXPECT_EQ(run_key(context("r7")), "r7");
    nlohmann::json ctx = context("");
    EXPECT_EQ(run_key(ctx), "ci-1 2026-12-05T02:00:00Z sdpabench --batch=x.cases");  // a report from before run ids
    ctx["run_id"] = "ci-1-20261205T020000.123Z-4242";
    EXPECT_EQ(run_key(ctx), "ci-1-20261205T020000.123Z-4242");
    EXPECT_EQ(run_key(context("r7", "1/2")), "r7");
    try {
        run_key(context("", "1/2"));
        FAIL() << "a shard without a run tag";
    } catch (const StoreError& e) {
        EXPECT_NE(std::string(e.what()).find("shard 1 of 2 has no run tag"), std::string::npos) << e.what();
    }
}

TEST_P(Store, AResubmittedShardCompletesItsRunWithoutDuplicates) {
    {  // shard 0, killed after two cases: never finished
        ResultsStore a(url_);
        a.begin_part(context("r1", "0/2"));
        a.add_case(record("a", 0.1));
        a.add_case(record("b", 0.1));
    }
    {
        ResultsStore b(url_);
        b.begin_part(context("r1", "1/2"));
        b.add_case(record("c"));
        b.add_case(record("d"));
        b.finish_part();
    }
    EXPECT_EQ(count("SELECT complete FROM run_state WHERE run_key = 'r1'"), 0);
    EXPECT_EQ(count("SELECT parts_complete FROM run_state WHERE run_key = 'r1'"), 1);
    {  // shard 0 resubmitted: its cases again, then finished
        ResultsStore a(url_);
        a.begin_part(context("r1", "0/2"));
        a.add_case(record("a", 0.3));
        a.add_case(record("b", 0.3));
        a.finish_part();
    }
    EXPECT_EQ(count("SELECT complete FROM run_state WHERE run_key = 'r1'"), 1);
    EXPECT_EQ(count("SELECT COUNT(*) FROM cases WHERE run_key = 'r1'"), 4);
    EXPECT_EQ(count("SELECT COUNT(*) FROM case_outputs WHERE run_key = 'r1'"), 8);
    EXPECT_EQ(count("SELECT COUNT(*) FROM case_outputs WHERE case_id = 'a' AND worst_ratio = 0.3"), 1);
}

TEST_P(Store, ACaseIsStoredOncePerRun) {
    ResultsStore store(url_);
    store.begin_part(context("r2", "0/2"));
    store.add_case(record("a"));
    try {
        store.add_case(record("a"));
        FAIL() << "the same case twice";
    } catch (const StoreError& e) {
        EXPECT_NE(std::string(e.what()).find("case 'a' is given twice for run 'r2'"), std::string::npos) << e.what();
    }
    ResultsStore other(url_);
    other.begin_part(context("r2", "1/2"));
    try {
        other.add_case(record("a"));
        FAIL() << "a case of another shard";
    } catch (const StoreError& e) {
        EXPECT_NE(std::string(e.what()).find("case 'a' of run 'r2' is already stored by shard 0, not this shard 1"),
                std::string::npos) << e.what();
    }
    EXPECT_EQ(count("SELECT COUNT(*) FROM cases"), 1);
    // A part of another case list under the same run key is refused.
    nlohmann::json ctx = context("r2", "1/3");
    try {
        ResultsStore(url_).begin_part(ctx);
        FAIL() << "another shard count";
    } catch (const StoreError& e) {
        EXPECT_NE(std::string(e.what()).find("run 'r2' is stored as 2 shard(s) of 4 cases (fingerprint f00d), but "
                                             "this part is of 3 shard(s)"), std::string::npos) << e.what();
    }
}

TEST_P(Store, AShardOfAnotherBuildOrCaseListIsRefusedWhenItJoinsNamingWhatDiffers) {
    nlohmann::json first = context("r5", "0/2");
    first["libraries"] = {{"onednn", "3.9.1"}};
    {
        ResultsStore store(url_);
        store.begin_part(first);
        store.add_case(record("a"));
    }
    const auto refusal = [&](const nlohmann::json& ctx) -> std::string {
        try {
            ResultsStore(url_).begin_part(ctx);
        } catch (const StoreError& e) {
            return e.what();
        }
        return "";
    };
    // Another binary: sdpabench's commit and a library version differ; the shard count and case list agree.
    nlohmann::json other_build = context("r5", "1/2");
    other_build["git_commit"] = "def456";
    other_build["libraries"] = {{"onednn", "3.10.0"}};
    std::string why = refusal(other_build);
    EXPECT_NE(why.find("this part (shard 1) cannot join run 'r5': it differs from the run's shard 0 (host ci-1, "
                       "started 2026-12-05T02:00:00Z) in git_commit ('abc123' there, 'def456' here), "
                       "libraries.onednn ('3.9.1' there, '3.10.0' here)"), std::string::npos) << why;
    // A library only one of them reports counts as a difference too.
    nlohmann::json extra_library = context("r5", "1/2");
    extra_library["libraries"] = {{"onednn", "3.9.1"}, {"cudnn", "9.19.0"}};
    why = refusal(extra_library);
    EXPECT_NE(why.find("in libraries.cudnn ('' there, '9.19.0' here)"), std::string::npos) << why;
    // Another batch file: the case list's fingerprint differs; the message names both commands.
    nlohmann::json other_cases = context("r5", "1/2");
    other_cases["libraries"] = first["libraries"];
    other_cases["shard"]["cases_fingerprint"] = "beef";
    other_cases["command"] = "sdpabench --shard=1/2 --batch=y.cases";
    why = refusal(other_cases);
    EXPECT_NE(why.find("run 'r5' is stored as 2 shard(s) of 4 cases (fingerprint f00d), but this part is of 2 "
                       "shard(s) of 4 cases (fingerprint beef) (shard 0 ran 'sdpabench --batch=x.cases', this part "
                       "runs 'sdpabench --shard=1/2 --batch=y.cases')"), std::string::npos) << why;
    // Nothing of the refused parts was stored; the sibling of the same build joins.
    EXPECT_EQ(count("SELECT COUNT(*) FROM run_parts WHERE run_key = 'r5'"), 1);
    nlohmann::json same = context("r5", "1/2");
    same["libraries"] = first["libraries"];
    EXPECT_EQ(refusal(same), "");
    EXPECT_EQ(count("SELECT COUNT(*) FROM run_parts WHERE run_key = 'r5'"), 2);
    // A shard resubmitted with a rebuilt binary is refused as well: its sibling still holds the old build.
    nlohmann::json rebuilt = first;
    rebuilt["git_commit"] = "fff000";
    why = refusal(rebuilt);
    EXPECT_NE(why.find("this part (shard 0) cannot join run 'r5': it differs from the run's shard 1"), std::string::npos)
            << why;
}

// The store and scripts/merge_reports.py refuse shards of different builds by the same fields.
TEST(StoreBuildFields, AreMergeReportsSameRun) {
    std::ifstream f(std::string(SDPABENCH_SOURCE_DIR) + "/scripts/merge_reports.py");
    ASSERT_TRUE(f) << "cannot read scripts/merge_reports.py";
    const std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    std::string mine = "SAME_RUN = (";
    for (std::size_t i = 0; i < kRunBuildFields.size(); ++i)
        mine += fmt::format("{}\"{}\"", i ? ", " : "", kRunBuildFields[i]);
    EXPECT_NE(text.find(mine + ")\n"), std::string::npos) << "merge_reports.py has no line '" << mine << ")'";
    EXPECT_NE(text.find("k.startswith(\"libraries.\")"), std::string::npos);
}

TEST_P(Store, ABatchIsStoredWholeOrNotAtAll) {
    ResultsStore store(url_);
    store.begin();
    store.begin_part(context("r3"));
    store.add_case(record("a"));
    store.rollback();
    EXPECT_EQ(count("SELECT COUNT(*) FROM runs"), 0);
    EXPECT_EQ(count("SELECT COUNT(*) FROM cases"), 0);
    store.begin();
    store.begin_part(context("r3"));
    store.add_case(record("a"));
    store.finish_part();
    store.commit();
    EXPECT_EQ(count("SELECT COUNT(*) FROM cases"), 1);
    EXPECT_EQ(count("SELECT complete FROM run_state"), 1);
}

TEST_P(Store, AnOlderSchemaIsMigratedAndANewerOneRefused) {
    {  // a store at version 0: the version table alone
        soci::session s = reader();
        s << "CREATE TABLE store_schema (version INTEGER NOT NULL)";
        s << "INSERT INTO store_schema (version) VALUES (0)";
    }
    {
        ResultsStore store(url_);
        EXPECT_EQ(store.schema_version(), kStoreSchemaVersion);
        store.begin_part(context("r4"));
        store.add_case(record("a"));
    }
    {
        soci::session s = reader();
        s << "UPDATE store_schema SET version = 99";
    }
    try {
        ResultsStore store(url_);
        FAIL() << "a newer schema";
    } catch (const StoreError& e) {
        EXPECT_NE(std::string(e.what()).find(fmt::format("schema version 99, newer than this sdpabench's {}",
                          kStoreSchemaVersion)), std::string::npos) << e.what();
    }
}

TEST_P(Store, AVersion1StoreIsMigratedTo2KeepingItsRows) {
    {  // a store as version 1 left it: its rows, no end_record column
        ResultsStore store(url_);
        store.begin_part(context("v1"));
        store.add_case(record("a"));
        store.add_case(record("b"));
        store.finish_part();
        soci::session s = reader();
        s << "ALTER TABLE run_parts DROP COLUMN end_record";
        s << "UPDATE store_schema SET version = 1";
    }
    ResultsStore store(url_);
    EXPECT_EQ(store.schema_version(), 2);
    EXPECT_EQ(count("SELECT COUNT(*) FROM cases WHERE run_key = 'v1'"), 2);
    EXPECT_EQ(count("SELECT COUNT(*) FROM case_outputs WHERE run_key = 'v1'"), 4);
    EXPECT_EQ(count("SELECT complete FROM run_state WHERE run_key = 'v1'"), 1);
    EXPECT_EQ(count("SELECT COUNT(*) FROM run_parts WHERE run_key = 'v1' AND end_record IS NULL"), 1);
    // The new column is written when a part ends, NULL while it runs.
    store.begin_part(context("v2"));
    store.add_case(record("a"));
    EXPECT_EQ(count("SELECT COUNT(*) FROM run_parts WHERE run_key = 'v2' AND end_record IS NULL"), 1);
    store.finish_part(nlohmann::json{{"cases", 1}, {"noise", nullptr}});
    soci::session s = reader();
    std::string end;
    s << "SELECT end_record FROM run_parts WHERE run_key = 'v2'", soci::into(end);
    EXPECT_EQ(nlohmann::json::parse(end), nlohmann::json::parse(R"({"cases": 1, "noise": null})"));
    long long cases = 0;
    s << "SELECT CAST(end_record ->> 'cases' AS INTEGER) FROM run_parts WHERE run_key = 'v2'", soci::into(cases);
    EXPECT_EQ(cases, 1);
}

/// `ctx` as invocation `run_id` (RunContext::run_id) started at `start` wrote it.
nlohmann::json as_invocation(nlohmann::json ctx, const std::string& run_id, const std::string& start) {
    ctx["run_id"] = run_id;
    ctx["start"] = start;
    return ctx;
}

TEST_P(Store, APartOfAnotherInvocationIsReplacedWhole) {
    const std::string first = "ci-1-20261205T020000.000Z-123", second = "ci-1-20261206T020000.000Z-456";
    {  // the first invocation of run 'nightly', and both shards of run 'sharded'
        ResultsStore store(url_);
        store.begin_part(as_invocation(context("nightly"), first, "2026-12-05T02:00:00Z"));
        for (const char* id : {"a", "b", "c"}) store.add_case(record(id));
        store.finish_part(nlohmann::json{{"cases", 3}, {"noise", nullptr}});
        EXPECT_EQ(store.replaced(), "");
        for (const char* shard : {"0/2", "1/2"}) {
            store.begin_part(as_invocation(context("sharded", shard), first, "2026-12-05T02:00:00Z"));
            store.add_case(record(fmt::format("s{}", shard[0])));
        }
    }
    // A second invocation under the same tag: none of the first's cases stays, whichever it redoes.
    ResultsStore store(url_);
    store.begin_part(as_invocation(context("nightly"), second, "2026-12-06T02:00:00Z"));
    EXPECT_EQ(store.replaced(), "run 'nightly' part 0 was written by " + first +
                                        " (started 2026-12-05T02:00:00Z); this run " + second +
                                        " (started 2026-12-06T02:00:00Z) replaces it whole: its 3 case(s) are deleted");
    EXPECT_EQ(count("SELECT COUNT(*) FROM cases WHERE run_key = 'nightly'"), 0);
    EXPECT_EQ(count("SELECT COUNT(*) FROM case_outputs WHERE run_key = 'nightly'"), 0);
    EXPECT_EQ(count("SELECT COUNT(*) FROM run_parts WHERE run_key = 'nightly' AND end_record IS NULL AND complete = 0"),
              1);
    store.add_case(record("a"));
    store.finish_part();
    EXPECT_EQ(count("SELECT COUNT(*) FROM cases WHERE run_key = 'nightly'"), 1);
    EXPECT_EQ(count("SELECT COUNT(*) FROM runs WHERE run_key = 'nightly' AND first_start = '2026-12-06T02:00:00Z'"), 1);
    // A shard resubmitted by another invocation replaces its own part only.
    store.begin_part(as_invocation(context("sharded", "1/2"), second, "2026-12-06T02:00:00Z"));
    EXPECT_NE(store.replaced().find("run 'sharded' part 1 was written by " + first), std::string::npos)
            << store.replaced();
    EXPECT_EQ(count("SELECT COUNT(*) FROM cases WHERE run_key = 'sharded' AND part = 0"), 1);
    EXPECT_EQ(count("SELECT COUNT(*) FROM cases WHERE run_key = 'sharded' AND part = 1"), 0);
    // The deletion is the new part's transaction: a batch rolled back leaves the earlier part whole.
    store.begin();
    store.begin_part(as_invocation(context("sharded", "0/2"), second, "2026-12-06T02:00:00Z"));
    EXPECT_NE(store.replaced(), "");
    store.rollback();
    EXPECT_EQ(count("SELECT COUNT(*) FROM cases WHERE run_key = 'sharded' AND part = 0"), 1);
}

TEST_P(Store, TheSameInvocationComingBackKeepsItsRows) {
    const nlohmann::json ctx =
            as_invocation(context("nightly"), "ci-1-20261205T020000.000Z-123", "2026-12-05T02:00:00Z");
    {  // the run's connection, lost after two cases
        ResultsStore store(url_);
        store.begin_part(ctx);
        store.add_case(record("a"));
        store.add_case(record("b"));
    }
    // A reconnect (reports/store_reporter.cpp), or its spool ingested: the same run_id, nothing deleted.
    ResultsStore store(url_);
    store.begin_part(ctx);
    EXPECT_EQ(store.replaced(), "");
    EXPECT_EQ(count("SELECT COUNT(*) FROM cases WHERE run_key = 'nightly'"), 2);
    EXPECT_EQ(count("SELECT COUNT(*) FROM case_outputs WHERE run_key = 'nightly'"), 4);
    store.add_case(record("b", 0.5));  // again, in place
    store.add_case(record("c"));
    store.finish_part();
    EXPECT_EQ(count("SELECT COUNT(*) FROM cases WHERE run_key = 'nightly'"), 3);
    EXPECT_EQ(count("SELECT COUNT(*) FROM case_outputs WHERE case_id = 'b' AND worst_ratio = 0.5"), 1);
}

TEST_P(Store, ManyWritersAtOnce) {
    // Four shards of one run written at the same time, each through its own connection, as four
    // machines would: every case lands once, and the run is complete when the last shard ends.
    constexpr int kShards = 4, kCases = 12;
    std::vector<std::thread> writers;
    std::vector<std::string> errors(kShards);
    for (int i = 0; i < kShards; ++i)
        writers.emplace_back([&, i] {
            try {
                ResultsStore store(url_);
                nlohmann::json ctx = context("r5", fmt::format("{}/{}", i, kShards));
                ctx["shard"]["cases_total"] = kShards * kCases;
                store.begin_part(ctx);
                for (int k = 0; k < kCases; ++k) store.add_case(record(fmt::format("s{}c{}", i, k)));
                store.finish_part();
            } catch (const std::exception& e) {
                errors[static_cast<std::size_t>(i)] = e.what();
            }
        });
    for (auto& w : writers) w.join();
    for (const auto& e : errors) EXPECT_EQ(e, "");
    EXPECT_EQ(count("SELECT COUNT(*) FROM cases WHERE run_key = 'r5'"), kShards * kCases);
    EXPECT_EQ(count("SELECT complete FROM run_state WHERE run_key = 'r5'"), 1);
}

TEST_P(Store, TheReporterWritesWhatTheJsonlReporterWrites) {
    RunContext ctx;
    ctx.host = "h";
    ctx.start = "2026-12-05T03:00:00Z";
    ctx.command = "sdpabench b1hq1sq8d8";
    StoreReporter rep(url_, ReportOptions{});
    rep.begin(ctx);
    CaseResult r;
    r.id = "b1hq1sq8d8";
    r.info.backend = "ref";
    rep.on_case(r);
    EXPECT_EQ(count("SELECT complete FROM run_state"), 0);
    Summary summary;
    summary.noise_end = NoiseSample{.loadavg = 1.5, .steal = 0.0, .steal_jiffies = {}, .total_jiffies = {},
                                    .calib_ms = 2.0, .calib_cv = 0.05, .calib_reps = 25};
    rep.end(summary);
    EXPECT_EQ(count("SELECT complete FROM run_state"), 1);
    soci::session s = reader();
    std::string text, key, end;
    s << "SELECT run_key, record FROM cases", soci::into(key), soci::into(text);
    EXPECT_EQ(key, "h 2026-12-05T03:00:00Z sdpabench b1hq1sq8d8");
    EXPECT_EQ(text, json_line(json_record(r)));
    // The part's end record is the JSONL report's: the case count and the noise after the last case.
    s << "SELECT end_record FROM run_parts", soci::into(end);
    EXPECT_EQ(nlohmann::json::parse(end), end_record(1, summary).at("end"));
    EXPECT_EQ(nlohmann::json::parse(end).at("noise").at("end").at("calib_ms"), 2.0);
}

INSTANTIATE_TEST_SUITE_P(Kinds, Store, ::testing::ValuesIn(kinds()),
        [](const ::testing::TestParamInfo<StoreKind>& i) { return std::string(format_as(i.param)); });

TEST(StoreUrl, ParsesKindAndTarget) {
    std::string err;
    const auto a = parse_store_url("sqlite:/tmp/a:b.db", &err);
    ASSERT_TRUE(a);
    EXPECT_EQ(a->kind, StoreKind::sqlite);
    EXPECT_EQ(a->target, "/tmp/a:b.db");
    const auto b = parse_store_url("postgresql:postgresql://u@127.0.0.1:5432/r", &err);
    ASSERT_TRUE(b);
    EXPECT_EQ(b->kind, StoreKind::postgresql);
    EXPECT_EQ(b->target, "postgresql://u@127.0.0.1:5432/r");
    EXPECT_FALSE(parse_store_url("mysql:x", &err));
    EXPECT_EQ(err, "'mysql:x': unknown store kind 'mysql' (accepted: sqlite:PATH, postgresql:URL)");
    EXPECT_FALSE(parse_store_url("sqlite:", &err));
    EXPECT_EQ(err, "'sqlite:': empty path after 'sqlite:'");
    EXPECT_FALSE(parse_store_url("results.db", &err));
    EXPECT_EQ(err, "'results.db' is not KIND:TARGET (sqlite:PATH or postgresql:URL)");
}

TEST(StoreUrl, AnUnopenableStoreIsNamed) {
    try {
        ResultsStore store({StoreKind::sqlite, "/nonexistent-dir/results.db"});
        FAIL() << "opened";
    } catch (const StoreError& e) {
        EXPECT_NE(std::string(e.what()).find("sqlite:/nonexistent-dir/results.db: cannot open the results store"),
                std::string::npos) << e.what();
    }
    try {
        ResultsStore store({StoreKind::postgresql, "postgresql://nobody:secret@127.0.0.1:1/none?connect_timeout=2"});
        FAIL() << "opened";
    } catch (const StoreError& e) {
        const std::string what = e.what();
        // libpq's keyword order (PQconninfoParse)
        EXPECT_NE(what.find("postgresql:user=nobody dbname=none host=127.0.0.1 port=1: cannot open"), std::string::npos) << what;
        EXPECT_EQ(what.find("secret"), std::string::npos) << "the password is never printed: " << what;
    }
}

}  // namespace
}  // namespace sdpa
