// core/parse_number.hpp: the one reader of whole-string numbers (the case language, the graph
// rewrites, --shard): what it accepts and how it says why it does not.
#include "core/parse_number.hpp"

#include <gtest/gtest.h>

#include <cstdint>

namespace sdpa {
namespace {

TEST(ParseNumber, WholeStringsOnly) {
    EXPECT_EQ(parse_number<std::int64_t>("42"), 42);
    EXPECT_EQ(parse_number<std::int64_t>("-7"), -7);
    EXPECT_EQ(parse_number<std::uint64_t>("18446744073709551615"), UINT64_MAX);
    EXPECT_EQ(parse_number<float>("0.0625"), 0.0625f);
    EXPECT_EQ(parse_number<double>("1e-3"), 1e-3);
    NumberError e{};
    for (const char* bad : {"", " 1", "1 ", "+1", "1x", "0x10", "1,2"}) {
        EXPECT_FALSE(parse_number<std::int64_t>(bad, &e)) << bad;
        EXPECT_EQ(e, NumberError::malformed) << bad;
    }
    EXPECT_FALSE(parse_number<std::uint64_t>("18446744073709551616", &e));
    EXPECT_EQ(e, NumberError::out_of_range);
    EXPECT_FALSE(parse_number<std::uint64_t>("-1", &e));
    EXPECT_EQ(e, NumberError::malformed);
    EXPECT_FALSE(parse_number<float>("1e40", &e));
    EXPECT_EQ(e, NumberError::out_of_range);
    for (const char* nf : {"inf", "-inf", "nan", "infinity"}) {
        EXPECT_FALSE(parse_number<double>(nf, &e)) << nf;
        EXPECT_EQ(e, NumberError::not_finite) << nf;
    }
    EXPECT_TRUE(parse_number<double>("2", &e));
    EXPECT_EQ(e, NumberError::none);
}

}  // namespace
}  // namespace sdpa
