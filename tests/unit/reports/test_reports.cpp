// Report writers (reports/): JSON Lines parsed back, JUnit golden text, CSV escaping, progress.
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "reports/console_reporter.hpp"
#include "reports/csv_reporter.hpp"
#include "reports/escape.hpp"
#include "reports/jsonl_reporter.hpp"
#include "reports/junit_reporter.hpp"
#include "reports/progress_reporter.hpp"
#include "reports/report_files.hpp"
#include "reports/perf_template.hpp"
#include "reports/result_fields.hpp"

namespace sdpa {
namespace {

const std::string kNastyReason = "dQ: got \"NaN\", expected <1 & 'x'>\nline2";

CaseResult failed_case() {
    CaseResult r;
    r.index = 1;
    r.status = Status::failed;
    r.reason = kNastyReason;
    r.ms = 12.5;
    r.repro = "--dir=bwd b1hq2sq16d16n=a.b-c_d";
    r.id = r.repro;
    r.info = CaseInfo{.backend = "onednn", .engine = "cpu", .mode = "C", .dir = "bwd", .dt = "f32",
        .mask = "none", .prb = "b1hq2sq16d16", .name = "a.b-c_d", .dropout = ""};
    r.checked = true;
    OutputCheck c;
    c.output = Output::dQ;
    c.pass = false;
    c.reason = "non-finite";
    c.worst_ratio = INFINITY;
    c.worst_index = {0, 1, 2, 3};
    c.got = NAN;
    c.expected = 0.5f;
    c.err = NAN;
    c.bound = 1e-3;
    c.nonfinite = 4;
    r.checks.push_back(c);
    r.flops = 1000;
    r.bytes = 64;
    return r;
}

CaseResult timed_case() {
    CaseResult r;
    r.index = 2;
    r.ms = 250;
    r.repro = "--mode=P b1hq2sq64d64";
    r.id = r.repro + " #2";
    r.info = CaseInfo{.backend = "onednn", .engine = "cpu", .mode = "P", .dir = "fwd_t", .dt = "bf16",
        .mask = "causal_tl", .prb = "b1hq2sq64d64", .name = "", .dropout = ""};
    r.flops = 4'000'000;
    r.bytes = 2'000'000;
    r.perf = make_perf_result(summarize({1, 2, 4}), 12.5, true, r.flops, r.bytes);
    return r;
}

std::filesystem::path temp_path(const std::string& name) {
    return std::filesystem::temp_directory_path() / ("sdpabench_test_reports_" + std::to_string(::getpid()) + name);
}

std::vector<std::string> read_lines(const std::filesystem::path& p) {
    std::ifstream f(p);
    std::vector<std::string> lines;
    for (std::string l; std::getline(f, l);) lines.push_back(l);
    return lines;
}

TEST(Jsonl, RecordsParseBackWithNonFiniteAsNullAndFlag) {
    const auto path = temp_path("a.jsonl");
    {
        JsonlReporter rep(path.string());
        rep.on_case(failed_case());
        // Flushed per case: the line is on disk before the next case.
        ASSERT_EQ(read_lines(path).size(), 1u);
        rep.on_case(timed_case());
        Summary s;
        s.noise_end = NoiseSample{.loadavg = 0.75, .steal = 0.0, .steal_jiffies = {}, .total_jiffies = {},
                                  .calib_ms = 1.5, .calib_cv = 0.02, .calib_reps = 25};
        rep.end(s);
    }
    const auto lines = read_lines(path);
    std::filesystem::remove(path);
    ASSERT_EQ(lines.size(), 3u);
    // The last line: the run ended, with the cases written and the machine's noise after them.
    EXPECT_EQ(nlohmann::json::parse(lines[2]), nlohmann::json::parse(R"({"end": {"cases": 2, "noise": {"end":
            {"loadavg": 0.75, "steal": 0.0, "jiffies": null, "calib_ms": 1.5, "calib_cv": 0.02, "calib_slow": 0.0,
             "calib_reps": 25}}}})"));
    const auto a = nlohmann::json::parse(lines[0]);  // throws (fails the test) if invalid
    EXPECT_EQ(a["idx"], 1);
    EXPECT_EQ(a["status"], "FAILED");
    EXPECT_EQ(a["reason"], kNastyReason);
    EXPECT_EQ(a["repro"], "--dir=bwd b1hq2sq16d16n=a.b-c_d");
    EXPECT_EQ(a["name"], "a.b-c_d");
    EXPECT_EQ(a["checked"], true);
    EXPECT_TRUE(a["perf"].is_null());
    const auto& o = a["outputs"][0];
    EXPECT_EQ(o["output"], "dQ");
    EXPECT_TRUE(o["got"].is_null());
    EXPECT_EQ(o["got_nonfinite"], "nan");
    EXPECT_TRUE(o["worst_ratio"].is_null());
    EXPECT_EQ(o["worst_ratio_nonfinite"], "inf");
    EXPECT_EQ(o["expected"], 0.5);
    EXPECT_FALSE(o.contains("expected_nonfinite"));
    EXPECT_EQ(o["worst_index"], nlohmann::json::array({0, 1, 2, 3}));
    EXPECT_EQ(o["nonfinite"], 4);

