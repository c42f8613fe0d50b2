// The lists the command line prints from the tables (driver/cli.hpp): --list-statuses and --help's
// statuses from core/status.hpp kStatuses, --list-knobs=json from the knob table, each row once and
// in table order.
#include "driver/cli.hpp"

#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/status.hpp"
#include "driver/knobs.hpp"

namespace sdpa {
namespace {

/// What parse_command_line printed on stdout for `args` (argv[0] added), and its exit code.
struct Printed {
    int exit_code = -1;
    std::string out;
};

Printed printed(std::vector<std::string> args) {
    args.insert(args.begin(), "sdpabench");
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    testing::internal::CaptureStdout();
    const int code = parse_command_line(static_cast<int>(argv.size()), argv.data()).exit_code;
    std::fflush(stdout);
    return {code, testing::internal::GetCapturedStdout()};
}

std::vector<std::string> lines(const std::string& s) {
    std::vector<std::string> out;
    std::istringstream in(s);
    for (std::string l; std::getline(in, l);) out.push_back(l);
    return out;
}

TEST(StatusTable, OneRowPerStatusInEnumOrder) {
    ASSERT_EQ(kStatusNames.size(), kStatuses.size());
    for (std::size_t i = 0; i < kStatuses.size(); ++i) {
        EXPECT_EQ(kStatuses[i].value, static_cast<Status>(i)) << i;
        EXPECT_EQ(kStatusNames[i].value, kStatuses[i].value);
        EXPECT_EQ(kStatusNames[i].name, kStatuses[i].name);
        EXPECT_FALSE(kStatuses[i].what.empty()) << kStatuses[i].name;
    }
    EXPECT_EQ(kStatuses.back().value, Status::executed);  // the enum's last value has a row
    EXPECT_EQ(fmt::format("{}", Status::invalid_arguments), "INVALID_ARGUMENTS");
}

TEST(ListStatuses, JsonIsEveryStatusInTableOrder) {
    const Printed p = printed({"--list-statuses=json"});
    EXPECT_EQ(p.exit_code, 0);
    const auto j = nlohmann::json::parse(p.out);  // throws (fails the test) when it is not JSON
    ASSERT_TRUE(j.is_array());
    ASSERT_EQ(j.size(), kStatuses.size());
    for (std::size_t i = 0; i < kStatuses.size(); ++i) {
        SCOPED_TRACE(std::string(kStatuses[i].name));
        ASSERT_TRUE(j[i].is_object());
        EXPECT_EQ(j[i].size(), 3u);  // name, what, error: what scripts read
        EXPECT_EQ(j[i].at("name"), std::string(kStatuses[i].name));
        EXPECT_EQ(j[i].at("what"), std::string(kStatuses[i].what));
        EXPECT_EQ(j[i].at("error"), is_error(kStatuses[i].value));
    }
    EXPECT_EQ(j[0].at("name"), "PASSED");
    EXPECT_EQ(j[0].at("what"), "checked and right");
    EXPECT_FALSE(j[0].at("error").get<bool>());
    const auto failed = static_cast<std::size_t>(Status::failed);
    EXPECT_EQ(j[failed].at("name"), "FAILED");
    EXPECT_TRUE(j[failed].at("error").get<bool>());
    EXPECT_EQ(status_table_text("json"), p.out);
}

TEST(ListStatuses, TextIsOneLinePerStatusAndTheDefault) {
    const Printed p = printed({"--list-statuses"});
    EXPECT_EQ(p.exit_code, 0);
    EXPECT_EQ(printed({"--list-statuses=text"}).out, p.out);
    const auto rows = lines(p.out);
    ASSERT_EQ(rows.size(), kStatuses.size());
    const std::size_t what_at = rows[0].find(kStatuses[0].what);
    for (std::size_t i = 0; i < rows.size(); ++i) {
        EXPECT_EQ(rows[i].rfind(std::string(kStatuses[i].name) + "  ", 0), 0u) << rows[i];
        EXPECT_EQ(rows[i].find(kStatuses[i].what), what_at) << "one column of meanings: " << rows[i];
    }
    EXPECT_EQ(rows[0], "PASSED             checked and right");
    EXPECT_FALSE(status_table_text("xml"));
}

TEST(ListStatuses, RunsNothingElse) {
    EXPECT_EQ(printed({"--list-statuses=json", "b1hq2sq16d16"}).exit_code, 2);
    EXPECT_EQ(printed({"--list-statuses=yaml"}).exit_code, 2);
    EXPECT_EQ(printed({"--list-statuses=json", "--list-knobs=tsv"}).exit_code, 2);
    EXPECT_EQ(printed({"--list-torch-variants", "--list-statuses"}).exit_code, 2);
}

TEST(Help, ListsEachStatusOnceFromTheTable) {
    const Printed p = printed({"--help"});
    EXPECT_EQ(p.exit_code, 0);
    const auto rows = lines(p.out);
    std::size_t first = 0;
    while (first < rows.size() && !rows[first].starts_with("  Statuses")) ++first;
    ASSERT_LT(first, rows.size()) << "no Statuses section";
    std::size_t end = first + 1;
    while (end < rows.size() && rows[end].starts_with("    ")) ++end;
    ASSERT_EQ(end - first - 1, kStatuses.size());
    for (const StatusRow& s : kStatuses) {
        std::size_t count = 0;
        for (std::size_t i = first + 1; i < end; ++i)
            if (rows[i].starts_with("    " + std::string(s.name) + " ")) {
                ++count;
                EXPECT_NE(rows[i].find(s.what), std::string::npos) << rows[i];
            }
        EXPECT_EQ(count, 1u) << s.name;
    }
    EXPECT_NE(p.out.find("--list-statuses"), std::string::npos);
}

TEST(ListKnobs, JsonIsTheTsvFormsValuesInTableOrder) {
    const Printed p = printed({"--list-knobs=json"});
    EXPECT_EQ(p.exit_code, 0);
    EXPECT_EQ(p.out, knob_table_json());
    const auto j = nlohmann::json::parse(p.out);
    ASSERT_TRUE(j.is_array());
    const auto tsv = lines(*knob_table_text("tsv"));
    ASSERT_EQ(j.size(), knob_table().size());
    ASSERT_EQ(j.size(), tsv.size());
    for (std::size_t k = 0; k < j.size(); ++k) {
        const Knob& row = knob_table()[k];
        SCOPED_TRACE(std::string(row.name));
        const std::string from_json = fmt::format("{}\t{}\t{}", j[k].at("name").get<std::string>(),
                j[k].at("choices").get<std::string>(), j[k].at("default").get<std::string>());
        EXPECT_EQ(from_json, tsv[k]);
        EXPECT_EQ(j[k].at("what"), std::string(row.what));
        EXPECT_EQ(j[k].at("run_knob"), row.run_knob);
        EXPECT_TRUE(j[k].at("scope") == "descriptor" || j[k].at("scope") == "graph" || j[k].at("scope") == "both");
    }
    EXPECT_EQ(j[0], (nlohmann::json{{"name", "dir"}, {"choices", "fwd_i|fwd_t|bwd|fwd_bwd"}, {"default", "fwd_t"},
                         {"what", std::string(knob(KnobId::dir).what)}, {"run_knob", false}, {"scope", "descriptor"}}));
    EXPECT_EQ(j[static_cast<std::size_t>(KnobId::backend)].at("run_knob"), true);
    EXPECT_EQ(j[static_cast<std::size_t>(KnobId::mb)].at("scope"), "graph");
}

}  // namespace
}  // namespace sdpa
