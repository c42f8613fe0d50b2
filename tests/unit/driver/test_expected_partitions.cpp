// --expected-n-partitions (driver/run_case.cpp prepare_plan): the plan's partition count must be
// the knob's, else FAILED naming both; a backend that does not partition is UNIMPLEMENTED; 0
// checks nothing; fwd_bwd checks both plans. A wrapper of the reference backend reports the
// partition counts.
#include "driver/run_case.hpp"

#include <gtest/gtest.h>

#include <optional>
#include <vector>

#include "backends/ref/ref_backend.hpp"

#include "../test_helpers.hpp"

namespace sdpa {
namespace {

/// A reference plan that says it has `n` partitions (nullopt: does not partition).
class PartitionedPlan final : public Plan {
public:
    PartitionedPlan(std::unique_ptr<Plan> inner, std::optional<std::size_t> n) : inner_(std::move(inner)), n_(n) {}
    void execute() override { inner_->execute(); }
    void poison_outputs() override { inner_->poison_outputs(); }
    SdpaOutputs read_outputs() override { return inner_->read_outputs(); }
    std::optional<std::size_t> partitions() const override { return n_; }
    std::vector<std::string> notes() const override { return {"parted plan"}; }

private:
    std::unique_ptr<Plan> inner_;
    std::optional<std::size_t> n_;
};

/// The reference backend whose forward plans have `fwd` partitions and backward plans `bwd`.
class PartitionedBackend final : public Backend {
public:
    std::optional<std::size_t> fwd = 1, bwd = 1;
    bool partitions = true;  ///< partitions_graphs()
    int prepared = 0;
    std::string_view name() const override { return "parted"; }
    bool partitions_graphs() const override { return partitions; }
    std::string version() const override { return "test"; }
    std::optional<Unsupported> support(const Problem&) const override { return std::nullopt; }
    std::unique_ptr<Plan> prepare(const Problem& p, const SdpaInputs& in) override {
        ++prepared;
        return std::make_unique<PartitionedPlan>(ref_.prepare(p, in), p.dir == Dir::bwd ? bwd : fwd);
    }

private:
    RefBackend ref_;
};

Case make_case(Dir dir, std::int64_t expected) {
    Case c = test::make_case(test::make_problem({1, 2, 2, 8, 8, 8, 8}, dir));
    c.expected_partitions = expected;
    return c;
}

TEST(ExpectedPartitions, SameCountPassesAnotherFailsNamingBoth) {
    PartitionedBackend be;
    be.fwd = 2;
    EXPECT_EQ(run_case(make_case(Dir::fwd_t, 2), be, 0).status, Status::passed);
    const CaseResult r = run_case(make_case(Dir::fwd_t, 1), be, 0);
    EXPECT_EQ(r.status, Status::failed);
    EXPECT_EQ(r.reason, "parted split the fwd_t graph into 2 partition(s), --expected-n-partitions=1");
    EXPECT_TRUE(r.checks.empty());  // nothing was run or checked
    EXPECT_EQ(r.notes, std::vector<std::string>{"parted plan"});  // -v still shows the plan
}

TEST(ExpectedPartitions, ZeroChecksNothing) {
    PartitionedBackend be;
    be.fwd = 7;
    be.bwd = std::nullopt;
    EXPECT_EQ(run_case(make_case(Dir::fwd_t, 0), be, 0).status, Status::passed);
    EXPECT_EQ(run_case(make_case(Dir::bwd, 0), be, 0).status, Status::passed);
}

TEST(ExpectedPartitions, BackendWithoutPartitionsIsUnimplementedBeforeAnything) {
    PartitionedBackend be;
    be.partitions = false;
    const CaseResult r = run_case(make_case(Dir::bwd, 1), be, 0);
    EXPECT_EQ(r.status, Status::unimplemented);
    EXPECT_EQ(r.reason, "--expected-n-partitions=1: backend parted does not partition its graph");
    EXPECT_EQ(be.prepared, 0);
    EXPECT_EQ(r.phases_ms[static_cast<std::size_t>(Phase::fill)], 0.0);  // nothing filled
    RefBackend ref;  // the real reference backend does not partition either
    EXPECT_EQ(run_case(make_case(Dir::fwd_t, 1), ref, 0).status, Status::unimplemented);
}

TEST(ExpectedPartitions, FwdBwdChecksBothPlans) {
    PartitionedBackend be;
    EXPECT_EQ(run_case(make_case(Dir::fwd_bwd, 1), be, 0).status, Status::passed);
    be.bwd = 3;
    const CaseResult r = run_case(make_case(Dir::fwd_bwd, 1), be, 0);
    EXPECT_EQ(r.status, Status::failed);
    EXPECT_EQ(r.reason, "parted split the bwd graph into 3 partition(s), --expected-n-partitions=1");
}

}  // namespace
}  // namespace sdpa