    const auto b = nlohmann::json::parse(lines[1]);
    EXPECT_EQ(b["status"], "PASSED");
    EXPECT_EQ(b["mode"], "P");
    EXPECT_EQ(b["flops"], 4000000);
    EXPECT_EQ(b["perf"]["runs"], 3);
    EXPECT_EQ(b["perf"]["min_ms"], 1.0);
    EXPECT_EQ(b["perf"]["median_ms"], 2.0);
    EXPECT_EQ(b["perf"]["max_ms"], 4.0);
    EXPECT_DOUBLE_EQ(b["perf"]["mean_ms"].get<double>(), 7.0 / 3.0);
    EXPECT_EQ(b["perf"]["gflops"], 2.0);
    EXPECT_EQ(b["perf"]["gflops_best"], 4.0);
    EXPECT_EQ(b["perf"]["compile_ms"], 12.5);
    EXPECT_EQ(b["perf"]["cold_cache"], true);
}

TEST(Jsonl, DropoutKnobAndChecks) {
    CaseResult r = failed_case();
    EXPECT_TRUE(json_record(r)["dropout"].is_null());
    EXPECT_TRUE(json_record(r)["dropout_checks"].is_null());
    r.info.dropout = "0.5:3:9";
    r.dropout = DropoutReport{"oneDNN's Philox4x32-10 dropout, seed 3, offset 9", {}, {"dropout: rule"}};
    r.dropout->stats.heads = 8;
    r.dropout->stats.keep = WorstHead{0.02, 0.49, 1, 3};
    r.dropout->stats.pairs = WorstHead{0.3, 0.51, 0, 2};
    r.dropout->stats.threshold = 6.25e-8;
    const auto j = nlohmann::json::parse(json_line(json_record(r)));
    EXPECT_EQ(j["dropout"], "0.5:3:9");
    const auto& d = j["dropout_checks"];
    EXPECT_EQ(d["mask"], "oneDNN's Philox4x32-10 dropout, seed 3, offset 9");
    EXPECT_EQ(d["failures"], nlohmann::json::array({"dropout: rule"}));
    EXPECT_EQ(d["heads"], 8);
    EXPECT_DOUBLE_EQ(d["keep_p_value"].get<double>(), 0.02);
    EXPECT_EQ(d["keep_worst_head"], nlohmann::json::array({1, 3}));
    EXPECT_DOUBLE_EQ(d["pairs_p_value"].get<double>(), 0.3);
    EXPECT_EQ(d["pairs_worst_head"], nlohmann::json::array({0, 2}));
    EXPECT_DOUBLE_EQ(d["threshold"].get<double>(), 6.25e-8);
}

TEST(Jsonl, InvalidUtf8IsReplacedNotThrown) {
    CaseResult r = failed_case();
    r.reason = "bad \xff byte";
    const auto j = nlohmann::json::parse(json_line(json_record(r)));
    EXPECT_EQ(j["reason"], "bad \xEF\xBF\xBD byte");
}

