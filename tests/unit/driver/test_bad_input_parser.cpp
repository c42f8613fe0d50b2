// The case parser on bad input: escaped binary bytes, unknown single-dash options,
// knobs after the last problem, empty --batch files, out-of-range numbers, devices as
// --batch files, the per-run case limit. Each error names the token and its position.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "driver/case_parser.hpp"
#include "reports/escape.hpp"

namespace sdpa {
namespace {

namespace fs = std::filesystem;

/// Errors of parsing `tokens`, in order.
std::vector<CaseEntry> errors(const std::vector<std::string>& tokens) {
    std::vector<CaseEntry> out;
    for (auto& e : parse_cases(tokens))
        if (!e.c) out.push_back(e);
    return out;
}

/// Writes `text` to a file in a fresh temp directory and returns its path.
fs::path write_file(const std::string& name, const std::string& text) {
    const fs::path dir = fs::temp_directory_path() / ("sdpabench_bad_input_" + std::to_string(::getpid()));
    fs::create_directories(dir);
    std::ofstream(dir / name, std::ios::binary) << text;
    return dir / name;
}

TEST(BadInput, EscapeForMessage) {
    EXPECT_EQ(escape_for_message("plain 'text' é"), "plain 'text' é");
    EXPECT_EQ(escape_for_message(std::string("a\x01\xff\x1b[b\n", 7)), "a\\x01\\xff\\x1b[b\\n");
}

TEST(BadInput, BinaryGarbageIsEscapedWithPosition) {
    const auto f = write_file("bin.cases", std::string("b1sq4d4 \x01\xfe\x7f\n", 12));
    const auto es = errors({"--batch=" + f.string()});
    ASSERT_EQ(es.size(), 1u);
    EXPECT_EQ(es[0].error,
            fmt::format("{}:1:9: error: bad problem descriptor '\\x01\\xfe\\x7f': unknown key '\\x01\\xfe\\x7f' (accepted: b, hq, hkv, sq, skv, dqk, dv, d, n=)",
                    f.string()));
    EXPECT_FALSE(es[0].usage);
}

TEST(BadInput, SingleDashOptionIsUnknownOption) {
    const auto es = errors({"-x", "b1sq4d4"});
    ASSERT_EQ(es.size(), 1u);
    EXPECT_TRUE(es[0].usage);
    EXPECT_TRUE(es[0].error.starts_with("command line: error: unknown option '-x' (the only short option is -v"))
            << es[0].error;
}

TEST(BadInput, KnobAfterLastProblemIsUsageError) {
    const auto es = errors({"b1sq4d4", "--dt=bf16"});
    ASSERT_EQ(es.size(), 1u);
    EXPECT_TRUE(es[0].usage);
    EXPECT_EQ(es[0].error, "command line: error: '--dt=bf16' comes after the last problem and would apply to "
                           "nothing (knobs apply to the problems, --case and --batch files after them)");
    EXPECT_TRUE(errors({"--dt=bf16", "b1sq4d4"}).empty());
    // A --case file is a target too: a knob after it applies to nothing.
    const auto ce = errors({"--case=graph.json", "--dropout=0.5"});
    ASSERT_FALSE(ce.empty());
    EXPECT_TRUE(ce.back().usage);
    EXPECT_EQ(ce.back().error, "command line: error: '--dropout=0.5' comes after the last problem and would apply to "
                               "nothing (knobs apply to the problems, --case and --batch files after them)");
    // Inside a file, the same rule is an error of that file (not a usage error: the batch goes on).
    const auto f = write_file("trail.cases", "b1sq4d4 --dt=bf16\n");
    const auto fe = errors({"--batch=" + f.string()});
    ASSERT_EQ(fe.size(), 1u);
    EXPECT_FALSE(fe[0].usage);
    EXPECT_NE(fe[0].error.find("trail.cases:1:9: error: '--dt=bf16' comes after the last problem of the file"),
            std::string::npos) << fe[0].error;
}

TEST(BadInput, EmptyBatchFileIsNamed) {
    const auto f = write_file("empty.cases", "# nothing here\n\n");
    const auto es = errors({"--batch=" + f.string()});
    ASSERT_EQ(es.size(), 1u);
    EXPECT_TRUE(es[0].usage);
    EXPECT_EQ(es[0].error,
            fmt::format("command line: error: no problem given: --batch file '{}' holds no problem descriptor", f.string()));
    // Beside other problems it is still a usage error (not silently skipped), and only it is named.
    const auto full = write_file("full.cases", "b1sq4d4\n");
    const auto mixed = errors({"--batch=" + f.string(), "b1sq8d8", "--batch=" + full.string()});
    ASSERT_EQ(mixed.size(), 1u);
    EXPECT_TRUE(mixed[0].usage);
    EXPECT_EQ(mixed[0].error, fmt::format("command line: error: --batch file '{}' holds no problem descriptor", f.string()));
}

TEST(BadInput, OutOfRangeNumbersSaySo) {
    auto es = errors({"--scale=1e40", "b1sq4d4"});
    ASSERT_EQ(es.size(), 2u);  // the value, and the problem after it (not run)
    EXPECT_NE(es[0].error.find("--scale=1e40 is out of the f32 range"), std::string::npos) << es[0].error;
    es = errors({"--scale=-1e-50", "b1sq4d4"});
    ASSERT_EQ(es.size(), 2u);  // the value, and the problem after it (not run)
    EXPECT_NE(es[0].error.find("--scale=-1e-50 is out of the f32 range (|scale| must be at least"), std::string::npos)
            << es[0].error;
    es = errors({"--scale=abc", "b1sq4d4"});
    ASSERT_EQ(es.size(), 2u);  // the value, and the problem after it (not run)
    EXPECT_NE(es[0].error.find("unknown value 'abc' for --scale"), std::string::npos) << es[0].error;
    es = errors({"--seed=18446744073709551616", "b1sq4d4"});
    ASSERT_EQ(es.size(), 2u);  // the value, and the problem after it (not run)
    EXPECT_NE(es[0].error.find("does not fit an unsigned 64-bit integer (at most 18446744073709551615)"),
            std::string::npos)
            << es[0].error;
}

TEST(BadInput, DeviceAsBatchFileIsRefused) {
    const auto es = errors({"--batch=/dev/zero"});
    ASSERT_FALSE(es.empty());
    EXPECT_EQ(es[0].error, "command line: error: cannot open --batch file '/dev/zero'");
}

TEST(BadInput, CaseLimitPerRun) {
    // 1000 x 1000 x 2 = 2,000,000 cases from one descriptor: refused, nothing expanded.
    std::vector<int> values(1000);
    for (int i = 0; i < 1000; ++i) values[static_cast<std::size_t>(i)] = i + 1;
    const std::string seeds = fmt::format("--seed={}", fmt::join(values, ","));
    const std::string scales = fmt::format("--scale={}", fmt::join(values, ","));
    const auto all = parse_cases({seeds, scales, "--dt=f32,bf16", "b1sq1d1"});
    ASSERT_EQ(all.size(), 1u);
    EXPECT_FALSE(all[0].c.has_value());
    EXPECT_NE(all[0].error.find("'b1sq1d1' expands to more than 1000000 cases"), std::string::npos) << all[0].error;
}

TEST(BadInput, CycleNamesTheChain) {
    const auto a = write_file("cyc_a.cases", "--batch=cyc_b.cases\n");
    const auto b = write_file("cyc_b.cases", "b1sq2d2 --batch=cyc_a.cases\n");
    const auto all = parse_cases({"--batch=" + a.string()});
    ASSERT_EQ(all.size(), 2u);  // the case of b, then the cycle error
    EXPECT_TRUE(all[0].c.has_value());
    EXPECT_EQ(all[1].error, fmt::format("{}:1:9: error: --batch cycle: {} -> {} -> {}", b.string(), a.string(),
                                    b.string(), a.string()));
}

}  // namespace
}  // namespace sdpa
