// --random=N (driver/random_cases.hpp): every draw valid, strata balanced, deterministic, repros
// that parse back equal, given knobs respected, conflicts reported per draw.
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "driver/knobs.hpp"
#include "core/flops.hpp"
#include "driver/case_parser.hpp"
#include "driver/random_cases.hpp"

using namespace sdpa;

namespace {

std::vector<Case> cases_of(const std::vector<CaseEntry>& es) {
    std::vector<Case> out;
    for (const auto& e : es) {
        EXPECT_TRUE(e.c.has_value()) << e.error;
        if (e.c) out.push_back(*e.c);
    }
    return out;
}

}  // namespace

TEST(RandomCases, EveryDrawIsValidAndUnderTheCostCap) {
    for (std::uint64_t i = 0; i < 3000; ++i) {
        const Problem p = random_problem(5, 3000, i);
        EXPECT_EQ(validate(p), std::nullopt) << knobs(p) << " " << descriptor(p.dims);
        EXPECT_LE(flops(p), kRandomMaxFlops) << knobs(p) << " " << descriptor(p.dims);
    }
}

TEST(RandomCases, StrataAreBalancedAndRareFormsAppear) {
    const std::uint64_t n = 2000;
    std::map<Mask, int> masks;
    std::map<Dir, int> dirs;
    std::map<std::int64_t, int> groups;
    int s_one = 0, dv_differs = 0, gqa7 = 0, dropout_p0 = 0, dmask = 0, packed = 0, padded = 0, tail = 0, window = 0;
    for (std::uint64_t i = 0; i < n; ++i) {
        const Problem p = random_problem(11, n, i);
        ++masks[p.mask];
        ++dirs[p.dir];
        ++groups[p.dims.H_q / p.dims.H_kv];
        s_one += p.dims.S_q == 1 || p.dims.S_kv == 1;
        dv_differs += p.dims.D_qk != p.dims.D_v;
        gqa7 += p.dims.H_q / p.dims.H_kv == 7;
        dropout_p0 += p.dropout && p.dropout->p == 0.f;
        dmask += p.dmask;
        packed += p.strides.contains(Role::Q) && p.strides.at(Role::Q).kind == TensorLayout::Kind::qkv;
        padded += !p.seq_len_q.empty() || !p.seq_len_kv.empty();
        tail += p.dims.S_kv > 64 && p.dims.S_kv % 64 != 0;
        window += p.mask == Mask::window && p.window_left != p.window_right;
    }
    // The mask and the direction are drawn first and never dropped: exactly n/k each.
    for (const auto& [m, count] : masks) EXPECT_EQ(count, 400) << fmt::format("{}", m);
    for (const auto& [d, count] : dirs) EXPECT_EQ(count, 500) << fmt::format("{}", d);
    EXPECT_EQ(masks.size(), 5u);
    // The GQA ratio survives unless the cost cap drops it.
    EXPECT_EQ(groups.size(), 5u);
    EXPECT_GE(gqa7, 300);
    EXPECT_GE(s_one, 300);
    EXPECT_GE(dv_differs, 800);
    EXPECT_GE(dropout_p0, 300);
    EXPECT_GE(dmask, 25);
    EXPECT_GE(packed, 100);
    EXPECT_GE(padded, 800);
    EXPECT_GE(tail, 200);
    EXPECT_GE(window, 150);
}

TEST(RandomCases, DeterministicAndSeedDependent) {
    for (std::uint64_t i = 0; i < 50; ++i) {
        EXPECT_EQ(random_problem(3, 50, i), random_problem(3, 50, i));
    }
    int same = 0;
    for (std::uint64_t i = 0; i < 50; ++i) same += random_problem(3, 50, i) == random_problem(4, 50, i);
    EXPECT_EQ(same, 0);
    // Strata are a bijection of [0, N): a stratum of k values takes each value N/k times.
    const RandomDraws d(9, 1000);
    std::map<std::uint64_t, int> counts;
    for (std::uint64_t i = 0; i < 1000; ++i) ++counts[d.stratum(i, 42, 8)];
    for (const auto& [v, c] : counts) EXPECT_EQ(c, 125) << v;
}

TEST(RandomCases, ParserReprosParseBackEqual) {
    const auto cs = cases_of(parse_cases({"--backend=ref", "--seed=21", "--random=300"}));
    ASSERT_EQ(cs.size(), 300u);
    std::set<std::string> repros;
    for (const Case& c : cs) {
        repros.insert(repro(c));
        const auto back = parse_cases({repro(c)});
        ASSERT_EQ(back.size(), 1u) << repro(c);
        ASSERT_TRUE(back[0].c) << back[0].error;
        EXPECT_EQ(back[0].c->prb, c.prb) << repro(c);
        EXPECT_EQ(back[0].c->backend, "ref");
    }
    EXPECT_EQ(repros.size(), 300u);  // the fill seed alone makes every repro distinct
    EXPECT_EQ(cs[7].prb, random_problem(21, 300, 7));
}