TEST(Junit, GoldenDocumentWithEscapes) {
    Summary s;
    std::vector<CaseResult> rs{failed_case(), timed_case()};
    for (const auto& r : rs) s.add(r);
    const std::string expected =
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
            "<testsuites name=\"sdpabench\" tests=\"2\" failures=\"1\" errors=\"0\" skipped=\"0\" time=\"0.262500\">\n"
            "  <testsuite name=\"sdpabench\" tests=\"2\" failures=\"1\" errors=\"0\" skipped=\"0\" time=\"0.262500\">\n"
            "    <testcase classname=\"sdpabench.onednn.bwd\" name=\"--dir=bwd b1hq2sq16d16n=a.b-c_d\" time=\"0.012500\">\n"
            "      <failure type=\"FAILED\" message=\"FAILED (dQ: got &quot;NaN&quot;, expected &lt;1 &amp; &apos;x&apos;&gt;&#10;line2) "
            "__REPRO: --dir=bwd b1hq2sq16d16n=a.b-c_d\">FAILED (dQ: got &quot;NaN&quot;, expected &lt;1 &amp; &apos;x&apos;&gt;&#10;line2) "
            "__REPRO: --dir=bwd b1hq2sq16d16n=a.b-c_d</failure>\n"
            "    </testcase>\n"
            "    <testcase classname=\"sdpabench.onednn.fwd_t\" name=\"--mode=P b1hq2sq64d64 #2\" time=\"0.250000\">\n"
            "      <system-out>perf: runs 3 min 1 ms median 2 ms mean 2.3333333333333335 ms max 4 ms compile 12.5 ms 2 GFLOP/s (median)&#10;</system-out>\n"
            "    </testcase>\n"
            "  </testsuite>\n"
            "</testsuites>\n";
    EXPECT_EQ(junit_document(rs, s), expected);
}

TEST(Junit, StatusesMapToFailureErrorSkipped) {
    Summary s;
    std::vector<CaseResult> rs(4);
    const Status st[] = {Status::unimplemented, Status::invalid_arguments, Status::skipped, Status::listed};
    for (int i = 0; i < 4; ++i) {
        rs[i].status = st[i];
        rs[i].reason = "why";
        s.add(rs[i]);
    }
    const std::string x = junit_document(rs, s);
    EXPECT_NE(x.find("errors=\"2\" skipped=\"2\""), std::string::npos);
    EXPECT_NE(x.find("<error type=\"UNIMPLEMENTED\" message=\"UNIMPLEMENTED (why) __REPRO: \">"), std::string::npos);
    EXPECT_NE(x.find("<error type=\"INVALID_ARGUMENTS\""), std::string::npos);
    EXPECT_NE(x.find("<skipped message=\"SKIPPED (why) __REPRO: \"/>"), std::string::npos);
    EXPECT_NE(x.find("<skipped message=\"LISTED (why) __REPRO: \"/>"), std::string::npos);
}

TEST(Junit, PartialJsonlAlongTheWayFinalXmlAtTheEnd) {
    const auto path = temp_path("j.xml");
    const std::string partial = path.string() + ".partial";
    {
        JunitReporter rep(path.string());
        rep.on_case(failed_case());
        EXPECT_EQ(read_lines(partial).size(), 1u);
        EXPECT_FALSE(std::filesystem::exists(path));
        Summary s;
        s.add(failed_case());
        rep.end(s);
    }
    EXPECT_FALSE(std::filesystem::exists(partial));
    const auto lines = read_lines(path);
    std::filesystem::remove(path);
    ASSERT_GE(lines.size(), 3u);
    EXPECT_EQ(lines[0], "<?xml version=\"1.0\" encoding=\"UTF-8\"?>");
}

TEST(Escape, CsvQuotesOnlyWhenNeeded) {
    EXPECT_EQ(csv_field("plain text"), "plain text");
    EXPECT_EQ(csv_field("a,b"), "\"a,b\"");
    EXPECT_EQ(csv_field("say \"hi\""), "\"say \"\"hi\"\"\"");
    EXPECT_EQ(csv_field("two\nlines"), "\"two\nlines\"");
}

