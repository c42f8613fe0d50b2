// The knob table (driver/knobs.hpp): every row's printer and parser agree, the repro line and
// knobs() come from it in table order, graph cases name only graph-scope knobs, and
// --list-knobs prints one row per knob.
#include "driver/knobs.hpp"

#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "driver/case_parser.hpp"

namespace sdpa {
namespace {

std::vector<std::string> split(const std::string& s, char sep = ' ') {
    std::vector<std::string> out;
    std::istringstream in(s);
    for (std::string t; std::getline(in, t, sep);)
        if (!t.empty()) out.push_back(t);
    return out;
}

TEST(KnobTable, EveryDefaultParsesBackToItself) {
    std::set<std::string_view> names;
    for (const Knob& k : knob_table()) {
        SCOPED_TRACE(std::string(k.name));
        EXPECT_TRUE(names.insert(k.name).second) << "knob listed twice";
        Case c;
        ASSERT_TRUE(k.apply(k.def(), c)) << "default '" << k.def() << "' refused";
        EXPECT_EQ(k.print(c), k.def());
        EXPECT_FALSE(k.what.empty());
        EXPECT_FALSE(k.choices.empty());
    }
    EXPECT_GE(names.size(), 30u);
}

TEST(KnobTable, EveryIdIsItsRowAndNamesItsKnob) {
    // Code names knobs by KnobId (driver/random_cases.cpp, the parser): row k of the table is
    // kKnobNames[k], and knob(id) finds it, so a renamed knob changes one spelling.
    ASSERT_EQ(knob_table().size(), kKnobNames.size());
    for (std::size_t k = 0; k < kKnobNames.size(); ++k) {
        EXPECT_EQ(knob_table()[k].id, kKnobNames[k].value) << k;
        EXPECT_EQ(knob_table()[k].name, kKnobNames[k].name);
        EXPECT_EQ(&knob(kKnobNames[k].value), &knob_table()[k]);
    }
    EXPECT_EQ(knob(KnobId::seq_len_q).name, "seq-len-q");
    EXPECT_EQ(fmt::format("{}", KnobId::expected_n_partitions), "expected-n-partitions");
}

TEST(KnobTable, ReproNamesEachNonDefaultKnobInTableOrderAndParsesBack) {
    const std::string line =
        "--backend=ref --mode=CP --dir=bwd --dt=bf16 --mask=bias --mask-shape=Bx1x1xSkv --mask-dt=f32 --scale=0.25 "
        "--scale-op=div --fill=normal --seed=7 --seq-len-kv=3:5 --layout=bshd --strides=K:bhds --dropout=0.125:2:3 "
        "b2hq4hkv2sq6skv5dqk16dv8";
    const auto es = parse_cases(split(line));
    ASSERT_EQ(es.size(), 1u);
    ASSERT_TRUE(es[0].c) << es[0].error;
    const std::string r = repro(*es[0].c);
    EXPECT_EQ(r, line);
    // knobs() is the problem part of the same line.
    EXPECT_EQ(knobs(es[0].c->prb) + " b2hq4hkv2sq6skv5dqk16dv8", line.substr(line.find("--dir")));
    // Default values given explicitly are left out.
    const auto d = parse_cases(split("--mode=L --dir=fwd_t --dt=default --mask=none --seed=1 b1hq1sq4d8"));
    ASSERT_TRUE(d[0].c);
    EXPECT_EQ(repro(*d[0].c), "b1hq1sq4d8");
}

TEST(KnobTable, GraphCaseReproNamesGraphScopeKnobsOnly) {
    Case c;
    c.graph_file = "g.json";
    c.prb.mask = Mask::causal_tl;  // from the graph: not a knob of its repro
    c.prb.layout = Layout::bshd;
    c.prb.dt = DType::bf16;
    c.graph_dt = DType::bf16;
    c.mb = 4;
    c.in_shapes = "0:4x16x128x64";
    c.prb.seed = 9;
    EXPECT_EQ(repro(c), "--dt=bf16 --seed=9 --mb=4 --in-shapes=0:4x16x128x64 --case=g.json");
    for (const Knob& k : knob_table()) {
        if (k.scope == Knob::Scope::graph) {
            EXPECT_FALSE(k.applies_to(Case{})) << k.name;
        }
    }
}

TEST(KnobTable, ListKnobsHasOneRowPerKnob) {
    const auto n = knob_table().size();
    const auto md = knob_table_text("md");
    ASSERT_TRUE(md);
    const auto md_lines = split(*md, '\n');
    ASSERT_EQ(md_lines.size(), n + 2);
    EXPECT_EQ(md_lines[2].rfind("| `--dir` | `fwd_i\\|fwd_t\\|bwd\\|fwd_bwd` | `fwd_t` |", 0), 0u) << md_lines[2];
    const auto tsv = knob_table_text("tsv");
    ASSERT_TRUE(tsv);
    const auto rows = split(*tsv, '\n');
    ASSERT_EQ(rows.size(), n);
    EXPECT_EQ(rows[0], "dir\tfwd_i|fwd_t|bwd|fwd_bwd\tfwd_t");
    EXPECT_FALSE(knob_table_text("html"));
}

}  // namespace
}  // namespace sdpa
