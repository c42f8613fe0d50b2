// --minimize (driver/minimize.hpp): the bisection finds the exact boundary of a known failure
// region, knobs go toward the plainest case, and every faulty kind shrinks from a larger case to
// one no larger than its selftest case (cases/selftest/KIND.cases).
#include <gtest/gtest.h>

#include <fstream>

#include <filesystem>

#include "backends/backend.hpp"
#include "backends/registry.hpp"
#include "backends/faulty/faults.hpp"
#include "core/flops.hpp"
#include "driver/case_parser.hpp"
#include "driver/minimize.hpp"

#include "compare/compare.hpp"
#include "driver/run_case.hpp"

using namespace sdpa;

namespace {

/// A FAILED result whose dQ fails the bound check (what a runner that "finds the bug" returns).
CaseResult failed_dq() {
    CaseResult r;
    r.status = Status::failed;
    r.reason = "dQ: error exceeds the bound at (0,0,3,1): got 1 expected 2";
    OutputCheck dq;
    dq.output = Output::dQ;
    dq.pass = false;
    dq.failure = CheckFailure::bound;
    r.checks.push_back(dq);
    return r;
}

Case parsed(const std::string& line) {
    const auto es = parse_cases({line});
    EXPECT_EQ(es.size(), 1u);
    EXPECT_TRUE(es.at(0).c) << es.at(0).error;
    return *es.at(0).c;
}

}  // namespace

TEST(Minimize, SignatureIsTheFirstFailedCheckOrRule) {
    CaseResult r = failed_dq();
    EXPECT_EQ(failure_signature(r), "dQ:bound");
    OutputCheck dk;
    dk.output = Output::dK;
    dk.pass = false;
    dk.failure = CheckFailure::masked_rows;
    r.checks.push_back(dk);
    EXPECT_TRUE(fails_like(r, "dK:masked_rows"));
    EXPECT_FALSE(fails_like(r, "dV:bound"));
    CaseResult d;
    d.status = Status::failed;
    d.dropout = DropoutReport{};
    d.dropout->failures = {"dropout: the mask for seed 12 equals the mask for seed 13"};
    EXPECT_EQ(failure_signature(d), "dropout:dropout: the mask for seed # equals the mask for seed #");
    CaseResult other;
    other.status = Status::failed;
    other.reason = "run 2 differs from run 1 at 3 element(s), first dQ (0,1,2,3): 1.5e-05 vs -2";
    EXPECT_EQ(failure_signature(other), "case:run # differs from run # at # element(s), first dQ (#,#,#,#): # vs #");
    // Not FAILED, a timeout or a crash: nothing to shrink.
    r.status = Status::mistrusted;
    EXPECT_EQ(failure_signature(r), std::nullopt);
    other.timed_out = true;
    EXPECT_EQ(failure_signature(other), std::nullopt);
}

TEST(Minimize, BisectsEachSizeToTheBoundaryOfTheFailure) {
    // The "bug": dQ is wrong when S_kv >= 65 is not a multiple of 64 and D_qk >= 17, with GQA.
    std::size_t calls = 0;
    const CaseRunner run = [&](const Case& c) {
        ++calls;
        const Dims& d = c.prb.dims;
        const bool bug = d.S_kv >= 65 && d.S_kv % 64 != 0 && d.D_qk >= 17 && d.H_q / d.H_kv >= 2;
        CaseResult r = bug ? failed_dq() : CaseResult{};
        return r;
    };
    const Case start = parsed("--dir=bwd --dt=bf16 --mask=causal_br --fill=normal --seed=7 b4hq16hkv2sq100skv200d64");
    const Minimized m = minimize(start, failed_dq(), run);
    EXPECT_EQ(m.signature, "dQ:bound");
    EXPECT_EQ(repro(m.smallest), "--dir=bwd b1hq2hkv1sq1skv65dqk17dv1");
    EXPECT_EQ(m.runs, calls);
    EXPECT_FALSE(m.hit_limit);
    EXPECT_LT(m.runs, 80u);
    // The run limit stops it with what it has.
    calls = 0;
    const Minimized few = minimize(start, failed_dq(), run, 5);
    EXPECT_TRUE(few.hit_limit);
    EXPECT_EQ(few.runs, 5u);
    EXPECT_EQ(calls, 5u);
    EXPECT_EQ(run(few.smallest).status, Status::failed);
}