TEST(Escape, XmlEntitiesAndInvalidCharacters) {
    EXPECT_EQ(xml_escape("a<b>&\"'"), "a&lt;b&gt;&amp;&quot;&apos;");
    EXPECT_EQ(xml_escape("x\ty\x01z"), "x&#9;y\xEF\xBF\xBDz");
    EXPECT_EQ(xml_escape("caf\xC3\xA9"), "caf\xC3\xA9");  // valid UTF-8 kept
    EXPECT_EQ(xml_escape("\xC3("), "\xEF\xBF\xBD(");      // truncated sequence replaced
}

TEST(Csv, DropoutColumnsCarryTheKnobAndThePValues) {
    CaseResult r = failed_case();
    r.info.dropout = "0.1:7:3";
    r.dropout = DropoutReport{};
    r.dropout->stats.heads = 4;
    r.dropout->stats.keep.p_value = 0.25;
    r.dropout->stats.pairs.p_value = 0.5;
    const std::string row = csv_row(r);
    EXPECT_NE(row.find(",dQ,inf,0.1:7:3,0.25,0.5,"), std::string::npos) << row;
}

TEST(Csv, RowEscapesReasonAndLeavesTimesEmptyWhenUntimed) {
    const std::string row = csv_row(failed_case());
    EXPECT_EQ(row,
            "1,--dir=bwd b1hq2sq16d16n=a.b-c_d,FAILED,,\"dQ: got \"\"NaN\"\", expected <1 & 'x'>\nline2\",--dir=bwd b1hq2sq16d16n=a.b-c_d,onednn,cpu,C,bwd,"
            "f32,none,b1hq2sq16d16,a.b-c_d,12.5,1000,64,,,,,,,,,,dQ,inf,,,"
            // expect_reason, shown_status, timed_out, crashed, checked, the untimed perf fields
            // (peak_tflops and pct_peak among them), minimized_repro, alone_status, the phases,
            // what ran (impl, ref_fallback, ref_parts: none named), the untimed cv and noisy, then
            // the sizes (not set here), attention, cpu_isa, isa, vendor_version, device, impls,
            // mask_tensor, vendor_cpu_util, sample (a full check: empty)
            ",,FAILED,false,false,true,,,,,,,,0,0,0,0,0,0,0,0,0,0,,,,,,,,0,0,0,0,0,0,0,,,,,,,,0,");
    EXPECT_EQ(csv_row(timed_case()),
            "2,--mode=P b1hq2sq64d64 #2,PASSED,,,--mode=P b1hq2sq64d64,onednn,cpu,P,fwd_t,bf16,causal_tl,b1hq2sq64d64,,250,4000000,2000000,3,1,2,"
            "2.3333333333333335,4,12.5,2,4,1,,,,,"
            // ... the phases, peak_tflops and pct_peak (unknown on a CPU), what ran (none named), cv
            // of {1, 2, 4}: sample standard deviation sqrt(7/3) over the mean 7/3, and noisy
            // (timed_case()'s PerfResult leaves noisy to the driver: false)
            ",,PASSED,false,false,false,1,0.002,0.004,0.001,true,,,0,0,0,0,0,0,0,0,0,0,,,,,,0.6546536707079771,false,"
            "0,0,0,0,0,0,0,,,,,,,,0,");
    // Same column count as the header.
    const auto commas = [](const std::string& s) { return std::count(s.begin(), s.end(), ','); };
    EXPECT_EQ(commas(csv_row(timed_case())), commas(csv_header()));
}

