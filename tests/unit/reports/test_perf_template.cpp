// --perf-template parsing, header and rendering (reports/perf_template.hpp).
#include "reports/perf_template.hpp"

#include <gtest/gtest.h>

namespace sdpa {
namespace {

PerfTemplate parse_ok(std::string_view text) {
    std::string err;
    auto t = parse_perf_template(text, &err);
    EXPECT_TRUE(t.has_value()) << text << ": " << err;
    return t.value_or(PerfTemplate{});
}

std::string parse_error(std::string_view text) {
    std::string err;
    EXPECT_FALSE(parse_perf_template(text, &err).has_value()) << text;
    return err;
}

CaseResult timed_case() {
    CaseResult r;
    r.index = 3;
    r.repro = "--mode=P --dt=bf16 b1hq2sq64d64n=tiny";
    r.info = CaseInfo{.backend = "onednn", .engine = "cpu", .mode = "P", .dir = "bwd", .dt = "bf16",
        .mask = "causal_tl", .prb = "b1hq2sq64d64", .name = "tiny", .dropout = ""};
    r.flops = 4'000'000;
    r.bytes = 2'000'000;
    r.perf = make_perf_result(summarize({1, 2, 4}), 12.5, false, r.flops, r.bytes);
    r.impl = {"larger_partition_kernel_t", {{"", "matmul", "ref:any", "1x2x64x64:1x2x64x64", 3.5},
                                            {"", "binary", "ref:any", "1x2x64x64:1x2x64x1", 0.5}}};
    return r;
}

TEST(PerfTemplate, SplitsLiteralsFieldsAndModifiers) {
    const PerfTemplate t = parse_ok("x %-time%,%time% %+Gflops%%%");
    ASSERT_EQ(t.parts.size(), 7u);
    EXPECT_EQ(std::get<std::string>(t.parts[0]), "x ");
    EXPECT_EQ(std::get<PerfField>(t.parts[1]), (PerfField{"time", PerfStat::min}));
    EXPECT_EQ(std::get<std::string>(t.parts[2]), ",");
    EXPECT_EQ(std::get<PerfField>(t.parts[3]), (PerfField{"time", PerfStat::none}));
    EXPECT_EQ(std::get<std::string>(t.parts[4]), " ");
    EXPECT_EQ(std::get<PerfField>(t.parts[5]), (PerfField{"Gflops", PerfStat::max}));
    EXPECT_EQ(std::get<std::string>(t.parts[6]), "%");
    // "%%" after the last field is a literal percent sign.
    EXPECT_EQ(render_perf_line(parse_ok("%%%dt%%%"), timed_case()), "%bf16%");
}

TEST(PerfTemplate, DefaultIsACsvLineWithAHeader) {
    const PerfTemplate t = parse_ok(kDefaultPerfTemplate);
    // The header names each column with its unit.
    EXPECT_EQ(perf_header(t), "perf,backend,engine,dir,dt,mask,name,prb,min_ms,median_ms,max_ms,GFLOP/s,GFLOP/s@min_ms,"
                              "GB/s,compile_ms,TFLOP/s,impl,ref_fallback");
    // min 1 ms, median 2 ms, max 4 ms; 4e6 FLOPs: 2 GFLOP/s at the median, 4 at the min; 2e6 B / 2 ms = 1 GB/s.
    // What ran last: the kernel, and the matmul that fell back to a reference implementation (the
    // binary one is not flagged: core/implementation.hpp is_flagged_kind).
    EXPECT_EQ(render_perf_line(t, timed_case()),
            "perf,onednn,cpu,bwd,bf16,causal_tl,tiny,b1hq2sq64d64,1,2,4,2,4,1,12.5,0.002,larger_partition_kernel_t,"
            "matmul ref:any (1x2x64x64:1x2x64x64)");
    EXPECT_EQ(perf_header(parse_ok("%-Tflops%,%+Tflops%,%+Gflops%,%-time%,%mtime%,%id%")),
            "TFLOP/s@min_ms,TFLOP/s@max_ms,GFLOP/s@max_ms,min_ms,mean_ms,id");
    EXPECT_EQ(render_perf_line(parse_ok("%-Tflops%,%+Tflops%"), timed_case()), "0.004,0.001");
}

TEST(PerfTemplate, EveryFieldRenders) {
    const PerfTemplate t = parse_ok("%idx%|%status%|%mode%|%repro%|%flops%|%bytes%|%runs%|%0time%|%mtime%|%0Gflops%|%-Gflops%");
    EXPECT_EQ(render_perf_line(t, timed_case()),
            "3|PASSED|P|--mode=P --dt=bf16 b1hq2sq64d64n=tiny|4000000|2000000|3|2|2.33333|2|4");
}

TEST(PerfTemplate, UntimedCaseLeavesTimesEmpty) {
    CaseResult r = timed_case();
    r.perf.reset();
    EXPECT_EQ(render_perf_line(parse_ok("%dt%,%0time%,%Gflops%,%runs%"), r), "bf16,,,");
}

TEST(PerfTemplate, ErrorsNameTheProblem) {
    EXPECT_NE(parse_error("%speed%").find("unknown field '%speed%'"), std::string::npos);
    EXPECT_NE(parse_error("%-dt%").find("'%dt%' takes no modifier"), std::string::npos);
    EXPECT_NE(parse_error("perf,%time").find("unterminated '%' at column 6"), std::string::npos);
    EXPECT_NE(parse_error("%*time%").find("unknown field"), std::string::npos);
}

}  // namespace
}  // namespace sdpa