TEST(Minimize, PaddingAndExplicitStridesFollowTheSizes) {
    // Fails while a padded batch and the O row gap exist; B and S shrink with them.
    const CaseRunner run = [](const Case& c) {
        const Problem& p = c.prb;
        const bool gap = p.strides.contains(Role::O) && p.strides.at(Role::O).kind == TensorLayout::Kind::strides;
        return (gap && !p.seq_len_kv.empty() && p.dims.S_kv >= 3) ? failed_dq() : CaseResult{};
    };
    const Case start = parsed("--strides=O:6000x1500x60x1 --seq-len-kv=7:9:30 b3hq4sq25skv30d50");
    ASSERT_EQ(validate(start.prb), std::nullopt);
    const Minimized m = minimize(start, failed_dq(), run);
    const Problem& p = m.smallest.prb;
    EXPECT_EQ(p.dims, (Dims{1, 1, 1, 1, 3, 1, 1}));
    EXPECT_EQ(p.seq_len_kv, (std::vector<std::int64_t>{3}));
    // O [1,1,1,1]: the row gap of 10 kept (pitch 1 + 10), the outer strides follow.
    ASSERT_TRUE(p.strides.contains(Role::O));
    EXPECT_EQ(p.strides.at(Role::O).strides, (std::array<std::int64_t, 4>{11, 11, 11, 1}));
    EXPECT_EQ(validate(p), std::nullopt);
}

// Every faulty kind, from a case larger than its selftest cases in every size, shrinks to a case
// that still fails the same way and is no larger (FLOPs and bytes) than its smallest selftest case.
TEST(Minimize, EveryFaultyKindShrinksToNoMoreThanItsSelftestCase) {
    const std::filesystem::path dir = std::filesystem::path(SDPABENCH_SOURCE_DIR) / "cases/selftest";
    for (const auto& kind : kFaultNames) {
        if (!caught_by_checks(kind.value)) continue;  // no bug: nothing to shrink
        const std::string file = (dir / (std::string(kind.name) + ".cases")).string();
        const auto entries = parse_cases({"--backend=faulty:" + std::string(kind.name), "--batch=" + file});
        ASSERT_FALSE(entries.empty()) << file;
        std::int64_t min_flops = INT64_MAX, min_bytes = INT64_MAX;
        for (const auto& e : entries) {
            ASSERT_TRUE(e.c) << e.error;
            min_flops = std::min(min_flops, flops(e.c->prb));
            min_bytes = std::min(min_bytes, bytes_moved(e.c->prb));
        }
        // The start: the first selftest case without explicit strides, grown in B, heads and lengths.
        const CaseEntry* pick = nullptr;
        for (const auto& e : entries) {
            bool numeric = false;
            for (const auto& [role, layout] : e.c->prb.strides) numeric |= layout.kind == TensorLayout::Kind::strides;
            if (!numeric && !pick) pick = &e;
        }
        ASSERT_NE(pick, nullptr) << kind.name;
        Case start = *pick->c;
        Dims& d = start.prb.dims;
        d.B += 1;
        d.H_q *= 2;
        d.H_kv *= 2;
        d.S_q = d.S_q * 2 + 3;
        d.S_kv = d.S_kv * 2 + 5;
        ASSERT_EQ(validate(start.prb), std::nullopt) << kind.name;
        auto be = make_backend(start.backend);
        ASSERT_NE(be, nullptr);
        const CaseRunner run = [&](const Case& c) { return run_case(c, *be, 0); };
        const CaseResult first = run(start);
        ASSERT_EQ(first.status, Status::failed) << kind.name << ": " << repro(start);
        const Minimized m = minimize(start, first, run);
        const CaseResult again = run(m.smallest);
        EXPECT_TRUE(fails_like(again, m.signature)) << kind.name << ": " << repro(m.smallest);
        EXPECT_LE(flops(m.smallest.prb), min_flops) << kind.name << ": " << repro(m.smallest);
        EXPECT_LE(bytes_moved(m.smallest.prb), min_bytes) << kind.name << ": " << repro(m.smallest);
        EXPECT_FALSE(m.hit_limit) << kind.name;
        // Where the start case proves something (no mostly-zero reference), so must the minimized
        // one: a correct kernel PASSES it (not MISTRUSTED).
        const bool trusted = std::none_of(first.checks.begin(), first.checks.end(),
                [](const OutputCheck& c) { return c.zero_fraction > kZeroTrust; });
        if (trusted) {  // on the selftest file's clean backend (scripts/selftest.sh): ref, or test:fp8
            Case on_ref = m.smallest;
            on_ref.backend = "ref";
            std::ifstream in(file);
            for (std::string line; std::getline(in, line);)
                if (line.starts_with("# clean-backend: ")) on_ref.backend = line.substr(17);
            auto ref = make_backend(on_ref.backend);
            EXPECT_EQ(run_case(on_ref, *ref, 0).status, Status::passed) << kind.name << ": " << repro(on_ref);
        }
        std::printf("minimized %-26s %3zu runs, %s: %s\n", std::string(kind.name).c_str(), m.runs, m.signature.c_str(),
                repro(m.smallest).c_str());
    }
}

