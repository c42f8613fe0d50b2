// "Did you mean" (driver/suggest.hpp) and the case parser's answers to unknown knobs and options,
// global options included; benchdnn's --start, --match and --repeats-per-prb (driver/selection.hpp).
#include "driver/suggest.hpp"

#include <regex>

#include <gtest/gtest.h>

#include "driver/case_parser.hpp"
#include "driver/selection.hpp"
#include "driver/knobs.hpp"

namespace sdpa {
namespace {

/// The global options' names as driver/cli.cpp gives them to the parser (a few of them).
const std::vector<std::string> kOptions{"--verbose", "--max-ms-per-case", "--max-ms-per-prb", "--fix-times",
    "--fix-times-per-prb", "--match", "--start", "--impl", "--skip-impl", "--report"};

/// The error of parsing `tokens` (the first one), "" when none.
std::string first_error(const std::vector<std::string>& tokens) {
    for (const auto& e : parse_cases(tokens, kOptions))
        if (!e.c) return e.error;
    return "";
}

TEST(Suggest, EditDistance) {
    EXPECT_EQ(edit_distance("", ""), 0u);
    EXPECT_EQ(edit_distance("mask", "mask"), 0u);
    EXPECT_EQ(edit_distance("maks", "mask"), 1u);  // a swap of neighbours is one edit
    EXPECT_EQ(edit_distance("ca", "abc"), 3u);     // no substring edited twice (Damerau's unrestricted: 2)
    EXPECT_EQ(edit_distance("kitten", "sitting"), 3u);
    EXPECT_EQ(edit_distance("", "abc"), 3u);
    EXPECT_EQ(edit_distance("--dt", "--dir"), 2u);
}

TEST(Suggest, NearestNamesWithinTheLimit) {
    const std::vector<std::string> names{"--mask", "--mask-dt", "--max-ms-per-case", "--dir", "--dt", "--seed"};
    EXPECT_EQ(did_you_mean("--maks", names), (std::vector<std::string>{"--mask"}));
    EXPECT_EQ(did_you_mean("--max-ms", names), (std::vector<std::string>{"--max-ms-per-case"}));  // a prefix
    EXPECT_EQ(did_you_mean("--dirr", names), (std::vector<std::string>{"--dir"}));
    EXPECT_EQ(did_you_mean("--dri", names), (std::vector<std::string>{"--dir"}));  // a swap
    EXPECT_EQ(did_you_mean("--dr", names), (std::vector<std::string>{"--dir", "--dt"}));  // ties: all, in order
    EXPECT_EQ(did_you_mean("--sede", names), (std::vector<std::string>{"--seed"}));
    EXPECT_TRUE(did_you_mean("--completely-different", names).empty());
}

TEST(Suggest, UnknownKnobNamesTheNearestKnobOrOption) {
    std::string e = first_error({"--maks=causal_tl", "b1hq1sq4d4"});
    EXPECT_NE(e.find("unknown knob '--maks' (did you mean --mask? knobs: --dir,"), std::string::npos) << e;
    EXPECT_NE(e.find("global options: see --help"), std::string::npos) << e;
    // A global option misspelt where knobs go is found among the options.
    e = first_error({"--max-ms-per-prob=100", "b1hq1sq4d4"});
    EXPECT_NE(e.find("(did you mean --max-ms-per-prb? knobs:"), std::string::npos) << e;
    e = first_error({"--fix-time=3", "b1hq1sq4d4"});
    EXPECT_NE(e.find("did you mean --fix-times?"), std::string::npos) << e;
    // Single dash: the option with two.
    e = first_error({"-match=bf16", "b1hq1sq4d4"});
    EXPECT_NE(e.find("unknown option '-match=bf16' (the only short option is -v, or -vN; did you mean --match? knobs:"),
            std::string::npos) << e;
    // Too far from every name: no guess.
    e = first_error({"-x", "b1hq1sq4d4"});
    EXPECT_NE(e.find("unknown option '-x' (the only short option is -v, or -vN; knobs: --dir,"), std::string::npos) << e;
}

TEST(Suggest, GlobalOptionInsideAFileIsNamedAsSuch) {
    const std::string path = testing::TempDir() + "global_in_file.cases";
    FILE* f = std::fopen(path.c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fputs("--max-ms-per-prb=100 b1hq1sq4d4\n", f);
    std::fclose(f);
    const std::string e = first_error({"--batch=" + path});
    EXPECT_NE(e.find(":1:1: error: unknown knob '--max-ms-per-prb': --max-ms-per-prb is a global option, given on the "
                     "command line, not in a --batch file"),
            std::string::npos) << e;
}

TEST(Selection, StartAndMatchKeepIndicesOfTheWholeRun) {
    const std::vector<std::string> ids{"--dt=bf16 b1hq1sq8d8", "b1hq1sq8d8", "--dir=bwd --dt=bf16 b1hq1sq16d8",
        "f.cases:3", "--dt=f16 b1hq1sq8d8"};
    const std::vector<std::string> none;
    const std::vector<std::size_t> all{0, 1, 2, 3, 4};
    EXPECT_EQ(select_cases(all, ids, none, 0, ""), all);
    EXPECT_EQ(select_cases(all, ids, none, 3, ""), (std::vector<std::size_t>{3, 4}));
    EXPECT_EQ(select_cases(all, ids, none, 0, "bf16"), (std::vector<std::size_t>{0, 2}));  // found anywhere
    EXPECT_EQ(select_cases(all, ids, none, 1, "bf16|f16"), (std::vector<std::size_t>{2, 4}));
    EXPECT_EQ(select_cases(all, ids, none, 0, "^b1"), (std::vector<std::size_t>{1}));
    EXPECT_EQ(select_cases({1, 3}, ids, none, 0, "sq8"), (std::vector<std::size_t>{1}));  // a shard's part
    EXPECT_THROW(select_cases(all, ids, none, 0, "("), std::regex_error);
}

// Issue 42: --match also searches the canonical form, every knob spelled with its default, so a
// filter on a default value (f32 is --dt=default's type, not in the id) finds its cases.
TEST(Selection, MatchSearchesTheCanonicalFormWithDefaults) {
    auto es = parse_cases({"--dt=f32,bf16 b1hq1sq8d8"});
    ASSERT_EQ(es.size(), 2u);
    std::vector<std::string> ids, canon;
    for (const auto& e : es) {
        ids.push_back(repro(*e.c));
        canon.push_back(canonical(*e.c));
    }
    EXPECT_EQ(ids[0], "b1hq1sq8d8");  // the id leaves the default out
    EXPECT_NE(canon[0].find("--dt=f32 "), std::string::npos) << canon[0];
    EXPECT_NE(canon[0].find("--backend=onednn --mode=C --check=full --cpu-isa=default "), std::string::npos) << canon[0];
    EXPECT_TRUE(canon[0].ends_with(" b1hq1sq8d8")) << canon[0];
    const std::vector<std::size_t> all{0, 1};
    EXPECT_EQ(select_cases(all, ids, canon, 0, "--mask=none"), all);  // a default value: every case
    EXPECT_EQ(select_cases(all, ids, canon, 0, "--dt=bf16"), (std::vector<std::size_t>{1}));
    EXPECT_EQ(select_cases(all, ids, canon, 0, "f32"), (std::vector<std::size_t>{0}));  // issue 42's example
    EXPECT_TRUE(select_cases(all, ids, canon, 0, "nonexistent").empty());
}

TEST(Selection, RepeatsAreCasesOfTheirOwn) {
    auto es = parse_cases({"b1hq1sq4d4", "b1hq1sq8d8"});
    const auto r = repeat_entries(es, 3);
    ASSERT_EQ(r.size(), 6u);
    EXPECT_EQ(r[0].c->prb.dims.S_q, 4);
    EXPECT_EQ(r[2].c->prb.dims.S_q, 4);
    EXPECT_EQ(r[3].c->prb.dims.S_q, 8);
    EXPECT_EQ(repeat_entries(es, 1).size(), 2u);
}

}  // namespace
}  // namespace sdpa
