// What CI sees: --expect entries and their outcomes, the
// summary's counts, --fail-on and the exit-code table, the case ids, the run context record.
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "backends/registry.hpp"
#include "driver/case_parser.hpp"
#include "driver/exit_code.hpp"
#include "driver/expect.hpp"
#include "driver/shard.hpp"
#include "reports/console_reporter.hpp"
#include "reports/jsonl_reporter.hpp"
#include "reports/junit_reporter.hpp"
#include "reports/result_fields.hpp"

namespace sdpa {
namespace {

/// Writes `text` to the file `name` in a folder of this process's own: ctest -j runs the tests of
/// this file in processes side by side (and other checkouts' tests may share the temp folder).
std::string write_file(const std::string& name, const std::string& text) {
    const auto dir = std::filesystem::temp_directory_path() / ("sdpabench_test_expect_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    const auto path = (dir / name).string();
    std::ofstream(path) << text;
    return path;
}

CaseResult result(Status st, std::string id) {
    CaseResult r;
    r.status = st;
    r.id = std::move(id);
    r.repro = r.id;
    return r;
}

std::string load_error(const std::string& line) {
    const std::string path = write_file("sdpabench_expect_bad.jsonl", "# comment\n\n" + line + "\n");
    try {
        load_expectations(path);
    } catch (const std::exception& e) {
        return e.what();
    }
    return "";
}

TEST(Expect, LoadsEntriesAndNamesBadLines) {
    const std::string path = write_file("sdpabench_expect.jsonl",
            "# known bugs\n\n"
            R"({"match": "*n=a", "status": "FAILED", "reason": "bug 1", "requires": {"cpu_flags": "fpu", "onednn": "3.13"}})"
            "\n"
            R"({"match": "x", "status": "UNIMPLEMENTED", "reason": "bug 2", "allow_xpass": true})"
            "\n");
    const auto es = load_expectations(path);
    ASSERT_EQ(es.size(), 2u);
    EXPECT_EQ(es[0].match, "*n=a");
    EXPECT_EQ(es[0].status, Status::failed);
    ASSERT_EQ(es[0].needs.size(), 2u);
    EXPECT_EQ(es[0].needs[1], (std::pair<std::string, std::string>{"onednn", "3.13"}));
    EXPECT_EQ(es[0].where, path + ":3");
    EXPECT_EQ(es[1].status, Status::unimplemented);
    EXPECT_TRUE(es[1].allow_xpass);

    EXPECT_NE(load_error("not json").find("sdpabench_expect_bad.jsonl:3: error: not a JSON object"), std::string::npos);
    EXPECT_NE(load_error(R"(["a"])").find("one JSON object per line"), std::string::npos);
    EXPECT_NE(load_error(R"({"match": "x", "status": "PASSED", "reason": "r"})").find("\"PASSED\" cannot be expected"),
            std::string::npos);
    // The statuses it can expect come from the status table, in its order.
    EXPECT_NE(load_error(R"({"match": "x", "status": "LISTED", "reason": "r"})")
                      .find("\"LISTED\" cannot be expected (use SKIPPED, MISTRUSTED, UNIMPLEMENTED, INVALID_ARGUMENTS "
                            "or FAILED)"),
            std::string::npos);
    EXPECT_NE(load_error(R"({"match": "x", "status": "FAILED"})").find("\"reason\""), std::string::npos);
    EXPECT_NE(load_error(R"({"status": "FAILED", "reason": "r"})").find("\"match\""), std::string::npos);
    EXPECT_NE(load_error(R"({"match": "x", "reason": "r"})").find("\"status\""), std::string::npos);
    EXPECT_NE(load_error(R"({"match": "x", "status": "FAILED", "reason": "r", "bug": 1})").find("unknown key \"bug\""),
            std::string::npos);
    EXPECT_NE(load_error(R"({"match": "x", "status": "FAILED", "reason": "r", "requires": {"gpu": "h200"}})")
                      .find("unknown key \"gpu\" (accepted: cpu_flags, onednn, cudnn, torch)"),
            std::string::npos);
    EXPECT_NE(load_error(R"({"match": 3, "status": "FAILED", "reason": "r"})").find("\"match\" must be a string (got 3)"),
            std::string::npos);
    EXPECT_NE(load_error(R"({"match": "x", "status": "failed", "reason": "r"})").find("written in capitals here: \"FAILED\""),
            std::string::npos);
    EXPECT_NE(load_error(R"({"match": "x", "status": "FAILED", "reason": " "})").find("\"reason\" is empty"),
            std::string::npos);
    for (const char* bad : {R"("onednn": "")", R"("onednn": "v3.13.2")", R"("onednn": "3.13.")", R"("cpu_flags": "")",
                            R"("cpu_flags": "avx512f,avx2")"})
        EXPECT_NE(load_error(std::string(R"({"match": "x", "status": "FAILED", "reason": "r", "requires": {)") + bad + "}}")
                          .find("error: \"re"),
                std::string::npos) << bad;
    EXPECT_NE(load_error(R"({"match": "x", "status": "FAILED", "reason": "r", "requires": {"onednn": "v3"}})")
                      .find("must be a version: numbers separated by dots"),
            std::string::npos);
    const auto dir = std::filesystem::temp_directory_path().string();
    try {
        load_expectations(dir);
        ADD_FAILURE() << "a directory is not an --expect file";
    } catch (const std::exception& e) {
        EXPECT_NE(std::string(e.what()).find("is not a regular file"), std::string::npos) << e.what();
    }
}

TEST(Expect, OutcomesFollowStatusAndPlatform) {
    Platform here;
    const std::vector<Expectation> es{
        {"*n=bug", Status::failed, "bug 1", {{"cpu_flags", "fpu"}}, false, "f:1"},
        {"*n=other_cpu", Status::failed, "bug 2", {{"cpu_flags", "no_such_cpu_flag"}}, false, "f:2"},
        {"*n=bug", Status::skipped, "never reached: the first match that holds decides", {}, false, "f:3"},
        {"*n=versioned", Status::failed, "bug 5 in 0.1", {{"cpu_flags", "no_such_cpu_flag"}}, false, "f:4"},
        {"*n=versioned", Status::unimplemented, "bug 5, later", {}, false, "f:5"},
    };
    std::vector<bool> used(es.size(), false);
    CaseResult r = result(Status::failed, "--dt=bf16 b1n=bug");
    apply_expectations(es, here, r, used);
    EXPECT_EQ(r.expect.kind, Expected::xfail);
    EXPECT_NE(r.expect.reason.find("bug 1, f:1"), std::string::npos);

    r = result(Status::passed, "--dt=bf16 b1n=bug");
    apply_expectations(es, here, r, used);
    EXPECT_EQ(r.expect.kind, Expected::xpass);

    r = result(Status::mistrusted, "--dt=bf16 b1n=bug");  // FAILED expected, no longer failing
    apply_expectations(es, here, r, used);
    EXPECT_EQ(r.expect.kind, Expected::xpass);
    EXPECT_NE(r.expect.reason.find("MISTRUSTED, no longer FAILED"), std::string::npos);

    r = result(Status::invalid_arguments, "b1n=bug");  // neither the expected status nor PASSED
    apply_expectations(es, here, r, used);
    EXPECT_EQ(r.expect.kind, Expected::none);
    ASSERT_EQ(r.notes.size(), 1u);
    EXPECT_NE(r.notes[0].find("got INVALID_ARGUMENTS"), std::string::npos);

    r = result(Status::passed, "b1n=other_cpu");
    apply_expectations(es, here, r, used);
    EXPECT_EQ(r.expect.kind, Expected::not_applicable);
    EXPECT_NE(r.expect.reason.find("the CPU lacks no_such_cpu_flag"), std::string::npos);

    r = result(Status::failed, "b1n=other_cpu");  // a failure the entry does not describe stays FAILED
    apply_expectations(es, here, r, used);
    EXPECT_EQ(r.expect.kind, Expected::none);

    r = result(Status::failed, "b1n=unlisted");
    apply_expectations(es, here, r, used);
    EXPECT_EQ(r.expect.kind, Expected::none);
    EXPECT_TRUE(r.notes.empty());

    // An entry whose requirements fail gives way to a later one that holds (one entry per version).
    r = result(Status::unimplemented, "b1n=versioned");
    apply_expectations(es, here, r, used);
    EXPECT_EQ(r.expect.kind, Expected::xfail);
    EXPECT_NE(r.expect.reason.find("f:5"), std::string::npos);

    // A repeat of a case is covered by the entry for it; a timeout or a crash never is XFAIL.
    r = result(Status::failed, "--dt=bf16 b1n=bug #2");
    apply_expectations(es, here, r, used);
    EXPECT_EQ(r.expect.kind, Expected::xfail);
    r = result(Status::failed, "--dt=bf16 b1n=bug");
    r.timed_out = true;
    apply_expectations(es, here, r, used);
    EXPECT_EQ(r.expect.kind, Expected::none);
    r.timed_out = false;
    r.crashed = true;
    apply_expectations(es, here, r, used);
    EXPECT_EQ(r.expect.kind, Expected::none);
    EXPECT_EQ(used, (std::vector<bool>{true, true, false, true, true}));
}

TEST(Expect, BackendGlobLimitsAnEntryToItsBackend) {
    Platform here;
    const std::vector<Expectation> es{{"*--dropout=0.*:*:0 *", Status::failed, "legacy path", {}, true, "f:1", "onednn"}};
    std::vector<bool> used(es.size(), false);
    CaseResult r = result(Status::failed, "--dropout=0.5:3:0 b1hq1sq64d8");
    r.info.backend = "onednn";
    apply_expectations(es, here, r, used);
    EXPECT_EQ(r.expect.kind, Expected::xfail);
    r = result(Status::passed, "--backend=ref --dropout=0.5:3:0 b1hq1sq64d8");
    r.info.backend = "ref";
    apply_expectations(es, here, r, used);
    EXPECT_EQ(r.expect.kind, Expected::none);  // not an XPASS: the entry is about onednn
    EXPECT_NE(load_error(R"({"match": "x", "backend": 3, "status": "FAILED", "reason": "r"})")
                      .find("\"backend\" must be a string"),
            std::string::npos);
}

/// A result with the fields a condition reads.
CaseResult described(Status st, const std::string& backend, const std::string& dt, std::int64_t B, std::int64_t H_q,
        const std::string& isa, std::vector<std::string> knobs = {}) {
    CaseResult r = result(st, fmt::format("--dt={} b{}hq{}sq16d16", dt, B, H_q));
    r.info.backend = backend;
    r.info.dt = dt;
    r.info.B = B;
    r.info.H_q = H_q;
    r.info.isa = isa;
    r.info.knobs = std::move(knobs);
    return r;
}

/// The entries of one line of --expect text.
Expectation entry(const std::string& line) {
    const auto es = load_expectations(write_file("sdpabench_expect_when.jsonl", line + "\n"));
    EXPECT_EQ(es.size(), 1u);
    return es.empty() ? Expectation{} : es.front();
}

TEST(Expect, ConditionsOverResultFieldsAndKnobs) {
    const Expectation x = entry(R"({"when": {"backend": "onednn", "dt": ["bf16", "f16"], "B": ">= 2", "H_q": "2..4",)"
                                R"( "isa": "*amx*", "mask-shape": "!1x1x1xSkv"}, "status": "FAILED", "reason": "r"})");
    ASSERT_EQ(x.when.all.size(), 6u);
    EXPECT_TRUE(x.match.empty());
    EXPECT_TRUE(x.when.all[5].knob);
    EXPECT_EQ(x.when.all[5].key, "mask-shape");
    const std::vector<std::string> kn{"mask-shape=1x1xSqxSkv"};
    EXPECT_TRUE(expectation_matches(x, described(Status::failed, "onednn", "bf16", 2, 2, "avx512_core_amx", kn)));
    EXPECT_TRUE(expectation_matches(x, described(Status::failed, "onednn", "f16", 8, 4, "avx512_core_amx_fp16", kn)));
    EXPECT_FALSE(expectation_matches(x, described(Status::failed, "onednn", "f32", 2, 2, "avx512_core_amx", kn)));  // dt
    EXPECT_FALSE(expectation_matches(x, described(Status::failed, "onednn", "bf16", 1, 2, "avx512_core_amx", kn)));  // B
    EXPECT_FALSE(expectation_matches(x, described(Status::failed, "onednn", "bf16", 2, 5, "avx512_core_amx", kn)));  // range
    EXPECT_FALSE(expectation_matches(x, described(Status::failed, "onednn", "bf16", 2, 2, "avx512_core_bf16", kn)));  // isa
    EXPECT_FALSE(expectation_matches(x, described(Status::failed, "torch:flash", "bf16", 2, 2, "avx512_core_amx", kn)));
    // The negated glob; a knob the result does not carry has no value, which matches no glob, so
    // the negated glob holds for it (and any other test would not).
    EXPECT_FALSE(expectation_matches(x, described(Status::failed, "onednn", "bf16", 2, 2, "avx512_core_amx",
                                                {"mask-shape=1x1x1xSkv"})));
    EXPECT_TRUE(expectation_matches(x, described(Status::failed, "onednn", "bf16", 2, 2, "avx512_core_amx")));
    const Expectation y0 = entry(R"({"when": {"mask-shape": "1x1x*"}, "status": "FAILED", "reason": "r"})");
    EXPECT_FALSE(expectation_matches(y0, described(Status::failed, "onednn", "bf16", 2, 2, "avx512_core_amx")));
    // Before a case runs (a sharded run's other cases), what only the run says meets every test.
    CaseResult before = described(Status::passed, "onednn", "bf16", 2, 2, "", kn);
    EXPECT_FALSE(expectation_matches(x, before));
    EXPECT_TRUE(expectation_may_match(x, before));
    before.info.B = 1;
    EXPECT_FALSE(expectation_may_match(x, before));

    // any_of, a bare number (==), "!=", a flag knob, a glob over a number's text.
    const Expectation y = entry(R"({"when": {"S_q": 1, "H_kv": "!= 3", "dmask": true, "D_qk": "1?", "any_of": [)"
                                R"({"layout": "bshd"}, {"strides": ["O:*", "*+O:*"]}]}, "status": "FAILED", "reason": "r"})");
    CaseResult r = described(Status::failed, "onednn", "f32", 1, 2, "", {"layout=bhsd", "strides=dO:bshd+O:bshd", "dmask=true"});
    r.info.S_q = 1;
    r.info.H_kv = 2;
    r.info.D_qk = 16;
    EXPECT_TRUE(expectation_matches(y, r));
    r.info.knobs = {"layout=bshd", "strides=none", "dmask=true"};
    EXPECT_TRUE(expectation_matches(y, r));
    r.info.knobs = {"layout=bhsd", "strides=dO:bshd", "dmask=true"};  // neither alternative
    EXPECT_FALSE(expectation_matches(y, r));
    r.info.knobs = {"layout=bshd", "strides=none", "dmask=false"};
    EXPECT_FALSE(expectation_matches(y, r));
    r.info.knobs = {"layout=bshd", "strides=none", "dmask=true"};
    r.info.H_kv = 3;
    EXPECT_FALSE(expectation_matches(y, r));
    r.info.H_kv = 2;
    r.info.D_qk = 128;
    EXPECT_FALSE(expectation_matches(y, r));
    // A negated glob holds for a field without a value: no dropout is "!*".
    const Expectation nodrop = entry(R"({"when": {"dropout": "!*"}, "status": "FAILED", "reason": "r"})");
    CaseResult plain = described(Status::failed, "onednn", "bf16", 1, 1, "");
    EXPECT_TRUE(expectation_matches(nodrop, plain));
    plain.info.dropout = "0.1:1:1";
    EXPECT_FALSE(expectation_matches(nodrop, plain));
    // A glob and a condition together: both must hold.
    const Expectation z = entry(R"({"match": "*n=x", "when": {"dt": "bf16"}, "status": "FAILED", "reason": "r"})");
    CaseResult named = described(Status::failed, "onednn", "bf16", 1, 1, "");
    EXPECT_FALSE(expectation_matches(z, named));
    named.id += "n=x";
    EXPECT_TRUE(expectation_matches(z, named));
}

TEST(Expect, ConditionErrorsNameTheFieldAndTheRule) {
    const auto err = [](const std::string& when) {
        return load_error(R"({"when": )" + when + R"(, "status": "FAILED", "reason": "r"})");
    };
    EXPECT_NE(err(R"({"Bq": 2})").find("unknown field \"Bq\""), std::string::npos) << err(R"({"Bq": 2})");
    EXPECT_NE(err(R"({"H_kq": 2})").find("did you mean H_q, H_kv?"), std::string::npos) << err(R"({"H_kq": 2})");
    EXPECT_NE(err(R"({"mask_shap": "1x1xSqxSkv"})").find("did you mean mask-shape"), std::string::npos)
            << err(R"({"mask_shap": "1x1xSqxSkv"})");
    EXPECT_NE(err(R"({"B": ">= two"})").find("\"B\": \">= two\" compares with 'two', which is not a number"),
            std::string::npos) << err(R"({"B": ">= two"})");
    EXPECT_NE(err(R"({"B": "8..2"})").find("the range \"8..2\" is empty"), std::string::npos);
    EXPECT_NE(err(R"({"B": []})").find("an empty list of tests"), std::string::npos);
    EXPECT_NE(err(R"({"B": {"min": 2}})").find("a test is a string, a number, true or false"), std::string::npos);
    EXPECT_NE(err(R"("bf16")").find("\"when\" is an object of FIELD: TEST"), std::string::npos);
    EXPECT_NE(err(R"({"any_of": {}})").find("\"any_of\" is a non-empty list"), std::string::npos);
    EXPECT_NE(err(R"({"any_of": [{"nope": 1}]})").find("unknown field \"nope\""), std::string::npos);
    EXPECT_NE(load_error(R"({"status": "FAILED", "reason": "r"})").find("\"match\" (a case id or glob) or \"when\""),
            std::string::npos);
    // A test no value of its field could meet is an error, not an entry that never matches.
    EXPECT_NE(err(R"({"B": "=> 2"})").find("is neither a number, a comparison (>= 2), a range (2..8) nor a glob"),
            std::string::npos) << err(R"({"B": "=> 2"})");
    EXPECT_NE(err(R"({"B": "2.."})").find("\"2..\" is not a range A..B of two numbers"), std::string::npos);
    EXPECT_NE(err(R"({"B": "1..x"})").find("is not a range A..B"), std::string::npos);
    EXPECT_NE(err(R"({"B": true})").find("true is a flag test (B is a number)"), std::string::npos) << err(R"({"B": true})");
    EXPECT_NE(err(R"({"dt": 2})").find("2 is a number test (dt is text)"), std::string::npos) << err(R"({"dt": 2})");
    EXPECT_NE(err(R"({"dt": ">= 2"})").find("\">= 2\" is a comparison (dt is text)"), std::string::npos);
    EXPECT_NE(err(R"({"dt": "bf16", "dt": "f32"})").find("the key \"dt\" is given twice"), std::string::npos);
    EXPECT_TRUE(err(R"({"B": " >= 2 "})").empty()) << err(R"({"B": " >= 2 "})");  // blanks around a test
    // The error names the file and line.
    EXPECT_NE(err(R"({"Bq": 2})").find("sdpabench_expect_bad.jsonl:3: error:"), std::string::npos);
}

/// Results oneDNN 3.13.2 gave on an AMX CPU (Intel Xeon, amx_bf16 and avx512_fp16), recorded with
///   sdpabench --no-rerun-failed --dir=bwd --dt=bf16 --mask=causal_tl --cpu-isa=default,avx512_core_bf16
///     b2hq4sq64skv80d32 --dir=fwd_t --mask=bias --mask-shape=1x1xSqxSkv b2hq2sq32d32n=amx_bf16_bcast_bias
///     --cpu-isa=default --dir=bwd --mask=causal_tl b2hq4hkv2sq64skv80d32 b2hq2sq1skv16d16
///     --mask=bias --mask-shape=1x1x1xSkv b2hq2sq64d32 --report=jsonl:FILE
/// (the context record trimmed): the project's AMX entry judged on them, whatever CPU runs the test.
TEST(Expect, AmxEntryOnRecordedResults) {
    const std::string src = SDPABENCH_SOURCE_DIR;
    const auto entries = load_expectations(src + "/cases/known/expected.jsonl");
    std::ifstream in(src + "/tests/data/onednn_amx_bf16_mask_broadcast.jsonl");
    std::vector<CaseResult> rs;
    for (std::string line; std::getline(in, line);) {
        const auto j = nlohmann::json::parse(line);
        if (!j.contains("context")) rs.push_back(result_from_record(j));
    }
    ASSERT_EQ(rs.size(), 7u);
    Platform here;
    const auto judge = [&](CaseResult r) {
        std::vector<bool> used(entries.size(), false);
        apply_expectations(entries, here, r, used);
        return r;
    };
    for (const CaseResult& r : rs) {
        const CaseResult j = judge(r);
        SCOPED_TRACE(r.id);
        if (r.info.isa == "avx512_core_amx" && r.status == Status::failed) {  // ran on AMX: the bug
            EXPECT_EQ(j.expect.kind, Expected::xfail);
            EXPECT_NE(j.expect.reason.find("pull request 6025"), std::string::npos) << j.expect.reason;
        } else {  // capped below AMX, a GQA graph, a non-AMX matmul, a mask without S_q: not the bug
            EXPECT_EQ(r.status, Status::passed);
            EXPECT_EQ(j.expect.kind, Expected::none) << j.expect.reason;
        }
    }
    EXPECT_EQ(rs[1].info.isa, "avx512_core_bf16");
    EXPECT_EQ(rs[1].info.cpu_isa, "avx512_core_bf16");
    // The fixed library: the AMX run PASSES, and the entry says so (XPASS, which fails the run).
    CaseResult fixed = rs[0];
    fixed.status = Status::passed;
    fixed.checks.clear();
    EXPECT_EQ(judge(fixed).expect.kind, Expected::xpass);
    // A failure the bug does not explain (a dMask check) stays FAILED.
    CaseResult other = rs[0];
    OutputCheck dmask;
    dmask.output = Output::dMask;
    dmask.pass = false;
    dmask.failure = CheckFailure::bound;
    other.checks.push_back(dmask);
    EXPECT_EQ(judge(other).expect.kind, Expected::none);
}

TEST(Expect, LibraryVersionsArePrefixesByComponent) {
    Platform here;
    const std::string v = make_backend("onednn") ? make_backend("onednn")->library_version() : "";
    if (v.empty()) GTEST_SKIP() << "no oneDNN in this build";
    EXPECT_FALSE(here.unmet("onednn", v).has_value());
    EXPECT_FALSE(here.unmet("onednn", v.substr(0, v.rfind('.'))).has_value());  // "3.13" covers "3.13.2"
    EXPECT_TRUE(here.unmet("onednn", v + "1").has_value());                     // "3.13.21" does not
    EXPECT_TRUE(here.unmet("onednn", "0.1").has_value());
}

TEST(ExitCode, TableAndPrecedence) {
    const FailOn def;
    const auto code = [&](std::vector<CaseResult> rs, const FailOn& f) {
        Summary s;
        for (const auto& r : rs) s.add(r);
        return exit_code(s, f);
    };
    const CaseResult ok = result(Status::passed, "a");
    CaseResult xfail = result(Status::failed, "b"), xpass = result(Status::passed, "c"), timeout = result(Status::failed, "d");
    xfail.expect.kind = Expected::xfail;
    xpass.expect.kind = Expected::xpass;
    timeout.timed_out = true;
    EXPECT_EQ(code({ok, result(Status::executed, "e"), result(Status::skipped, "f")}, def), kExitOk);
    EXPECT_EQ(code({ok, xfail}, def), kExitOk);  // an expected failure does not fail the run
    EXPECT_EQ(code({result(Status::failed, "g"), result(Status::invalid_arguments, "h"), xpass}, def), kExitFailed);
    EXPECT_EQ(code({result(Status::unimplemented, "h"), xpass}, def), kExitUntested);
    EXPECT_EQ(code({timeout}, def), kExitUntested);
    EXPECT_EQ(code({xpass}, def), kExitXpass);
    xpass.expect.allow_xpass = true;
    EXPECT_EQ(code({xpass}, def), kExitOk);

    std::string err;
    const auto skipped = parse_fail_on("default,skipped", &err);
    ASSERT_TRUE(skipped) << err;
    EXPECT_EQ(code({result(Status::skipped, "f")}, *skipped), kExitFailOn);
    EXPECT_EQ(code({result(Status::invalid_arguments, "h")}, *skipped), kExitUntested);
    const auto only_mistrusted = parse_fail_on("mistrusted", &err);  // replaces the default, FAILED stays
    ASSERT_TRUE(only_mistrusted) << err;
    EXPECT_EQ(code({result(Status::invalid_arguments, "h")}, *only_mistrusted), kExitOk);
    EXPECT_EQ(code({result(Status::failed, "g")}, *only_mistrusted), kExitFailed);
    EXPECT_EQ(code({result(Status::mistrusted, "m")}, *only_mistrusted), kExitFailOn);
    const auto na = parse_fail_on("not_applicable", &err);
    ASSERT_TRUE(na) << err;
    CaseResult n = result(Status::passed, "n");
    n.expect.kind = Expected::not_applicable;
    EXPECT_EQ(code({n}, *na), kExitFailOn);
    EXPECT_FALSE(parse_fail_on("default,skiped", &err));
    EXPECT_NE(err.find("'skiped' is not a status (accepted, comma-separated: default, empty, passed,"), std::string::npos);
    // "empty" (a selection of no case) is in the default and can be left out.
    EXPECT_TRUE(FailOn{}.empty);
    const auto no_empty = parse_fail_on("failed,xpass", &err);
    ASSERT_TRUE(no_empty) << err;
    EXPECT_FALSE(no_empty->empty);
    EXPECT_TRUE(parse_fail_on("default", &err)->empty);
}

TEST(Summary, CountsEachCaseOnceByWhatItShows) {
    Summary s;
    CaseResult xfail = result(Status::failed, "a");
    xfail.expect.kind = Expected::xfail;
    s.add(xfail);
    s.add(result(Status::failed, "b"));
    s.add(result(Status::executed, "c"));
    EXPECT_EQ(s.tests, 3u);
    EXPECT_EQ(s[Status::failed], 1u);
    EXPECT_EQ(s[Expected::xfail], 1u);
    EXPECT_EQ(s[Status::executed], 1u);
    EXPECT_EQ(summary_line(s), "tests:3 passed:0 skipped:0 mistrusted:0 unimplemented:0 invalid_arguments:0 failed:1 "
                               "listed:0 executed:1 xfail:1 xpass:0 not_applicable:0 ref_fallback:0");
    EXPECT_EQ(shown_status(xfail), "XFAIL");
    xfail.reason = "O: wrong";
    xfail.expect.reason = "expected FAILED (bug 1, f:1)";
    EXPECT_EQ(status_line(xfail), "0:XFAIL (FAILED: O: wrong; expected FAILED (bug 1, f:1)) (0.0 ms) __REPRO: a");
}

TEST(Junit, ExpectationOutcomesAndExecuted) {
    CaseResult xfail = result(Status::failed, "x1"), xpass = result(Status::passed, "x2"),
               na = result(Status::passed, "x3"), ex = result(Status::executed, "x4");
    xfail.expect.kind = Expected::xfail;
    xpass.expect.kind = Expected::xpass;
    na.expect.kind = Expected::not_applicable;
    Summary s;
    for (const auto* r : {&xfail, &xpass, &na, &ex}) s.add(*r);
    const std::string x = junit_document({xfail, xpass, na, ex}, s);
    EXPECT_NE(x.find("tests=\"4\" failures=\"1\" errors=\"0\" skipped=\"2\""), std::string::npos) << x;
    EXPECT_NE(x.find("<skipped message=\"XFAIL: FAILED; "), std::string::npos) << x;
    EXPECT_NE(x.find("<failure type=\"XPASS\""), std::string::npos) << x;
    EXPECT_NE(x.find("<skipped message=\"NOT_APPLICABLE: PASSED; "), std::string::npos) << x;
    EXPECT_NE(x.find("<system-out>EXECUTED __REPRO: x4"), std::string::npos) << x;
    EXPECT_NE(x.find("name=\"x4\""), std::string::npos) << x;
}

TEST(Jsonl, ContextRecordAndIdFields) {
    RunContext ctx;
    ctx.sdpabench = "9.9";
    ctx.git_commit = "abc123-dirty";
    ctx.threads = 3;
    ctx.libraries = {{"onednn", "3.13.2"}};
    ctx.tags = {{"machine", "ci-3"}};
    EXPECT_TRUE(context_record(ctx)["context"]["noise"].is_null());  // no sample taken
    ctx.build_type = "Release";
    ctx.cpu_governor = "performance";
    ctx.noise_start = NoiseSample{.loadavg = 0.5, .steal = 0.01, .steal_jiffies = 40, .total_jiffies = 9000,
                                  .calib_ms = 1.25, .calib_cv = 0.03, .calib_slow = 0.04, .calib_reps = 25};
    const nlohmann::json c = context_record(ctx);
    EXPECT_EQ(c["context"]["threads"], 3);
    EXPECT_EQ(c["context"]["libraries"]["onednn"], "3.13.2");
    EXPECT_EQ(c["context"]["tags"]["machine"], "ci-3");
    EXPECT_EQ(c["context"]["build_type"], "Release");
    EXPECT_EQ(c["context"]["cpu_governor"], "performance");
    EXPECT_EQ(c["context"]["noise"], nlohmann::json::parse(R"({"start": {"loadavg": 0.5, "steal": 0.01,
            "jiffies": {"steal": 40, "total": 9000}, "calib_ms": 1.25, "calib_cv": 0.03, "calib_slow": 0.04,
            "calib_reps": 25}})"));
    ctx.noise_start->loadavg.reset();  // unreadable: null
    ctx.noise_start->steal.reset();
    EXPECT_TRUE(context_record(ctx)["context"]["noise"]["start"]["loadavg"].is_null());
    EXPECT_TRUE(context_record(ctx)["context"]["noise"]["start"]["steal"].is_null());
    // The same facts, flattened, for the CSV comment lines and the JUnit properties.
    const auto f = context_fields(ctx);
    const auto has = [&](const std::string& k, const std::string& v) {
        return std::find(f.begin(), f.end(), std::pair<std::string, std::string>{k, v}) != f.end();
    };
    EXPECT_TRUE(has("threads", "3"));
    EXPECT_TRUE(has("git_commit", "abc123-dirty"));
    EXPECT_TRUE(has("libraries.onednn", "3.13.2"));
    EXPECT_TRUE(has("tags.machine", "ci-3"));
    EXPECT_TRUE(has("build_type", "Release"));
    EXPECT_TRUE(has("cpu_governor", "performance"));
    EXPECT_NE(junit_document({}, Summary{}, &ctx).find("<property name=\"tags.machine\" value=\"ci-3\"/>"),
            std::string::npos);
    CaseResult r = result(Status::failed, "b1 #2");
    r.expect.kind = Expected::xfail;
    r.timed_out = true;
    const nlohmann::json j = json_record(r);
    EXPECT_EQ(j["id"], "b1 #2");
    EXPECT_EQ(j["status"], "FAILED");
    EXPECT_EQ(j["expect"], "XFAIL");
    EXPECT_EQ(j["timed_out"], true);
}

TEST(CaseLanguage, TrailingKnobInAFileAndSpacedValues) {
    const std::string path = write_file("sdpabench_trailing.cases", "b1hq2sq16d16\n--dt=f16\n");
    auto es = parse_cases({"--batch=" + path});
    ASSERT_EQ(es.size(), 2u);
    ASSERT_FALSE(es[1].c);
    EXPECT_FALSE(es[1].usage);  // an error of the file: the batch goes on
    EXPECT_NE(es[1].error.find("sdpabench_trailing.cases:2:1: error: '--dt=f16' comes after the last problem"),
            std::string::npos) << es[1].error;
    EXPECT_EQ(es[1].where, path + ":2");

    const std::string spaced = write_file("sdpabench_spaced.cases", "--dt bf16 b1hq2sq16d16\nb1hq2sq16d16\n");
    es = parse_cases({"--batch=" + spaced});
    ASSERT_EQ(es.size(), 3u);
    EXPECT_NE(es[0].error.find("'--dt bf16': a knob and its value are joined by '=': write --dt=bf16"),
            std::string::npos) << es[0].error;
    // The problem after it on its line would run without the knob: reported, not run.
    EXPECT_NE(es[1].error.find("'b1hq2sq16d16' not run: the knob '--dt bf16' before it on its line"), std::string::npos)
            << es[1].error;
    EXPECT_TRUE(es[2].c);  // the next line still runs

    es = parse_cases({"--dt", "bf16", "b1hq2sq16d16"});
    ASSERT_FALSE(es.empty());
    EXPECT_TRUE(es[0].usage);
    EXPECT_NE(es[0].error.find("write --dt=bf16"), std::string::npos);

    es = parse_cases({"--backend=faulty:bogus", "b1hq2sq16d16"});
    ASSERT_FALSE(es.empty());
    EXPECT_NE(es[0].error.find("unknown fault 'bogus' for --backend=faulty:KIND (accepted: faulty:causal_off_by_one"),
            std::string::npos) << es[0].error;
    es = parse_cases({"--backend=bogus", "b1hq2sq16d16"});
    EXPECT_NE(es[0].error.find("faulty:KIND"), std::string::npos) << es[0].error;
}

TEST(Shard, EveryCaseOnceBalancedByCost) {
    std::string err;
    ASSERT_TRUE(parse_shard("1/3", &err));
    EXPECT_EQ(parse_shard("1/3", &err)->index, 1u);
    for (const char* bad : {"3/3", "0/0", "1", "-1/2", "a/b", "1/2/3", "/2", ""}) {
        EXPECT_FALSE(parse_shard(bad, &err)) << bad;
        EXPECT_NE(err.find("is not I/N with 0 <= I < N"), std::string::npos) << err;
    }
    // One big case and four small ones (and a parse error): the big one alone in one shard.
    const auto es = parse_cases({"b1hq8sq256d64", "b1hq1sq8d8", "--dt=bf8", "b1hq1sq8d8", "b1hq1sq16d8",
                                 "b1hq1sq8d16", "b1hq1sq8d8"});
    ASSERT_EQ(es.size(), 7u);
    std::vector<int> owner(es.size(), -1);
    for (std::size_t k = 0; k < 2; ++k)
        for (const std::size_t i : shard_cases(es, Shard{k, 2})) {
            EXPECT_EQ(owner[i], -1) << "case " << i << " in two shards";
            owner[i] = static_cast<int>(k);
        }
    for (std::size_t i = 0; i < es.size(); ++i) EXPECT_NE(owner[i], -1) << "case " << i << " in no shard";
    EXPECT_EQ(shard_cases(es, Shard{0, 2}), (std::vector<std::size_t>{0}));  // the big case
    EXPECT_EQ(shard_cases(es, Shard{0, 1}).size(), es.size());
}

}  // namespace
}  // namespace sdpa