// A knob's simpler value that breaks a rule is repaired, not refused: --dt=f32 from an fp8 case
// also drops its --fp8-descale (the rows' drop hooks), and a --dmask case whose failure needs
// neither the bias nor dMask loses both when --mask goes to none; what the failure needs stays.
TEST(Minimize, ASimplerValueThatBreaksARuleIsRepaired) {
    const CaseRunner run = [](const Case& c) { return c.prb.dims.D_qk >= 8 ? failed_dq() : CaseResult{}; };
    const Case fp8 = parsed("--backend=ref --dt=e4m3 --fp8-descale=Q:0.5 b1hq1sq4d8");
    const Minimized m = minimize(fp8, run(fp8), run, 200);
    EXPECT_EQ(m.smallest.prb.dt, DType::f32);
    EXPECT_EQ(m.smallest.prb.fp8, Fp8Descales{});
    EXPECT_EQ(m.smallest.prb.dims.D_qk, 8);
    const Case dmask = parsed("--backend=ref --dir=bwd --mask=bias --mask-shape=BxHqxSqxSkv --dmask=true b2hq1sq4d8");
    const Minimized d = minimize(dmask, run(dmask), run, 200);
    EXPECT_EQ(d.smallest.prb.mask, Mask::none);
    EXPECT_FALSE(d.smallest.prb.dmask);
    EXPECT_EQ(d.smallest.prb.dims.B, 1);
    EXPECT_EQ(repro(d.smallest), "--backend=ref --dir=bwd b1hq1sq1dqk8dv1");  // the bias knobs gone
    // The failure needs dMask: the bias and the backward stay.
    const CaseRunner needs_dmask = [](const Case& c) { return c.prb.dmask ? failed_dq() : CaseResult{}; };
    const Minimized k = minimize(dmask, needs_dmask(dmask), needs_dmask, 200);
    EXPECT_TRUE(k.smallest.prb.dmask);
    EXPECT_EQ(k.smallest.prb.mask, Mask::bias);
    EXPECT_EQ(k.smallest.prb.dir, Dir::bwd);
}

// A case check's failure is the same failure whichever case it is a step of: the step tag of a
// fwd_bwd case ("fwd: ") is not part of the signature, so fwd_bwd can shrink to the failing step.
TEST(Minimize, AStepTagIsNotPartOfTheSignature) {
    CaseResult step, alone;
    step.status = alone.status = Status::failed;
    alone.reason = "input Q: 4 element(s) modified by the vendor, first at element offset 0: was -2, now -nan";
    step.reason = step_tag(Dir::fwd_t) + alone.reason;
    EXPECT_EQ(failure_signature(step), failure_signature(alone));
    EXPECT_EQ(without_step_tag(step_tag(Dir::bwd) + "x"), "x");
    EXPECT_EQ(without_step_tag("fwd:x"), "fwd:x");
}
