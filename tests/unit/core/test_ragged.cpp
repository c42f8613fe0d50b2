// Ragged (packed, THD) io tensors (--ragged): the geometry's per-batch offsets and stored rows
// (core/geometry.hpp), the validation rules, packing into and reading from vendor buffers, the
// guarded buffers, the checks that skip the rows a ragged output does not store, and the whole
// pipeline on the reference backend (which runs on real ragged buffers).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "backends/guarded_buffer.hpp"
#include "backends/ref/ref_backend.hpp"
#include "backends/strided_buffer.hpp"
#include "compare/compare.hpp"
#include "core/geometry.hpp"
#include "driver/case.hpp"
#include "driver/case_parser.hpp"
#include "driver/run_case.hpp"
#include "fillers/fill.hpp"

namespace sdpa {
namespace {

using i64 = std::int64_t;
using A4 = std::array<i64, 4>;

/// B = 4 with an empty sequence, one of length 1 and lengths that are not multiples of 8.
Problem ragged(Dir dir = Dir::bwd) {
    Problem p;
    p.dims = Dims{4, 4, 2, 13, 21, 16, 8};
    p.dir = dir;
    p.layout = Layout::bshd;
    p.ragged = true;
    p.seq_len_q = {0, 1, 13, 5};
    p.seq_len_kv = {3, 21, 0, 7};
    return p;
}

TEST(RaggedGeometry, OffsetsPackTheValidRowsTokenMajor) {
    const Problem p = ragged();
    const Geometry g = geometry(p);
    const TensorGeom& q = g.at(Role::Q);
    // Q: H_q * D_qk = 64 elements per token; batches of 0, 1, 13, 5 tokens.
    EXPECT_EQ(q.ragged_rows, (std::vector<i64>{0, 1, 13, 5}));
    EXPECT_EQ(q.ragged_offsets, (std::vector<i64>{0, 0, 64, 64 * 14, 64 * 19}));
    EXPECT_EQ(q.span(), 64 * 19);
    EXPECT_EQ(q.strides[1], 16);  // within a batch: [S, H, D]
    EXPECT_EQ(q.strides[2], 64);
    EXPECT_EQ(q.offset(2, 3, 4, 5), 64 + 3 * 16 + 4 * 64 + 5);
    EXPECT_TRUE(q.present(2, 12));
    EXPECT_FALSE(q.present(0, 0));
    EXPECT_FALSE(q.present(3, 5));
    // K, V and their gradients follow seq_len_kv; O, dO, dQ seq_len_q; stats and the rest are dense.
    EXPECT_EQ(g.at(Role::K).ragged_rows, (std::vector<i64>{3, 21, 0, 7}));
    EXPECT_EQ(g.at(Role::V).ragged_offsets.back(), 2 * 8 * 31);
    EXPECT_EQ(g.at(Role::dV).ragged_offsets, g.at(Role::V).ragged_offsets);
    EXPECT_EQ(g.at(Role::O).ragged_offsets.back(), 4 * 8 * 19);
    EXPECT_EQ(g.at(Role::dQ).ragged_offsets, q.ragged_offsets);
    EXPECT_TRUE(g.at(Role::stats).ragged_offsets.empty());
    EXPECT_TRUE(non_overlapping(g.at(Role::dQ)));
    EXPECT_EQ(validate(p), std::nullopt);
    // coords_of finds the batch of an offset, empty batches skipped.
    EXPECT_EQ(q.coords_of(3 * 16 + 5), (A4{1, 3, 0, 5}));  // batch 0 is empty: batch 1 starts at 0
    EXPECT_EQ(q.coords_of(64 * 14 + 64 + 2), (A4{3, 0, 1, 2}));
}

TEST(RaggedGeometry, RulesNameTheKnob) {
    Problem p = ragged();
    p.seq_len_q.clear();
    p.seq_len_kv.clear();
    EXPECT_NE(validate(p).value_or("").find("ragged rule"), std::string::npos);
    p = ragged();
    p.layout = Layout::bhsd;
    EXPECT_NE(validate(p).value_or("").find("--layout=bshd"), std::string::npos);
    p = ragged();
    p.strides[Role::K] = *parse_tensor_layout("bhsd");
    EXPECT_NE(validate(p).value_or("").find("--strides=K:bhsd"), std::string::npos);
    // Malformed lengths: the geometry stays dense (no out-of-bounds read), validation says why.
    p = ragged();
    p.seq_len_q = {1, 2};
    EXPECT_TRUE(geometry(p).at(Role::Q).ragged_offsets.empty());
    EXPECT_NE(validate(p).value_or("").find("padding rule"), std::string::npos);
}

TEST(RaggedBuffers, PackAndGatherOnlyTheStoredRows) {
    const Problem p = ragged();
    const SdpaInputs in = fill_inputs(p);
    const TensorGeom& k = geometry(p).at(Role::K);
    const std::vector<std::byte> bytes = pack_input(k, in.K);
    EXPECT_EQ(bytes.size(), static_cast<std::size_t>(k.span()) * 4);  // f32: nothing but the valid rows
    const Tensor back = gather(k, bytes.data(), k.span());
    for (i64 b = 0; b < 4; ++b)
        for (i64 h = 0; h < 2; ++h)
            for (i64 j = 0; j < 21; ++j)
                for (i64 d = 0; d < 16; ++d)
                    EXPECT_EQ(back.at(b, h, j, d), k.present(b, j) ? in.K.at(b, h, j, d) : kAbsentRow);
}

TEST(RaggedBuffers, GuardedOutputsCheckOnlyStoredRows) {
    const TensorGeom dq = geometry(ragged()).at(Role::dQ);
    GuardedBuffer buf(dq);
    EXPECT_EQ(buf.size(), static_cast<std::size_t>(dq.span()) * 4);
    EXPECT_EQ(buf.check().unwritten, dq.span());  // every stored element starts as the NaN prefill
    Tensor x(dq.dims, DType::f32, 1.f);
    buf.write(x);
    EXPECT_TRUE(buf.check().clean());
    const Tensor r = buf.read();
    EXPECT_EQ(r.at(1, 0, 0, 0), 1.f);
    EXPECT_EQ(r.at(1, 0, 1, 0), kAbsentRow);  // batch 1 stores one row
}

TEST(RaggedCompare, AbsentRowsAreNotChecked) {
    const Problem p = ragged(Dir::fwd_t);
    const Geometry g = geometry(p);
    const TensorGeom& o = g.at(Role::O);
    Tensor ref(o.dims, DType::f32, 0.f), mag = ref, got = ref;
    for (i64 b = 0; b < 4; ++b)
        for (i64 i = 0; i < p.dims.S_q; ++i)
            if (o.present(b, i)) {
                if (row_fully_masked(p, b, i)) continue;  // batch 2 has no key: its rows stay 0
                ref.at(b, 0, i, 0) = 1.f;
                mag.at(b, 0, i, 0) = 1.f;
                got.at(b, 0, i, 0) = 1.f;
            } else {
                got.at(b, 1, i, 2) = 7.f;  // garbage in a row the tensor does not store
            }
    OutputCheck c = check_output(output_rule(p, Output::O, {}, &o), got, {ref, mag, p.dims.S_kv});
    EXPECT_TRUE(c.pass) << c.reason;
    EXPECT_EQ(c.unchecked, (4 * 13 - 19) * p.dims.H_q * p.dims.D_v);
    got.at(2, 0, 3, 0) = 5.f;  // a stored row still counts
    EXPECT_FALSE(check_output(output_rule(p, Output::O, {}, &o), got, {ref, mag, p.dims.S_kv}).pass);
}

TEST(RaggedPipeline, EveryDirectionPassesOnTheReferenceBackend) {
    RefBackend ref;
    for (const Dir dir : {Dir::fwd_i, Dir::fwd_t, Dir::bwd, Dir::fwd_bwd})
        for (const Mask mask : {Mask::none, Mask::causal_br}) {
            Case c;
            c.prb = ragged(dir);
            c.prb.mask = mask;
            c.backend = "ref";
            const CaseResult r = run_case(c, ref, 0, {}, {});
            EXPECT_EQ(r.status, Status::passed) << repro(c) << ": " << r.reason;
        }
}

TEST(PaddedRowsUnspecified, SkippedByTheChecksAndTheGuards) {
    Problem p = ragged(Dir::fwd_t);
    p.ragged = false;
    p.layout = Layout::bhsd;
    Conventions conv;
    conv.padded_rows_unspecified = true;
    const TensorGeom& o = geometry(p).at(Role::O);
    EXPECT_TRUE(unchecked(p, Output::O, {1, 0, 1, 0}, &o, conv));   // batch 1 has one valid row
    EXPECT_FALSE(unchecked(p, Output::O, {1, 0, 0, 0}, &o, conv));
    EXPECT_TRUE(unchecked(p, Output::stats, {0, 0, 0, 0}, nullptr, conv));  // batch 0 has none
    EXPECT_FALSE(unchecked(p, Output::dQ, {0, 0, 0, 0}, nullptr, conv));   // the gradients are written
    EXPECT_FALSE(unchecked(p, Output::O, {1, 0, 1, 0}, &o, {}));
    // The guards count only the valid rows as unwritten: H_q x D_v x (0 + 1 + 13 + 5).
    GuardedBuffer buf(o);
    buf.set_unspecified_rows(p.seq_len_q);
    EXPECT_EQ(buf.check().unwritten, 4 * 8 * 19);
    Tensor x(o.dims, DType::f32, 1.f);
    buf.write(x);
    buf.poison();
    // A kernel that writes the valid rows only: clean.
    Tensor partial = buf.read();
    for (i64 b = 0; b < 4; ++b)
        for (i64 h = 0; h < 4; ++h)
            for (i64 i = 0; i < p.seq_len_q[static_cast<std::size_t>(b)]; ++i)
                for (i64 d = 0; d < 8; ++d) partial.at(b, h, i, d) = 2.f;
    GuardedBuffer written(o);
    written.set_unspecified_rows(p.seq_len_q);
    TensorGeom valid_rows_only = o;  // write the valid rows through a ragged view of the same buffer
    valid_rows_only.ragged_rows = {0, 1, 13, 5};
    valid_rows_only.ragged_offsets = {0, 0, 0, 0, 0};
    for (i64 b = 0; b < 4; ++b) valid_rows_only.ragged_offsets[static_cast<std::size_t>(b)] = b * o.strides[0];
    valid_rows_only.ragged_offsets[4] = 4 * o.strides[0];
    written.write(partial, &valid_rows_only);
    EXPECT_TRUE(written.check().clean());
    EXPECT_EQ(written.check().unwritten, 0);
}

TEST(RaggedPipeline, NothingStoredIsMistrustedNotPassed) {
    RefBackend ref;
    Case c;
    c.prb = ragged(Dir::bwd);
    c.prb.seq_len_q = {0, 0, 0, 0};
    c.prb.seq_len_kv = {0, 0, 0, 0};
    c.backend = "ref";
    const CaseResult r = run_case(c, ref, 0, {}, {});
    EXPECT_EQ(r.status, Status::mistrusted) << r.reason;
    EXPECT_NE(r.reason.find("nothing checked"), std::string::npos) << r.reason;
    for (const OutputCheck& k : r.checks) {
        EXPECT_EQ(k.unchecked, static_cast<std::int64_t>(geometry(c.prb).at(role_of(k.output)).elements()));
        EXPECT_EQ(k.structural_zeros, 0);  // an unchecked element is not also a structural zero
    }
}

TEST(RaggedRandom, GivenRaggedBringsPaddingAndBshd) {
    const auto entries = parse_cases({"--backend=ref", "--ragged=true", "--random=40"});
    ASSERT_EQ(entries.size(), 40u);
    for (const auto& e : entries) {
        ASSERT_TRUE(e.c) << e.error;
        EXPECT_TRUE(e.c->prb.ragged) << repro(*e.c);
        EXPECT_EQ(validate(e.c->prb), std::nullopt) << repro(*e.c);
    }
}

TEST(RaggedObserved, AbsentRowsAreNotCountedAsWritten) {
    Problem p = ragged(Dir::fwd_t);
    SdpaOutputs out;
    out.O = Tensor(geometry(p).at(Role::O).dims, DType::f32, 0.f);  // absent rows read back as 0
    out.stats = Tensor(geometry(p).at(Role::stats).dims, DType::f32, INFINITY);
    const auto seen = observed_masked_rows(p, out);
    ASSERT_TRUE(seen);
    EXPECT_EQ(seen->find("O past the valid query lengths"), std::string::npos) << *seen;
    p.ragged = false;  // padded, not ragged: those rows exist and are reported
    p.layout = Layout::bhsd;
    out.O = Tensor(geometry(p).at(Role::O).dims, DType::f32, 0.f);
    EXPECT_NE(observed_masked_rows(p, out)->find("O past the valid query lengths: 0 unwritten"), std::string::npos);
}

}  // namespace
}  // namespace sdpa
