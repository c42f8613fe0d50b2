// Ranges in the case language (driver/ranges.hpp): START:END[:STEP] in descriptors and in the
// numeric knobs, expanded like comma lists, with an error naming the rule for a bad range.
#include "driver/ranges.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "driver/case_parser.hpp"

namespace sdpa {
namespace {

using V = std::vector<std::string>;

TEST(Ranges, AdditiveAndMultiplicativeSteps) {
    EXPECT_EQ(expand_range("1:4", true, nullptr), (V{"1", "2", "3", "4"}));
    EXPECT_EQ(expand_range("64:256:64", true, nullptr), (V{"64", "128", "192", "256"}));
    EXPECT_EQ(expand_range("64:250:+64", true, nullptr), (V{"64", "128", "192"}));  // END not reached: not included
    EXPECT_EQ(expand_range("512:8192:x2", true, nullptr), (V{"512", "1024", "2048", "4096", "8192"}));
    EXPECT_EQ(expand_range("3:3", true, nullptr), (V{"3"}));
    EXPECT_EQ(expand_range("0.0625:1:x2", false, nullptr), (V{"0.0625", "0.125", "0.25", "0.5", "1"}));
    // Values are START + i STEP, not accumulated: 0.1 + 0.1 + 0.1 would miss 0.3.
    EXPECT_EQ(expand_range("0.1:0.3:0.1", false, nullptr), (V{"0.1", "0.2", "0.3"}));
}

TEST(Ranges, BadRangesNameTheRule) {
    std::string why;
    for (const auto& [text, rule] : std::vector<std::pair<const char*, const char*>>{{"8:4", "END 4 is before START 8"},
             {"4:8:0", "the step must be at least 1"}, {"4:8:x1", "xN with N >= 2"}, {"0:8:x2", "START >= 1"},
             {"a:8", "whole numbers"}, {"1:8:y2", "whole numbers"}, {"1:100000", "more than 4096 values"},
             {"4", "not START:END[:STEP]"}}) {
        why.clear();
        EXPECT_FALSE(expand_range(text, true, &why)) << text;
        EXPECT_NE(why.find(rule), std::string::npos) << text << ": " << why;
        EXPECT_NE(why.find(text), std::string::npos) << why;  // the range itself is named
    }
    // Seeds are unsigned 64-bit: a range near the top works; a negative START is no whole number here.
    EXPECT_EQ(expand_range("18446744073709551614:18446744073709551615", true, nullptr),
            (V{"18446744073709551614", "18446744073709551615"}));
    EXPECT_FALSE(expand_range("-1:2", true, &why));
    EXPECT_NE(why.find("from 0 to 18446744073709551615"), std::string::npos) << why;
    EXPECT_FALSE(expand_range("1:2:-1", false, &why));
    EXPECT_FALSE(expand_range("1:inf", false, &why));
}

TEST(Ranges, DescriptorsExpandEveryRangedKeyInOrder) {
    EXPECT_EQ(expand_descriptor("b1hq32hkv8sq512:2048:x2d128n=llama", nullptr),
            (V{"b1hq32hkv8sq512d128n=llama", "b1hq32hkv8sq1024d128n=llama", "b1hq32hkv8sq2048d128n=llama"}));
    EXPECT_EQ(expand_descriptor("b1:2hq2sq64skv64:128:x2d8", nullptr),
            (V{"b1hq2sq64skv64d8", "b1hq2sq64skv128d8", "b2hq2sq64skv64d8", "b2hq2sq64skv128d8"}));
    EXPECT_EQ(expand_descriptor("b1hq2sq64d8", nullptr), (V{"b1hq2sq64d8"}));
    EXPECT_EQ(expand_descriptor("b1hq2sq6-4d8", nullptr), (V{"b1hq2sq6-4d8"}));  // malformed: parse_descriptor says why
    std::string why;
    EXPECT_FALSE(expand_descriptor("b1hq2sq512:64d8", &why));
    EXPECT_NE(why.find("before START"), std::string::npos) << why;
    EXPECT_FALSE(expand_descriptor("b1hq4sq64:128:x2:3d32", &why));
    EXPECT_EQ(why, "range '64:128:x2:3': more parts than START:END[:STEP]");
}

TEST(Ranges, TheParserExpandsThemLikeCommaLists) {
    const auto e = parse_cases({"--mode=L", "--seed=1:3", "--scale=0.25:0.5:x2", "b1hq2sq16:32:16d8"});
    ASSERT_EQ(e.size(), 3u * 2u * 2u);
    for (const auto& x : e) ASSERT_TRUE(x.c) << x.error;
    EXPECT_EQ(repro(*e.front().c), "--scale=0.25 b1hq2sq16d8");  // --mode=L and the default seed left out
    EXPECT_EQ(repro(*e.back().c), "--scale=0.5 --seed=3 b1hq2sq32d8");
    // A bad range is one error that names the knob, the range and the rule; the problems after it
    // are not run until the knob is given again (issue 42), and a bad descriptor range costs only itself.
    const auto bad = parse_cases({"--seed=5:1", "--seed=1", "b1hq2sq16:8d8", "b1hq2sq16d8"});
    std::vector<std::string> errors;
    std::size_t cases = 0;
    for (const auto& x : bad) {
        if (x.c) ++cases;
        else errors.push_back(x.error);
    }
    EXPECT_EQ(errors, (V{"command line: error: --seed: range '5:1': END 1 is before START 5",
                          "command line: error: bad problem descriptor range '16:8': END 8 is before START 16"}));
    EXPECT_EQ(cases, 1u);
}

}  // namespace
}  // namespace sdpa