// What ran (issue 32): the implementation in the CSV and JSONL, the parts and the bound tensors in
// JSONL, the reference fallback as a field and a count in the summary.
TEST(Reports, WhatRanIsInEveryReport) {
    CaseResult r = timed_case();
    r.impl = {"larger_partition_kernel_t",
        {{"", "matmul", "ref:any", "1x2x64x64:1x2x64x64", 16967.2}, {"", "binary", "ref:any", "1x2x64x64:1x2x64x1", 1.5},
            {"", "eltwise", "jit:avx512_core_bf16", "1x2x64x64", -1}}};
    r.tensors = {{"Q", "bf16", {1, 2, 64, 64}, {8192, 64, 128, 1}}, {"scale", "f32", {}, {}}};
    const std::string row = csv_row(r);
    // impl, ref_fallback, ref_parts, then the timed case's cv and noisy; the parts again as impls
    EXPECT_NE(row.find(",larger_partition_kernel_t,matmul ref:any (1x2x64x64:1x2x64x64),2,0.6546536707079771,false,"),
            std::string::npos) << row;
    EXPECT_NE(row.find(",matmul:ref:any binary:ref:any eltwise:jit:avx512_core_bf16,"), std::string::npos) << row;
    const auto j = nlohmann::json::parse(json_line(json_record(r)));
    EXPECT_EQ(j.at("impl"), "larger_partition_kernel_t");
    EXPECT_EQ(j.at("ref_fallback"), "matmul ref:any (1x2x64x64:1x2x64x64)");
    EXPECT_EQ(j.at("ref_parts"), 2);
    ASSERT_EQ(j.at("impl_parts").size(), 3u);
    EXPECT_EQ(j.at("impl_parts")[0].at("kind"), "matmul");
    EXPECT_EQ(j.at("impl_parts")[0].at("impl"), "ref:any");
    EXPECT_EQ(j.at("impl_parts")[0].at("ms"), 16967.2);
    EXPECT_EQ(j.at("impl_parts")[0].at("reference"), true);
    EXPECT_TRUE(j.at("impl_parts")[2].at("ms").is_null());
    EXPECT_EQ(j.at("impl_parts")[2].at("reference"), false);
    ASSERT_EQ(j.at("tensors").size(), 2u);
    EXPECT_EQ(j.at("tensors")[0].at("dims"), nlohmann::json({1, 2, 64, 64}));
    EXPECT_EQ(j.at("tensors")[0].at("strides"), nlohmann::json({8192, 64, 128, 1}));
    EXPECT_EQ(j.at("tensors")[1].at("dims"), nlohmann::json::array());
    // The summary counts the cases with a fallback; the console names it without -v.
    Summary s;
    s.add(r);
    s.add(timed_case());
    EXPECT_EQ(s.ref_fallbacks, 1u);
    EXPECT_TRUE(summary_line(s).ends_with(" not_applicable:0 ref_fallback:1")) << summary_line(s);
    std::FILE* out = std::tmpfile();
    ConsoleReporter console(out, 0);
    console.on_case(r);
    console.on_case(timed_case());
    std::rewind(out);
    char buf[4096] = {};
    const std::size_t n = std::fread(buf, 1, sizeof buf - 1, out);
    std::fclose(out);
    const std::string text(buf, n);
    EXPECT_NE(text.find("\n    reference fallback: larger_partition_kernel_t ran matmul ref:any (1x2x64x64:1x2x64x64)\n"),
            std::string::npos) << text;
    EXPECT_EQ(text.find("reference fallback", text.find("reference fallback") + 1), std::string::npos) << text;
}

// One table is every report's fields: each result field is a CSV column with the same text, a
// JSONL key in its group with the same value, and a perf-template field.
TEST(ResultFields, PercentOfPeakWhereThePeakIsKnown) {
    CaseResult r = timed_case();  // 4e6 FLOPs in a median of 2 ms: 2 GFLOP/s = 0.002 TFLOP/s
    const ResultField* pct = find_result_field("pct_peak");
    const ResultField* peak = find_result_field("peak_tflops");
    ASSERT_NE(pct, nullptr);
    ASSERT_NE(peak, nullptr);
    EXPECT_TRUE(std::holds_alternative<std::monostate>(pct->get(r)));  // a CPU backend: no peak, no column
    r.perf->peak_tflops = 0.004;
    EXPECT_DOUBLE_EQ(std::get<double>(peak->get(r)), 0.004);
    EXPECT_DOUBLE_EQ(std::get<double>(pct->get(r)), 50.0);
}

