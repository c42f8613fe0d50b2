// The case language: knobs, cross products, --batch includes, errors, repro round trips, and
// every case file shipped under cases/.
#include "backends/registry.hpp"
#include "core/geometry.hpp"
#include "driver/case_parser.hpp"
#include "driver/knobs.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#ifndef SDPABENCH_SOURCE_DIR
#error "SDPABENCH_SOURCE_DIR (the project root) must be defined for this test"
#endif

namespace sdpa {
namespace {

namespace fs = std::filesystem;

std::vector<std::string> split(const std::string& s) {
    std::istringstream in(s);
    std::vector<std::string> out;
    for (std::string t; in >> t;) out.push_back(t);
    return out;
}

std::vector<Case> cases_of(const std::vector<CaseEntry>& es) {
    std::vector<Case> out;
    for (const auto& e : es)
        if (e.c) out.push_back(*e.c);
    return out;
}

std::vector<CaseEntry> errors_of(const std::vector<CaseEntry>& es) {
    std::vector<CaseEntry> out;
    for (const auto& e : es)
        if (!e.c) out.push_back(e);
    return out;
}

std::vector<CaseEntry> parse(const std::string& s) { return parse_cases(split(s)); }

/// A fresh directory under the system temp dir, removed at the end of the test.
class TempDir : public ::testing::Test {
protected:
    fs::path dir;

