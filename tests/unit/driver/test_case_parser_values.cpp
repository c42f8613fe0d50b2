// The case language accepts the fault-injection backends (faulty:KIND), --mode=B and the fill
// families, and their repro lines round-trip.
#include <gtest/gtest.h>

#include "driver/case_parser.hpp"

using namespace sdpa;

TEST(CaseParserValues, FaultyBackendModeBAndFillsRoundTrip) {
    const auto es = parse_cases({"--backend=faulty:stats_log2", "--mode=B", "--fill=lse_underflow,tile_spikes",
            "b1hq2sq8d8"});
    ASSERT_EQ(es.size(), 2u);
    ASSERT_TRUE(es[0].c.has_value()) << es[0].error;
    EXPECT_EQ(es[0].c->backend, "faulty:stats_log2");
    EXPECT_EQ(es[0].c->mode, Mode::B);
    EXPECT_EQ(es[0].c->prb.fill, Fill::lse_underflow);
    EXPECT_EQ(es[1].c->prb.fill, Fill::tile_spikes);
    const std::string line = repro(*es[1].c);
    EXPECT_EQ(line, "--backend=faulty:stats_log2 --mode=B --fill=tile_spikes b1hq2sq8d8");
    std::vector<std::string> tokens;
    for (std::size_t a = 0, b; a < line.size(); a = b + 1) {
        b = line.find(' ', a);
        if (b == std::string::npos) b = line.size();
        tokens.push_back(line.substr(a, b - a));
    }
    const auto again = parse_cases(tokens);
    ASSERT_EQ(again.size(), 1u);
    ASSERT_TRUE(again[0].c.has_value());
    EXPECT_EQ(again[0].c->prb, es[1].c->prb);
    EXPECT_EQ(again[0].c->backend, es[1].c->backend);
}

TEST(CaseParserValues, UnknownFaultAndFillAreRejected) {
    for (const char* bad : {"--backend=faulty:nope", "--fill=spiky"}) {
        const auto es = parse_cases({bad, "b1hq2sq8d8"});
        bool error = false;
        for (const auto& e : es) error |= !e.c.has_value();
        EXPECT_TRUE(error) << bad;
    }
}