TEST(ResultFields, EveryFieldIsInEveryReport) {
    for (const CaseResult& r : {failed_case(), timed_case()}) {
        const nlohmann::json j = json_record(r);
        std::vector<std::string> header, row;
        for (std::size_t a = 0, b; a <= csv_header().size(); a = b + 1) {
            b = csv_header().find(',', a);
            if (b == std::string::npos) b = csv_header().size();
            header.push_back(csv_header().substr(a, b - a));
        }
        std::size_t columns = 0;
        for (const ResultField& f : result_fields()) {
            if (f.column_field) {
                ASSERT_LT(columns, header.size());
                EXPECT_EQ(header[columns++], f.column);
            }
            const nlohmann::json* obj = f.group == FieldGroup::top ? &j
                    : f.group == FieldGroup::perf ? &j.at("perf") : &j.at("phases_ms");
            if (obj->is_null()) {
                EXPECT_TRUE(std::holds_alternative<std::monostate>(f.get(r))) << f.column;
                continue;
            }
            ASSERT_TRUE(obj->contains(f.key)) << f.column;
            const FieldValue v = f.get(r);
            const nlohmann::json& x = obj->at(f.key);
            if (const auto* d = std::get_if<double>(&v)) {
                if (std::isfinite(*d)) EXPECT_EQ(x.get<double>(), *d) << f.column;
                else EXPECT_TRUE(x.is_null() && obj->contains(f.key + "_nonfinite")) << f.column;
            } else if (const auto* t = std::get_if<std::string>(&v)) {
                EXPECT_EQ(x.get<std::string>(), *t) << f.column;
            } else if (std::holds_alternative<std::monostate>(v)) {
                EXPECT_TRUE(x.is_null()) << f.column;
            }
            if (!f.column_field) continue;
            std::string err;
            const auto t = parse_perf_template("%" + f.column + "%", &err);
            ASSERT_TRUE(t.has_value()) << err;
            if (!std::holds_alternative<double>(v)) {
                EXPECT_EQ(render_perf_line(*t, r), csv_text(v)) << f.column;
            }
        }
        EXPECT_EQ(columns, header.size());
    }
}

TEST(Console, TheTotalsLineSumsEachPhaseOverTheRun) {
    CaseResult a, b;
    a.ms = 30;
    a.phases_ms[static_cast<std::size_t>(Phase::fill)] = 10;
    a.phases_ms[static_cast<std::size_t>(Phase::vendor)] = 20;
    b.ms = 10;
    b.phases_ms[static_cast<std::size_t>(Phase::vendor)] = 2;
    b.phases_ms[static_cast<std::size_t>(Phase::compare)] = 8;
    Summary s;
    s.add(a);
    s.add(b);
    EXPECT_EQ(s.ms, 40.0);
    EXPECT_EQ(s.phases_ms[static_cast<std::size_t>(Phase::vendor)], 22.0);
    EXPECT_EQ(phase_totals_line(s), "total: 0.04s; fill: 0.01s (25%); vendor: 0.022s (55%); compare: 0.008s (20%);");
}

TEST(ReportSpec, ParsesFormatAndPath) {
    std::string err;
    const auto s = parse_report_spec("jsonl:out/a:b.jsonl", &err);
    ASSERT_TRUE(s.has_value()) << err;
    EXPECT_EQ(s->format, "jsonl");
    EXPECT_EQ(s->path, "out/a:b.jsonl");
    EXPECT_FALSE(parse_report_spec("xml:a", &err));
    EXPECT_NE(err.find("unknown format 'xml' (accepted: csv|jsonl|junit|sqlite|postgresql)"), std::string::npos) << err;
    EXPECT_FALSE(parse_report_spec("jsonl", &err));
    EXPECT_FALSE(parse_report_spec("csv:", &err));
}

TEST(Progress, LineAndEta) {
    EXPECT_EQ(format_eta(42.9), "0:42");
    EXPECT_EQ(format_eta(3725), "1:02:05");
    EXPECT_EQ(format_eta(-1), "-:--");
    // 2 of 10 done in 10 s: 5 s per case, 8 left -> 40 s.
    EXPECT_EQ(progress_text(2, 10, 1, 1, 10.0, "b1hq2sq64d64", 0), "[2/10] passed 1 failed 1  eta 0:40  b1hq2sq64d64");
    EXPECT_EQ(progress_text(0, 10, 0, 0, 0.0, "abc", 0), "[0/10] passed 0 failed 0  eta -:--  abc");
    EXPECT_EQ(progress_text(2, 10, 1, 1, 10.0, "b1hq2sq64d64", 12), "[2/10] passe");
}

}  // namespace
}  // namespace sdpa