    void SetUp() override {
        const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
        dir = fs::temp_directory_path() /
              fmt::format("sdpabench_case_parser_{}_{}", info->name(), std::random_device{}());
        fs::create_directories(dir);
    }
    void TearDown() override {
        std::error_code ec;
        fs::remove_all(dir, ec);
    }
    /// Writes `text` to dir/rel (creating folders) and returns the full path as a string.
    std::string write(const std::string& rel, const std::string& text) {
        const fs::path p = dir / rel;
        fs::create_directories(p.parent_path());
        std::ofstream(p) << text;
        return p.string();
    }
};

// window:L,R holds a comma; the parser joins comma pieces until the knob accepts one.
TEST(CaseParser, WindowMaskCommaIsNotACrossProduct) {
    const auto es = parse("--mask=causal_tl,window:4,0,window:2,3 b1hq1sq8d8");
    ASSERT_TRUE(errors_of(es).empty()) << errors_of(es)[0].error;
    const auto cs = cases_of(es);
    ASSERT_EQ(cs.size(), 3u);
    EXPECT_EQ(cs[0].prb.mask, Mask::causal_tl);
    EXPECT_EQ(cs[0].prb.window_left, 0);
    EXPECT_EQ(cs[1].prb.mask, Mask::window);
    EXPECT_EQ(cs[1].prb.window_left, 4);
    EXPECT_EQ(cs[1].prb.window_right, 0);
    EXPECT_EQ(cs[2].prb.window_left, 2);
    EXPECT_EQ(cs[2].prb.window_right, 3);
    EXPECT_EQ(repro(cs[2]), "--mask=window:2,3 b1hq1sq8d8");
    const auto back = cases_of(parse(repro(cs[2])));  // the repro round-trips
    ASSERT_EQ(back.size(), 1u);
    EXPECT_EQ(back[0].prb, cs[2].prb);
    // A bad value is one error, and the problem after it is not run (a second error naming it).
    EXPECT_EQ(errors_of(parse("--mask=window:4 b1hq1sq8d8")).size(), 2u);   // both bounds required
    // FlashAttention's -1 (no bound on that side) is taken and spelled back; no other negative.
    const auto unbounded = cases_of(parse("--mask=window:4,-1 b1hq1sq8skv40d8"));
    ASSERT_EQ(unbounded.size(), 1u);
    EXPECT_EQ(unbounded[0].prb.window_right, kWindowUnbounded);
    EXPECT_EQ(repro(unbounded[0]), "--mask=window:4,-1 b1hq1sq8skv40d8");
    EXPECT_FALSE(validate(unbounded[0].prb));
    EXPECT_EQ(visible_keys(unbounded[0].prb, 0, 0), (std::pair<std::int64_t, std::int64_t>{28, 40}));  // to the last key
    EXPECT_EQ(errors_of(parse("--mask=window:-2,0 b1hq1sq8d8")).size(), 2u);
    EXPECT_EQ(errors_of(parse("--mask=window b1hq1sq8d8")).size(), 2u);
}

// --cpu-isa (issue 36): a run knob; oneDNN's avx10 aliases read as the level; the repro carries the
// level, and --reset keeps it; "all" stands for every level this CPU has, lowest first.
TEST(CaseParser, CpuIsaIsARunKnobWithAliases) {
    const auto cs = cases_of(parse("--cpu-isa=avx2,avx10_1_512_amx,default --dir=bwd b1hq1sq8d8"));
    ASSERT_EQ(cs.size(), 3u);
    EXPECT_EQ(cs[0].cpu_isa, CpuIsa::avx2);
    EXPECT_EQ(cs[1].cpu_isa, CpuIsa::avx512_core_amx);
    EXPECT_EQ(cs[2].cpu_isa, CpuIsa::none);
    EXPECT_EQ(repro(cs[1]), "--cpu-isa=avx512_core_amx --dir=bwd b1hq1sq8d8");
    EXPECT_EQ(repro(cs[2]), "--dir=bwd b1hq1sq8d8");
    const auto back = cases_of(parse(repro(cs[0])));
    ASSERT_EQ(back.size(), 1u);
    EXPECT_EQ(back[0].cpu_isa, CpuIsa::avx2);
    const auto kept = cases_of(parse("--cpu-isa=avx2 --dt=bf16 --reset b1hq1sq8d8"));
    ASSERT_EQ(kept.size(), 1u);
    EXPECT_EQ(kept[0].cpu_isa, CpuIsa::avx2);
    const auto bad = errors_of(parse("--cpu-isa=avx512 b1hq1sq8d8"));
    ASSERT_EQ(bad.size(), 2u);  // the value, and the problem after it, not run
    EXPECT_NE(bad[0].error.find("unknown value 'avx512' for --cpu-isa (accepted: default|all|sse41|"), std::string::npos)
            << bad[0].error;
    // The levels nest as oneDNN's bit sets: amx includes bf16 and fp16, avx10_2 does not include amx.
    EXPECT_TRUE(isa_includes(CpuIsa::avx512_core_amx, CpuIsa::avx512_core_bf16));
    EXPECT_TRUE(isa_includes(CpuIsa::avx512_core_amx, CpuIsa::avx512_core_fp16));
    EXPECT_FALSE(isa_includes(CpuIsa::avx512_core_bf16, CpuIsa::avx512_core_fp16));
    EXPECT_FALSE(isa_includes(CpuIsa::avx10_2_512, CpuIsa::avx512_core_amx));
    EXPECT_FALSE(isa_includes(CpuIsa::avx512_core, CpuIsa::avx2_vnni));
    const auto all = cases_of(parse("--cpu-isa=all b1hq1sq8d8"));
    if (const auto best = best_cpu_isa()) {  // a build with oneDNN: every level up to the CPU's best
        ASSERT_FALSE(all.empty());
        EXPECT_EQ(all.front().cpu_isa, CpuIsa::sse41);
        EXPECT_EQ(all.back().cpu_isa, *best);
        for (const Case& c : all) EXPECT_TRUE(isa_includes(*best, c.cpu_isa)) << repro(c);
    }
}

TEST(CaseParser, SeqLenListsRandomLayoutDeterministic) {
    auto cs = cases_of(parse("--seq-len-q=8:3 --seq-len-kv=0:16 --layout=bshd --deterministic=true --dir=fwd_bwd b2hq1sq8skv16d8"));
    ASSERT_EQ(cs.size(), 1u);
    EXPECT_EQ(cs[0].prb.seq_len_q, (std::vector<std::int64_t>{8, 3}));
    EXPECT_EQ(cs[0].prb.seq_len_kv, (std::vector<std::int64_t>{0, 16}));
    EXPECT_EQ(cs[0].prb.layout, Layout::bshd);
    EXPECT_TRUE(cs[0].prb.deterministic);
    EXPECT_EQ(cs[0].prb.dir, Dir::fwd_bwd);
    EXPECT_EQ(repro(cs[0]), "--dir=fwd_bwd --seq-len-q=8:3 --seq-len-kv=0:16 --layout=bshd --deterministic=true b2hq1sq8skv16d8");
    EXPECT_EQ(cases_of(parse(repro(cs[0])))[0].prb, cs[0].prb);
    // random: B lengths in [1, S] drawn from the seed, listed in the repro, reproducible.
    cs = cases_of(parse("--seq-len-q=random --seed=1,2 b5hq1sq64d8 b5hq1sq64d8"));
    ASSERT_EQ(cs.size(), 4u);
    ASSERT_EQ(cs[0].prb.seq_len_q.size(), 5u);
    for (auto n : cs[0].prb.seq_len_q) EXPECT_TRUE(n >= 1 && n <= 64) << n;
    EXPECT_EQ(cs[0].prb.seq_len_q, cs[2].prb.seq_len_q);  // same seed, same draw
    EXPECT_NE(cs[0].prb.seq_len_q, cs[1].prb.seq_len_q);  // another seed, another draw
    EXPECT_EQ(cases_of(parse(repro(cs[1])))[0].prb, cs[1].prb);
    EXPECT_EQ(validate(cs[0].prb), std::nullopt);
    // A list whose length is not B parses but breaks the padding rule.
    cs = cases_of(parse("--seq-len-q=3 b2hq1sq8d8"));
    EXPECT_NE(validate(cs[0].prb)->find("padding rule"), std::string::npos);
    EXPECT_EQ(errors_of(parse("--seq-len-q=3:x b2hq1sq8d8")).size(), 2u);  // and the problem after it
    EXPECT_EQ(errors_of(parse("--deterministic=yes b2hq1sq8d8")).size(), 2u);
}

TEST(CaseParser, CrossProductCountAndOrder) {
    const auto es = parse("--dir=fwd_t,bwd --dt=f32,bf16,f16 b1hq1sq4d8 b2hq2sq8d8");
    ASSERT_TRUE(errors_of(es).empty());
    const auto cs = cases_of(es);
    ASSERT_EQ(cs.size(), 12u);
    // Per descriptor, the first knob varies slowest.
    const Dir dirs[] = {Dir::fwd_t, Dir::fwd_t, Dir::fwd_t, Dir::bwd, Dir::bwd, Dir::bwd};
    const DType dts[] = {DType::f32, DType::bf16, DType::f16, DType::f32, DType::bf16, DType::f16};
    for (int i = 0; i < 12; ++i) {
        EXPECT_EQ(cs[i].prb.dir, dirs[i % 6]) << i;
        EXPECT_EQ(cs[i].prb.dt, dts[i % 6]) << i;
        EXPECT_EQ(cs[i].prb.dims.B, i < 6 ? 1 : 2) << i;
        EXPECT_EQ(cs[i].where, "");  // no file position on the command line
    }
}

TEST(CaseParser, CrossProductOverManyKnobs) {
    const auto cs = cases_of(parse(
        "--mask=none,causal_tl,causal_br --seed=1,2 --backend=ref,onednn --mode=C,L b1hq1sq4d8"));
    ASSERT_EQ(cs.size(), 3u * 2 * 2 * 2);
    EXPECT_EQ(cs[0].prb.mask, Mask::none);
    EXPECT_EQ(cs[0].backend, "ref");
    EXPECT_EQ(cs[1].mode, Mode::L);  // the last knob varies fastest
    EXPECT_EQ(cs[2].backend, "onednn");
    EXPECT_EQ(cs[4].prb.seed, 2u);
    EXPECT_EQ(cs[8].prb.mask, Mask::causal_tl);
    EXPECT_EQ(cs[23].prb.mask, Mask::causal_br);
    EXPECT_EQ(cs[23].prb.seed, 2u);
    EXPECT_EQ(cs[23].backend, "onednn");
    EXPECT_EQ(cs[23].mode, Mode::L);
}

TEST(CaseParser, KnobsApplyOnlyToLaterDescriptors) {
    // Tokens may come one per argument or several per argument.
    const auto cs = cases_of(parse_cases({"b1hq1sq4d8", "--dt=bf16 --dir=bwd", "b1hq1sq4d8"}));
    ASSERT_EQ(cs.size(), 2u);
    EXPECT_EQ(cs[0].prb.dt, DType::f32);
    EXPECT_EQ(cs[0].prb.dir, Dir::fwd_t);
    EXPECT_EQ(cs[1].prb.dt, DType::bf16);
    EXPECT_EQ(cs[1].prb.dir, Dir::bwd);
}

TEST(CaseParser, EveryKnob) {
    const auto cs = cases_of(parse(
        "--dir=bwd --dt=f16 --mask=bias --mask-shape=BxHqxSqxSkv --mask-dt=f32 --scale=0.25 "
        "--scale-op=div --fill=normal --seed=18446744073709551615 --backend=ref --mode=L "
        "b2hq4hkv2sq8skv16dqk32dv16n=x"));
    ASSERT_EQ(cs.size(), 1u);
    const Problem& p = cs[0].prb;
    EXPECT_EQ(p.dims, (Dims{2, 4, 2, 8, 16, 32, 16}));
    EXPECT_EQ(p.name, "x");
    EXPECT_EQ(p.dir, Dir::bwd);
    EXPECT_EQ(p.dt, DType::f16);
    EXPECT_EQ(p.mask, Mask::bias);
    EXPECT_EQ(p.bias_shape, BiasShape::bh);
    EXPECT_EQ(p.mask_dt, DType::f32);
    EXPECT_EQ(p.scale, 0.25f);
    EXPECT_EQ(p.scale_op, ScaleOp::div);
    EXPECT_EQ(p.fill, Fill::normal);
    EXPECT_EQ(p.seed, 18446744073709551615u);
    EXPECT_EQ(cs[0].backend, "ref");
    EXPECT_EQ(cs[0].mode, Mode::L);
}

TEST(CaseParser, DefaultSpellingsAndReset) {
    const auto cs = cases_of(parse(
        "--mask=bias --mask-dt=bf16 --scale=2 b1hq1sq4d8 --mask-dt=default --scale=default b1hq1sq4d8 "
        "--dir=bwd --dt=bf16 --mask=causal_tl --backend=ref --mode=L --seed=9 --fill=normal --reset "
        "b1hq1sq4d8"));
    ASSERT_EQ(cs.size(), 3u);
    EXPECT_EQ(cs[0].prb.mask_dt, DType::bf16);
    EXPECT_EQ(cs[0].prb.scale, 2.f);
    EXPECT_EQ(cs[1].prb.mask_dt, std::nullopt);
    EXPECT_EQ(cs[1].prb.scale, std::nullopt);
    Case def;
    def.prb.dims = cs[2].prb.dims;
    EXPECT_EQ(cs[2].prb, def.prb);
    // --reset restores the problem knobs only: how to run (backend, mode) is kept.
    EXPECT_EQ(cs[2].backend, "ref");
    EXPECT_EQ(cs[2].mode, Mode::L);
}

TEST(CaseParser, BiasShapeIsCanonicalWithoutBias) {
    const auto cs = cases_of(parse("--mask-shape=Bx1xSqxSkv --mask=none,bias b1hq1sq4d8"));
    ASSERT_EQ(cs.size(), 2u);
    EXPECT_EQ(cs[0].prb.bias_shape, BiasShape::one);
    EXPECT_EQ(cs[1].prb.bias_shape, BiasShape::b);
}

TEST(CaseParser, ReproRoundTrip) {
    const auto cs = cases_of(parse(
        "--dir=fwd_i,bwd --dt=f32,bf16 --mask=none,causal_br,bias --mask-shape=1x1xSqxSkv,BxHqxSqxSkv "
        "--scale=default,0.1,3.14159,1e-3 --scale-op=mul,div b2hq8hkv2sq128skv256d64 "
        "--reset --backend=ref --mode=L --fill=normal --seed=0,42 b1hq32hkv8sq4096d128n=llama3-8b "
        "--reset --mask=bias --mask-dt=f32,f16 b3hq2sq5dqk16dv8n=tiny"));
    ASSERT_EQ(cs.size(), 2u * 2 * 3 * 2 * 4 * 2 + 2 + 2);
    for (const Case& c : cs) {
        const std::string r = repro(c);
        const auto back = parse(r);
        ASSERT_EQ(back.size(), 1u) << r;
        ASSERT_TRUE(back[0].c.has_value()) << r << ": " << back[0].error;
        EXPECT_EQ(back[0].c->prb, c.prb) << r;
        EXPECT_EQ(back[0].c->backend, c.backend) << r;
        // A listed case's repro runs it (mode C); every other mode round-trips.
        EXPECT_EQ(back[0].c->mode, c.mode == Mode::L ? Mode::C : c.mode) << r;
        if (c.mode != Mode::L) {
            EXPECT_EQ(repro(*back[0].c), r);
        }
    }
}

TEST(CaseParser, CommandLineErrors) {
    // A bad value costs the problems after it (issue 42), not the run: no usage error.
    auto es = parse("--dt=bf8");
    ASSERT_EQ(es.size(), 1u);
    EXPECT_FALSE(es[0].c.has_value());
    EXPECT_FALSE(es[0].usage);
    EXPECT_EQ(es[0].error, "command line: error: unknown value 'bf8' for --dt (accepted: f32|bf16|f16|e4m3|e5m2|default|ID:DT[+ID:DT...])");

    es = parse("--mask=causal --dir=fwd_t,back b1hq1sq4d4");
    ASSERT_EQ(es.size(), 3u);
    EXPECT_EQ(es[0].error, "command line: error: unknown value 'causal' for --mask (did you mean causal_tl or causal_br? "
                           "accepted: none|causal_tl|causal_br|bias|window:L,R)");
    EXPECT_EQ(es[1].error, "command line: error: unknown value 'back' for --dir (accepted: fwd_i|fwd_t|bwd|fwd_bwd)");
    EXPECT_EQ(es[2].error, "command line: error: 'b1hq1sq4d4' not run: the knob '--dir=fwd_t,back' before it did not parse");
    EXPECT_FALSE(es[2].usage);

    es = parse("--frobnicate=3");
    ASSERT_EQ(es.size(), 1u);
    EXPECT_TRUE(es[0].usage);
    // Every knob of the table, in its order, then the structural words.
    std::string names;
    for (const Knob& k : knob_table()) names += "--" + std::string(k.name) + ", ";
    EXPECT_EQ(es[0].error, "command line: error: unknown knob '--frobnicate' (knobs: " + names +
                                   "--batch, --case, --random, --reset; global options: see --help)");
    EXPECT_NE(es[0].error.find("(knobs: --dir, --dt, --mask, "), std::string::npos);
    es = parse("--dt");  // a knob without its value names the accepted values
    ASSERT_EQ(es.size(), 1u);
    EXPECT_EQ(es[0].error, "command line: error: --dt needs a value (--dt=f32|bf16|f16|e4m3|e5m2|default|ID:DT[+ID:DT...])");

    es = parse("b1hq1d8");  // a bad descriptor costs only its case: no usage error (issue 32)
    ASSERT_EQ(es.size(), 1u);
    EXPECT_FALSE(es[0].usage);
    EXPECT_NE(es[0].error.find("missing sq"), std::string::npos) << es[0].error;
}

TEST(CaseParser, BadValuesLeaveTheKnobUnchanged) {
    const char* bad[] = {"--scale=abc", "--scale=inf", "--scale=nan", "--scale=1e50", "--scale=0.5x",
        "--scale=", "--seed=-1", "--seed=1.5", "--seed=99999999999999999999", "--backend=Ref",
        "--backend=a-b", "--backend=nonexistent", "--backend=", "--mode=Q", "--dir", "--reset=1", "--batch=", "--dt=f32,,bf16",
        "--dt=f32,", "--mask-dt=f64", "--mask-shape=1x1", "--fill=zeros", "--scale-op=add"};
    // In a file the next line's problem runs with the knobs as they were before the bad value.
    const auto path = std::filesystem::temp_directory_path() / "sdpabench_bad_values.cases";
    for (const char* b : bad) {
        std::ofstream(path) << "--dt=bf16\n" << b << "\nb1hq1sq4d8\n";
        const auto es = parse_cases({"--batch=" + path.string()});
        ASSERT_EQ(es.size(), 2u) << b;
        EXPECT_FALSE(es[0].c.has_value()) << b;
        EXPECT_NE(es[0].error.find(":2:1: error: "), std::string::npos) << b << ": " << es[0].error;
        ASSERT_TRUE(es[1].c.has_value()) << b;
        EXPECT_EQ(es[1].c->prb.dt, DType::bf16) << b;
        EXPECT_EQ(es[1].c->prb.scale, std::nullopt) << b;
        EXPECT_EQ(es[1].c->backend, kDefaultBackend) << b;
        // On the command line: a bad value costs the problem after it; a structural error (no
        // value, --reset=1, --batch=) stays a usage error and the problem after it parses.
        const auto cl = parse(std::string("--dt=bf16 ") + b + " b1hq1sq4d8");
        ASSERT_EQ(cl.size(), 2u) << b;
        EXPECT_EQ(cl[0].error.rfind("command line: error: ", 0), 0u) << b;
        if (cl[0].usage) {
            ASSERT_TRUE(cl[1].c.has_value()) << b;
            EXPECT_EQ(cl[1].c->prb.dt, DType::bf16) << b;
        } else {
            EXPECT_FALSE(cl[1].c.has_value()) << b;
            EXPECT_NE(cl[1].error.find("'b1hq1sq4d8' not run: the knob '"), std::string::npos) << b << ": " << cl[1].error;
        }
    }
    std::filesystem::remove(path);
}

TEST(CaseParser, HelpListsEveryKnob) {
    const std::string h = case_language_help();
    EXPECT_GT(std::count(h.begin(), h.end(), '\n'), 15);
    for (const char* s : {"--dir=fwd_i|fwd_t|bwd", "--dt=f32|bf16|f16|e4m3|e5m2|default", "--mask=none|causal_tl|causal_br|bias",
             "--mask-shape=1x1xSqxSkv|Bx1xSqxSkv|BxHqxSqxSkv", "--mask-dt=f32|bf16|f16|default", "--scale=",
             "--scale-op=mul|div", "--fill=exact|normal", "--seed=", "--backend=", "--mode=C|L", "--batch=FILE",
             "--reset", "(default: fwd_t)", "(default: onednn)", "(default: 1)", "b1hq32hkv8sq4096d128"})
        EXPECT_NE(h.find(s), std::string::npos) << s;
}

TEST_F(TempDir, FileCommentsBlankLinesAndWhere) {
    const std::string f = write("a.cases",
        "# header comment\n"
        "\n"
        "--dt=bf16   # trailing comment b9hq9sq9d9\n"
        "\tb1hq1sq4d8 b1hq1sq8d8n=two   \r\n"
        "   # indented comment\n"
        "--dir=bwd b1hq1sq16d8#glued comment\n");
    const auto es = parse_cases({"--batch=" + f});
    ASSERT_TRUE(errors_of(es).empty()) << errors_of(es)[0].error;
    const auto cs = cases_of(es);
    ASSERT_EQ(cs.size(), 3u);
    EXPECT_EQ(cs[0].where, f + ":4:2");  // FILE:LINE:COL of the descriptor
    EXPECT_EQ(cs[1].prb.name, "two");
    EXPECT_EQ(cs[1].where, f + ":4:13");
    EXPECT_EQ(cs[2].where, f + ":6:11");
    EXPECT_EQ(cs[2].prb.dims.S_q, 16);
    EXPECT_EQ(cs[2].prb.dir, Dir::bwd);
    for (const Case& c : cs) EXPECT_EQ(c.prb.dt, DType::bf16);
}

TEST_F(TempDir, ByteOrderMarkIsIgnored) {
    // Editors on Windows start UTF-8 files with EF BB BF: it must not become part of the first knob.
    const std::string f = write("bom.cases", "\xEF\xBB\xBF--dir=bwd b1hq1sq4d8\n");
    const auto es = parse_cases({"--batch=" + f});
    ASSERT_TRUE(errors_of(es).empty()) << errors_of(es)[0].error;
    const auto cs = cases_of(es);
    ASSERT_EQ(cs.size(), 1u);
    EXPECT_EQ(cs[0].prb.dir, Dir::bwd);
    EXPECT_EQ(cs[0].where, f + ":1:11");  // columns count from after the mark
}

TEST_F(TempDir, BadLineInFileCostsOnlyItself) {
    // A bad knob is its error; the problem after it on its line is an error of its own that names
    // the knob (it would run with knobs nobody asked for); the next line runs.
    const std::string f = write("bad.cases", "b1hq1sq4d8\n  --dt=bf8 b1hq1sq5d8\nb1hq1sq6d8\n");
    const auto es = parse_cases({"--batch=" + f});
    ASSERT_EQ(es.size(), 4u);
    ASSERT_TRUE(es[0].c && es[3].c);
    EXPECT_EQ(es[0].c->where, f + ":1:1");
    EXPECT_FALSE(es[1].c.has_value());
    EXPECT_FALSE(es[1].usage);
    EXPECT_EQ(es[1].error, f + ":2:3: error: unknown value 'bf8' for --dt (accepted: f32|bf16|f16|e4m3|e5m2|default|ID:DT[+ID:DT...])");
    EXPECT_FALSE(es[2].c.has_value());
    EXPECT_EQ(es[2].error, f + ":2:12: error: 'b1hq1sq5d8' not run: the knob '--dt=bf8' before it on its line (" + f +
                               ":2:3) did not parse");
    EXPECT_EQ(es[3].c->where, f + ":3:1");

    // A bad descriptor costs only itself: the problems after it on its line run (issue 32).
    const std::string h = write("bad3.cases", "--dir=bwd b1hq8sq64d64 b1hq0sq8d8 b1hq2sq8d8\n");
    const auto hs = parse_cases({"--batch=" + h});
    ASSERT_EQ(hs.size(), 3u);
    ASSERT_TRUE(hs[0].c && hs[2].c);
    EXPECT_EQ(hs[2].c->prb.dims.H_q, 2);
    EXPECT_EQ(hs[2].c->prb.dir, Dir::bwd);
    EXPECT_EQ(hs[1].error, h + ":1:24: error: bad problem descriptor 'b1hq0sq8d8': hq = 0 must be positive");
    // On the command line too, and there it is no usage error: the other problems run.
    const auto cl = parse_cases({"--dir=bwd", "b1hq8sq64d64", "b1hq0sq8d8", "b1hq2sq8d8"});
    ASSERT_EQ(cl.size(), 3u);
    ASSERT_TRUE(cl[0].c && cl[2].c);
    EXPECT_FALSE(cl[1].usage);
    EXPECT_EQ(cl[1].error, "command line: error: bad problem descriptor 'b1hq0sq8d8': hq = 0 must be positive");

    // Line 2 holds only a bad descriptor: 2 cases and 1 error, the error at its column.
    const std::string g = write("bad2.cases", "b1hq1sq4d8\n--dt=bf16 b1hq1d8\nb1hq1sq6d8\n");
    const auto gs = parse_cases({"--batch=" + g});
    ASSERT_EQ(gs.size(), 3u);
    EXPECT_EQ(cases_of(gs).size(), 2u);
    EXPECT_EQ(gs[1].error.rfind(g + ":2:11: error: bad problem descriptor 'b1hq1d8': missing sq", 0), 0u)
        << gs[1].error;
    EXPECT_FALSE(gs[1].usage);
    EXPECT_EQ(gs[2].c->prb.dt, DType::bf16);
}

// benchdnn's line continuation (tests/benchdnn/common.cpp batch()): a token ending in '\' is joined
// with the next token, over line ends and comment lines; a lone '\' joins the tokens either side.
// The joined token is located at its first piece; a case's "where" is its descriptor's first line.
TEST_F(TempDir, LineContinuationJoinsTokensLikeBenchdnn) {
    const std::string f = write("cont.cases",
        "--strides=\\\n"                                      // 1
        "# Q:bhsd,\\\n"                                       // 2: a comment line in between
        "K:bhds+V:bshd,\\\n"                                  // 3
        "Q:bshd\n"                                            // 4
        "b1hq1sq4d8\n"                                        // 5
        "--dt=bf\\\n"                                         // 6: a value split mid-word
        "16 --dir=fwd_t, \\\n"                                // 7: a lone '\' joins 'fwd_t,' and 'bwd'
        "   bwd b1hq1\\\n"                                    // 8
        "\n"                                                  // 9: a blank line in between
        "sq8d8n=joined\n");                                   // 10
    const auto es = parse_cases({"--batch=" + f});
    ASSERT_TRUE(errors_of(es).empty()) << errors_of(es)[0].error;
    const auto cs = cases_of(es);
    ASSERT_EQ(cs.size(), 6u);
    EXPECT_EQ(role_layouts_name(cs[0].prb.strides), "K:bhds+V:bshd");
    EXPECT_EQ(role_layouts_name(cs[1].prb.strides), "Q:bshd");
    EXPECT_EQ(cs[0].where, f + ":5:1");
    EXPECT_EQ(cs[0].prb.dt, DType::f32);
    for (std::size_t i = 2; i < 6; ++i) {
        EXPECT_EQ(cs[i].prb.dt, DType::bf16);
        EXPECT_EQ(cs[i].prb.dims.S_q, 8);
        EXPECT_EQ(cs[i].prb.name, "joined");
        EXPECT_EQ(cs[i].where, f + ":8:8");  // the first piece of the joined token
    }
    EXPECT_EQ(role_layouts_name(cs[2].prb.strides), "K:bhds+V:bshd");
    EXPECT_EQ(role_layouts_name(cs[3].prb.strides), "Q:bshd");
    EXPECT_EQ(cs[3].prb.dir, Dir::fwd_t);  // --dir varies slowest
    EXPECT_EQ(cs[4].prb.dir, Dir::bwd);
}

// A knob error in a continued line makes each problem after it on the logical line (to the end of
// the first physical line that does not continue) an error naming it, located at the first piece of
// the bad token; a '\' at the end of the file, or with no token before it, is an error naming the
// file and line.
TEST_F(TempDir, LineContinuationErrors) {
    const std::string f = write("bad.cases",
        "b1hq1sq4d8\n"                        // 1
        "  --dt=bf\\\n"                       // 2: --dt=bf8, located at 2:3
        "# comment\n"                         // 3
        "8 b1hq1sq5d8 --dir=fwd_t,\\\n"       // 4: not run, named
        "bwd b1hq1sq6d8\n"                    // 5: not run either (the logical line ends here)
        "b1hq1sq7d8 \\\n");                   // 6: the file ends in a continuation
    const auto es = parse_cases({"--batch=" + f});
    ASSERT_EQ(es.size(), 5u);
    ASSERT_TRUE(es[0].c);
    EXPECT_EQ(es[0].c->where, f + ":1:1");
    EXPECT_FALSE(es[1].c.has_value());
    EXPECT_FALSE(es[1].usage);
    EXPECT_EQ(es[1].error, f + ":2:3: error: unknown value 'bf8' for --dt (accepted: f32|bf16|f16|e4m3|e5m2|default|ID:DT[+ID:DT...])");
    EXPECT_EQ(es[2].error, f + ":4:3: error: 'b1hq1sq5d8' not run: the knob '--dt=bf8' before it on its line (" + f +
                               ":2:3) did not parse");
    EXPECT_EQ(es[3].error, f + ":5:5: error: 'b1hq1sq6d8' not run: the knob '--dt=bf8' before it on its line (" + f +
                               ":2:3) did not parse");
    EXPECT_FALSE(es[4].c.has_value());
    EXPECT_EQ(es[4].error,
        f + ":6:12: error: the file ends in a line continuation: nothing follows to be joined with 'b1hq1sq7d8'");

    // A continuation before a last comment line is still at the end of the file; the logical line's
    // earlier tokens ran.
    const std::string g = write("eof.cases", "b1hq1sq4d8 --dt=bf16\\\n# the end\n");
    auto gs = parse_cases({"--batch=" + g});
    ASSERT_EQ(gs.size(), 2u);
    ASSERT_TRUE(gs[0].c);
    EXPECT_EQ(gs[1].error,
        g + ":1:21: error: the file ends in a line continuation: nothing follows to be joined with '--dt=bf16'");

    // A lone '\' first in the file has nothing to continue: an error at it, its logical line dropped.
    const std::string h = write("lone.cases", "\\ b1hq1sq4d8\nb1hq1sq5d8\n");
    gs = parse_cases({"--batch=" + h});
    ASSERT_EQ(gs.size(), 2u);
    EXPECT_EQ(gs[0].error, h + ":1:1: error: a line continuation with no token before it in the file to continue");
    ASSERT_TRUE(gs[1].c);
    EXPECT_EQ(gs[1].c->prb.dims.S_q, 5);
}

// benchdnn's batch files name their cases from the inputs root (complex_fusion/harness_mha_ci holds
// --case=complex_fusion/mha/X.json): a path not found next to the including file is looked for in
// each folder above it; the file next to it wins when both exist.
TEST_F(TempDir, PathsResolveUpwardsLikeBenchdnn) {
    write("inputs/complex_fusion/mha/cases.cases", "b1hq1sq5d4\n");
    const std::string h = write("inputs/complex_fusion/harness", "--dt=bf16 --batch=complex_fusion/mha/cases.cases\n");
    auto es = parse_cases({"--batch=" + h});
    ASSERT_EQ(es.size(), 1u);
    ASSERT_TRUE(es[0].c.has_value()) << es[0].error;
    EXPECT_EQ(es[0].c->prb.dims.S_q, 5);
    EXPECT_EQ(es[0].c->prb.dt, DType::bf16);
    // The nearer file wins.
    write("inputs/complex_fusion/complex_fusion/mha/cases.cases", "b1hq1sq7d4\n");
    es = parse_cases({"--batch=" + h});
    ASSERT_EQ(es.size(), 1u);
    ASSERT_TRUE(es[0].c.has_value()) << es[0].error;
    EXPECT_EQ(es[0].c->prb.dims.S_q, 7);
    // A --case file found nowhere lists every place tried, nearest first.
    const std::string g = write("inputs/complex_fusion/graphs", "--case=complex_fusion/mha/none.json\n");
    es = parse_cases({"--batch=" + g});
    ASSERT_EQ(es.size(), 1u);
    const std::string near = (dir / "inputs/complex_fusion/complex_fusion/mha/none.json").string();
    const std::string root = (dir / "inputs/complex_fusion/mha/none.json").string();
    EXPECT_NE(es[0].error.find("cannot open --case file 'complex_fusion/mha/none.json' (tried, relative to the including "
                               "file and each folder above it: '" + near + "', '" + root + "', "), std::string::npos)
            << es[0].error;
}

TEST_F(TempDir, BatchRelativePathsAndKnobScoping) {
    write("a.cases", "--dt=bf16\n--batch=sub/b.cases\nb1hq1sq2d2n=after\n");
    const std::string b = write("sub/b.cases", "--dir=bwd\nb1hq1sq1d1n=inner\n--batch=c.cases\n");
    const std::string c = write("sub/c.cases", "--reset --fill=normal\nb1hq1sq3d3n=c\n");
    const auto es = parse_cases({"--mask=causal_tl", "--batch=" + (dir / "a.cases").string(), "b1hq1sq4d4n=cmd"});
    ASSERT_TRUE(errors_of(es).empty()) << errors_of(es)[0].error;
    const auto cs = cases_of(es);
    ASSERT_EQ(cs.size(), 4u);
    EXPECT_EQ(cs[0].prb.name, "inner");  // inherits the includers' knobs
    EXPECT_EQ(cs[0].prb.dt, DType::bf16);
    EXPECT_EQ(cs[0].prb.dir, Dir::bwd);
    EXPECT_EQ(cs[0].prb.mask, Mask::causal_tl);
    EXPECT_EQ(cs[0].where, b + ":2:1");
    EXPECT_EQ(cs[1].prb.name, "c");      // --reset inside c.cases
    EXPECT_EQ(cs[1].prb.dt, DType::f32);
    EXPECT_EQ(cs[1].prb.mask, Mask::none);
    EXPECT_EQ(cs[1].prb.fill, Fill::normal);
    EXPECT_EQ(cs[1].where, c + ":2:1");
    EXPECT_EQ(cs[2].prb.name, "after");  // b's --dir and c's --reset ended with their files
    EXPECT_EQ(cs[2].prb.dir, Dir::fwd_t);
    EXPECT_EQ(cs[2].prb.dt, DType::bf16);
    EXPECT_EQ(cs[2].prb.mask, Mask::causal_tl);
    EXPECT_EQ(cs[2].prb.fill, Fill::exact);
    EXPECT_EQ(cs[3].prb.name, "cmd");    // a's --dt ended with a
    EXPECT_EQ(cs[3].prb.dt, DType::f32);
    EXPECT_EQ(cs[3].prb.mask, Mask::causal_tl);
}

TEST_F(TempDir, CommandLineBatchIsRelativeToTheCurrentDirectory) {
    write("x/y.cases", "--batch=z.cases\n");
    write("x/z.cases", "b1hq1sq4d8n=z\n");
    const fs::path old = fs::current_path();
    fs::current_path(dir);
    const auto es = parse_cases({"--batch=x/y.cases"});
    fs::current_path(old);
    ASSERT_EQ(es.size(), 1u);
    ASSERT_TRUE(es[0].c.has_value()) << es[0].error;
    EXPECT_EQ(es[0].c->prb.name, "z");
    EXPECT_EQ(es[0].c->where, "x/z.cases:1:1");
}

TEST_F(TempDir, MissingFile) {
    const std::string missing = (dir / "nope.cases").string();
    auto es = parse_cases({"--batch=" + missing, "b1hq1sq4d8"});
    ASSERT_EQ(es.size(), 2u);
    EXPECT_TRUE(es[0].usage);
    EXPECT_EQ(es[0].error, "command line: error: cannot open --batch file '" + missing + "'");
    EXPECT_TRUE(es[1].c.has_value());

    const std::string a = write("a.cases", "b1hq1sq1d1\n  --batch=nope.cases b1hq1sq2d2\nb1hq1sq3d3\n");
    es = parse_cases({"--batch=" + a});
    ASSERT_EQ(es.size(), 4u);
    EXPECT_FALSE(es[1].usage);  // an error inside a file is a file error
    // Looked for next to a.cases, then in each folder above it (benchdnn's inputs-root convention).
    std::string tried;
    for (fs::path d = dir; ; d = d.parent_path()) {
        tried += fmt::format("{}'{}'", tried.empty() ? "" : ", ", (d / "nope.cases").string());
        if (!d.has_relative_path()) break;
    }
    EXPECT_EQ(es[1].error, a + ":2:3: error: cannot open --batch file 'nope.cases' (tried, relative to the including "
                               "file and each folder above it: " + tried + ") (include chain: " + a + " -> " + missing + ")");
    ASSERT_TRUE(es[2].c.has_value());  // the bad --batch costs only itself: the rest of line 2 runs
    EXPECT_EQ(es[2].c->prb.dims.S_q, 2);
    ASSERT_TRUE(es[3].c.has_value());
    EXPECT_EQ(es[3].c->prb.dims.S_q, 3);

    // A directory is not a case file.
    es = parse_cases({"--batch=" + dir.string()});
    ASSERT_EQ(es.size(), 1u);
    EXPECT_FALSE(es[0].c.has_value());
}

TEST_F(TempDir, CycleIsOneErrorNamingTheChain) {
    const std::string a = write("a.cases", "b1hq1sq1d1\n--batch=b.cases\nb1hq1sq2d2\n");
    const std::string b = write("b.cases", "--batch=./a.cases\nb1hq1sq3d3\n");
    const auto es = parse_cases({"--batch=" + a});
    ASSERT_EQ(es.size(), 4u);
    EXPECT_EQ(es[0].c->prb.dims.S_q, 1);
    EXPECT_FALSE(es[1].c.has_value());
    EXPECT_FALSE(es[1].usage);
    EXPECT_EQ(es[1].error, b + ":1:1: error: --batch cycle: " + a + " -> " + b + " -> " + a);
    EXPECT_EQ(es[2].c->prb.dims.S_q, 3);
    EXPECT_EQ(es[3].c->prb.dims.S_q, 2);

    const std::string self = write("self.cases", "--batch=self.cases\n");
    const auto ss = parse_cases({"--batch=" + self});
    ASSERT_EQ(ss.size(), 1u);
    EXPECT_EQ(ss[0].error, self + ":1:1: error: --batch cycle: " + self + " -> " + self);

    // Including the same file twice (not nested) is not a cycle.
    const std::string twice = write("twice.cases", "--batch=b2.cases --batch=b2.cases\n");
    write("b2.cases", "b1hq1sq4d8\n");
    const auto ts = parse_cases({"--batch=" + twice});
    EXPECT_EQ(cases_of(ts).size(), 2u);
    EXPECT_TRUE(errors_of(ts).empty());
}

/// Every shipped case file parses without errors and every problem passes validate().
TEST(CaseFiles, AllParseAndValidate) {
    const fs::path root = fs::path(SDPABENCH_SOURCE_DIR) / "cases";
    ASSERT_TRUE(fs::is_directory(root)) << root;
    int files = 0;
    for (const auto& entry : fs::recursive_directory_iterator(root)) {
        if (!entry.is_regular_file() || entry.path().extension() != ".cases") continue;
        ++files;
        const auto es = parse_cases({"--batch=" + entry.path().string()});
        for (const auto& e : errors_of(es)) ADD_FAILURE() << e.error;
        const auto cs = cases_of(es);
        EXPECT_FALSE(cs.empty()) << entry.path();
        for (const Case& c : cs)
            if (const auto err = validate(c.prb)) ADD_FAILURE() << c.where << ": " << repro(c) << ": " << *err;
    }
    EXPECT_GE(files, 21);  // smoke + 10 short model files + 10 full model files
}

/// The CI smoke set covers the matrix it promises and stays small enough for 2 CPU cores.
TEST(CaseFiles, SmokeCoverageAndSize) {
    const fs::path f = fs::path(SDPABENCH_SOURCE_DIR) / "cases/ci/smoke.cases";
    const auto cs = cases_of(parse_cases({"--batch=" + f.string()}));
    EXPECT_GE(cs.size(), 150u);
    EXPECT_LE(cs.size(), 450u);
    std::set<std::tuple<DType, Dir, Mask>> combos;
    // Strided forms, each wanted on fwd_t and bwd for f32 and bf16.
    std::map<std::string, std::set<std::pair<Dir, DType>>> strided;
    std::set<BiasShape> shapes;
    std::set<std::pair<BiasShape, DType>> dmask;  // --dmask=true backward: every shape, every io type
    bool gqa = false, mha = false, sq_lt = false, sq_gt = false, dqk_ne_dv = false, mask_dt = false, fwd_i = false;
    std::set<std::int64_t> lengths;
    for (const Case& c : cs) {
        const Dims& d = c.prb.dims;
        EXPECT_LE(std::max(d.S_q, d.S_kv), 128) << repro(c);
        EXPECT_LE(std::max(d.D_qk, d.D_v), 64) << repro(c);
        EXPECT_LE(d.B * d.H_q, 8) << repro(c);
        // The core matrix; window masks, padding and fwd_bwd are extra lines on top of it.
        if (c.prb.dir != Dir::fwd_i && c.prb.dir != Dir::fwd_bwd && c.prb.mask != Mask::window)
            combos.insert({c.prb.dt, c.prb.dir, c.prb.mask});
        if (c.prb.mask == Mask::bias) shapes.insert(c.prb.bias_shape);
        if (c.prb.dmask && c.prb.dir == Dir::bwd) dmask.insert({c.prb.bias_shape, c.prb.dt});
        gqa |= d.H_kv > 1 && d.H_kv < d.H_q;
        mha |= d.H_kv == d.H_q && d.H_q > 1;
        sq_lt |= d.S_q < d.S_kv;
        sq_gt |= d.S_q > d.S_kv;
        dqk_ne_dv |= d.D_qk != d.D_v;
        mask_dt |= c.prb.mask_dt == DType::f32;
        fwd_i |= c.prb.dir == Dir::fwd_i;
        lengths.insert(d.S_q);
        lengths.insert(d.S_kv);
        const Geometry g = geometry(c.prb);
        auto mark = [&](const char* what, bool yes) {
            if (yes) strided[what].insert({c.prb.dir, c.prb.dt});
        };
        mark("bshd views", c.prb.layout == Layout::bshd);
        mark("packed qkv", c.prb.strides.count(Role::Q) && c.prb.strides.at(Role::Q).kind == TensorLayout::Kind::qkv);
        mark("dO != O", g.has(Role::dO) && g.at(Role::dO).strides != g.at(Role::O).strides);
        mark("stats strides", g.has(Role::stats) && !g.at(Role::stats).dense());
        mark("stride-0 K", g.at(Role::K).strides[0] == 0 && d.B > 1);
    }
    for (const char* what : {"bshd views", "packed qkv", "stats strides", "stride-0 K"})
        EXPECT_EQ(strided[what].size(), 4u) << what;  // {fwd_t, bwd} x {f32, bf16}
    EXPECT_EQ(strided["dO != O"].size(), 2u);        // bwd only, f32 and bf16
    EXPECT_EQ(combos.size(), 3u * 2 * 4);  // {f32,bf16,f16} x {fwd_t,bwd} x every mask
    EXPECT_EQ(shapes.size(), kBiasShapeNames.size());  // all 8 broadcast shapes
    EXPECT_EQ(dmask.size(), kBiasShapeNames.size() * 3);  // and their dMask in f32, bf16 and f16
    EXPECT_TRUE(gqa && mha && sq_lt && sq_gt && dqk_ne_dv && mask_dt && fwd_i);
    for (std::int64_t s : {1, 17, 113}) EXPECT_TRUE(lengths.count(s)) << s;
}

}  // namespace
}  // namespace sdpa
