// The P and CP modes in the case language: parsed, kept by --reset, printed in the repro.
#include <gtest/gtest.h>

#include "driver/case_parser.hpp"

namespace sdpa {
namespace {

TEST(Modes, PerformanceModesParseAndReproduce) {
    const auto es = parse_cases({"--mode=P", "b1hq1sq4d8", "--mode=CP", "--dir=bwd", "b1hq1sq4d8", "--reset", "b1hq1sq4d8"});
    ASSERT_EQ(es.size(), 3u);
    ASSERT_TRUE(es[0].c && es[1].c && es[2].c);
    EXPECT_EQ(es[0].c->mode, Mode::P);
    EXPECT_EQ(repro(*es[0].c), "--mode=P b1hq1sq4d8");
    EXPECT_EQ(es[1].c->mode, Mode::CP);
    EXPECT_EQ(repro(*es[1].c), "--mode=CP --dir=bwd b1hq1sq4d8");
    EXPECT_EQ(es[2].c->mode, Mode::CP);  // --reset keeps the run knobs
    EXPECT_EQ(repro(*es[2].c), "--mode=CP b1hq1sq4d8");
}

}  // namespace
}  // namespace sdpa