TEST(RandomCases, GivenKnobsAreKeptAndListsDrawnFrom) {
    const auto cs = cases_of(parse_cases({"--dir=bwd", "--dt=f32,bf16", "--mask=none", "--random=200"}));
    ASSERT_EQ(cs.size(), 200u);
    int bf16 = 0;
    for (const Case& c : cs) {
        EXPECT_EQ(c.prb.dir, Dir::bwd);
        EXPECT_EQ(c.prb.mask, Mask::none);
        EXPECT_NE(c.prb.dt, DType::f16);
        bf16 += c.prb.dt == DType::bf16;
        EXPECT_FALSE(c.prb.dmask);  // dMask needs a bias
    }
    EXPECT_GT(bf16, 60);
    EXPECT_LT(bf16, 140);
    // Run knobs expand: every draw on both backends, the same problem.
    const auto two = cases_of(parse_cases({"--backend=ref,faulty:dq_no_scale", "--random=4"}));
    ASSERT_EQ(two.size(), 8u);
    EXPECT_EQ(two[0].prb, two[1].prb);
    EXPECT_EQ(two[0].backend, "ref");
    EXPECT_EQ(two[1].backend, "faulty:dq_no_scale");
    // --seed lists: N draws per seed.
    EXPECT_EQ(cases_of(parse_cases({"--seed=1,2", "--random=3"})).size(), 6u);
}

TEST(RandomCases, ConflictingGivenKnobsAreOneErrorPerDraw) {
    const auto es = parse_cases({"--dmask=true", "--mask=none", "--random=3"});
    ASSERT_EQ(es.size(), 3u);
    for (const auto& e : es) {
        EXPECT_FALSE(e.c);
        EXPECT_NE(e.error.find("--random=3 (--seed=1): draw"), std::string::npos) << e.error;
        EXPECT_NE(e.error.find("dmask rule"), std::string::npos) << e.error;
    }
    const auto bad = parse_cases({"--random=0"});
    ASSERT_EQ(bad.size(), 1u);
    EXPECT_NE(bad[0].error.find("--random needs a case count from 1 to 1000000"), std::string::npos) << bad[0].error;
    const auto graph = parse_cases({"--mb=2", "--random=2"});
    ASSERT_EQ(graph.size(), 1u);
    EXPECT_NE(graph[0].error.find("--mb=2 rewrites a --case graph; '--random=2' draws problem descriptors"), std::string::npos) << graph[0].error;
    const auto trailing = parse_cases({"--random=2", "--dir=bwd"});
    ASSERT_FALSE(trailing.empty());
    EXPECT_NE(trailing.back().error.find("comes after the last problem"), std::string::npos);
}

// A row's drop hook resets the knob to its default: make_valid() leaves a dropped knob spelled as
// its default, whatever the drawn value was.
TEST(KnobHooks, DropResetsEachDroppableKnobToItsDefault) {
    std::size_t droppable = 0, moved = 0;
    for (const Knob& k : knob_table()) {
        if (k.hooks.drop == 0) continue;
        ++droppable;
        for (std::uint64_t i = 0; i < 200; ++i) {
            Case c;
            c.prb = random_problem(5, 200, i);
            if (k.print(c) != k.def()) ++moved;
            k.reset(c.prb);
            EXPECT_EQ(k.print(c), k.def()) << k.name << " draw " << i;
        }
    }
    EXPECT_EQ(droppable, 15u);  // strides ... fp8-descale: every feature make_valid may drop
    EXPECT_GT(moved, 200u);     // the draws gave most droppable knobs other values than the default
}

// KnobDraw::own(): a stream of each knob's own, apart from the generator's streams and from every
// other knob's, so a knob added with a draw leaves the existing draws as they were.
TEST(KnobHooks, OwnStreamsAreApartFromTheGeneratorsAndEachOther) {
    const RandomDraws r(1, 10);
    std::set<std::uint64_t> seen;
    for (const Knob& k : knob_table())
        for (std::uint64_t sub = 0; sub < 16; ++sub) {
            const std::uint64_t s = KnobDraw{r, 0, k.id}.own(sub);
            EXPECT_GT(s, static_cast<std::uint64_t>(draw_stream::ragged)) << k.name;
            EXPECT_TRUE(seen.insert(s).second) << k.name << " sub " << sub;
        }
}

// The needs hooks: --dmask=true given brings a bias, a backward and no padding to every draw.
TEST(KnobHooks, GivenDmaskBringsItsNeedsToEveryDraw) {
    const std::vector<KnobId> given{KnobId::dmask};
    const RandomDraws r(3, 300);
    for (std::uint64_t i = 0; i < 300; ++i) {
        Problem p = random_problem(3, 300, i);
        p.dmask = true;
        bring_prerequisites(p, given, r, i);
        EXPECT_EQ(p.mask, Mask::bias) << i;
        EXPECT_TRUE(has_backward(p.dir)) << i;
        EXPECT_TRUE(p.seq_len_q.empty() && p.seq_len_kv.empty()) << i;
    }
}
