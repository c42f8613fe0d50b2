// fp8 (--dt=e4m3|e5m2): the two formats' conversions (core/dtype.hpp), the per-tensor descale
// model and its knob (core/fp8.hpp), fills that stay on the scaled grid, the reference's
// emulation of cuDNN's fp8 graph (P and the scaled dS rounded onto their grids, amax) against a
// naive f64 computation, codes in the vendor buffers, and the checks' saturation rule.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "backends/guarded_buffer.hpp"
#include "backends/registry.hpp"
#include "backends/strided_buffer.hpp"
#include "compare/compare.hpp"
#include "core/dtype.hpp"
#include "core/fp8.hpp"
#include "core/geometry.hpp"
#include "driver/case.hpp"
#include "driver/case_parser.hpp"
#include "driver/run_case.hpp"
#include "fillers/fill.hpp"
#include "ref/sdpa_ref.hpp"

namespace sdpa {
namespace {

using i64 = std::int64_t;

TEST(Fp8Format, KnownValuesAndLimits) {
    EXPECT_EQ(size_of(DType::e4m3), 1u);
    EXPECT_EQ(max_finite(DType::e4m3), 448.0);
    EXPECT_EQ(max_finite(DType::e5m2), 57344.0);
    EXPECT_EQ(f32_to_fp8_bits(DType::e4m3, 448.f), 0x7E);    // 0.1111.110
    EXPECT_EQ(f32_to_fp8_bits(DType::e4m3, 1.f), 0x38);      // 0.0111.000
    EXPECT_EQ(f32_to_fp8_bits(DType::e4m3, -2.f), 0xC0);     // 1.1000.000
    EXPECT_EQ(f32_to_fp8_bits(DType::e4m3, 0x1p-9f), 0x01);  // the smallest subnormal
    EXPECT_EQ(f32_to_fp8_bits(DType::e5m2, 57344.f), 0x7B);  // 0.11110.11
    EXPECT_EQ(f32_to_fp8_bits(DType::e5m2, 1.f), 0x3C);      // 0.01111.00
    EXPECT_EQ(f32_to_fp8_bits(DType::e5m2, 0x1p-16f), 0x01);
    EXPECT_EQ(fp8_bits_to_f32(DType::e4m3, 0x7E), 448.f);
    EXPECT_EQ(fp8_bits_to_f32(DType::e4m3, 0x08), 0x1p-6f);  // the smallest normal
    EXPECT_TRUE(std::isnan(fp8_bits_to_f32(DType::e4m3, 0x7F)));
    EXPECT_TRUE(std::isnan(fp8_bits_to_f32(DType::e4m3, 0xFF)));  // the NaN prefill byte
    EXPECT_EQ(fp8_bits_to_f32(DType::e5m2, 0x7C), std::numeric_limits<float>::infinity());
    EXPECT_TRUE(std::isnan(fp8_bits_to_f32(DType::e5m2, 0xFF)));
}

TEST(Fp8Format, EveryCodeRoundTrips) {
    for (DType dt : {DType::e4m3, DType::e5m2})
        for (int b = 0; b < 256; ++b) {
            const float v = fp8_bits_to_f32(dt, static_cast<std::uint8_t>(b));
            if (std::isnan(v) || std::isinf(v)) continue;
            EXPECT_EQ(f32_to_fp8_bits(dt, v), b) << format_as(dt) << " code " << b << " value " << v;
            EXPECT_EQ(round_to(dt, v), v);
        }
}

TEST(Fp8Format, RoundsToNearestEvenAndSaturates) {
    // e4m3 between 1 and 2 steps by 1/8: 1.0625 is a tie between 1 (even) and 1.125.
    EXPECT_EQ(round_to(DType::e4m3, 1.0625f), 1.f);
    EXPECT_EQ(round_to(DType::e4m3, 1.1875f), 1.25f);  // tie between 1.125 (odd) and 1.25 (even)
    EXPECT_EQ(round_to(DType::e4m3, 1.07f), 1.125f);
    EXPECT_EQ(round_to(DType::e5m2, 1.125f), 1.f);     // e5m2 steps by 1/4: tie to even
    // Subnormal steps: e4m3 2^-9, ties to even.
    EXPECT_EQ(round_to(DType::e4m3, 1.5f * 0x1p-9f), 2 * 0x1p-9f);
    EXPECT_EQ(round_to(DType::e4m3, 0.5f * 0x1p-9f), 0.f);
    // satfinite: beyond the largest finite value (infinity too) gives it, with the sign.
    EXPECT_EQ(round_to(DType::e4m3, 1000.f), 448.f);
    EXPECT_EQ(round_to(DType::e4m3, -std::numeric_limits<float>::infinity()), -448.f);
    EXPECT_EQ(round_to(DType::e5m2, 1e6f), 57344.f);
    EXPECT_TRUE(std::isnan(round_to(DType::e4m3, std::numeric_limits<float>::quiet_NaN())));
    EXPECT_EQ(unit_roundoff(DType::e4m3), 0x1p-4);
    EXPECT_EQ(unit_roundoff(DType::e5m2), 0x1p-3);
}

TEST(Fp8Descales, DefaultsAreDistinctNeitherUnitNorReciprocalInPairs) {
    const Fp8Descales d;
    for (std::size_t a = 0; a < kFp8TensorCount; ++a) {
        EXPECT_NE(d.v[a], 1.f) << a;
        for (std::size_t b = a + 1; b < kFp8TensorCount; ++b) {
            EXPECT_NE(static_cast<double>(d.v[a]) * d.v[b], 1.0) << a << " " << b;
            EXPECT_NE(d.v[a], d.v[b]) << a << " " << b;  // a swap of two scales shows
        }
    }
    // P <= 1 fits e4m3 at the default descale_S: 1 / descale_S < 448.
    EXPECT_LT(1.0 / d.of(Fp8Tensor::S), 448.0);
}

TEST(Fp8Descales, KnobRoundTripsAndRejectsBadValues) {
    std::string why;
    const auto d = parse_fp8_descales("O:0.0625+S:0.001+dP:3", &why);
    ASSERT_TRUE(d) << why;
    EXPECT_EQ(d->of(Fp8Tensor::O), 0.0625f);
    EXPECT_EQ(d->of(Fp8Tensor::dP), 3.f);
    EXPECT_EQ(d->of(Fp8Tensor::Q), Fp8Descales{}.of(Fp8Tensor::Q));
    EXPECT_EQ(fp8_descales_name(*d), "O:0.0625+S:0.001+dP:3");
    EXPECT_EQ(parse_fp8_descales(fp8_descales_name(*d)), d);
    EXPECT_EQ(fp8_descales_name(Fp8Descales{}), "");
    EXPECT_EQ(parse_fp8_descales("default"), Fp8Descales{});
    // Large and small exponents round-trip (the name drops the '+' of "1e+20": '+' separates items).
    const auto big = parse_fp8_descales("Q:1e20+K:1e-30");
    ASSERT_TRUE(big);
    EXPECT_EQ(fp8_descales_name(*big), "Q:1e20+K:1e-30");
    EXPECT_EQ(parse_fp8_descales(fp8_descales_name(*big)), big);
    why.clear();
    EXPECT_FALSE(parse_fp8_descales("Q:2+Q:3", &why));
    EXPECT_EQ(why, "Q is given twice");
    EXPECT_FALSE(parse_fp8_descales("Q:1e40", &why));
    EXPECT_NE(why.find("out of the f32 range"), std::string::npos) << why;
    for (const char* bad : {"O", "X:1", "O:0", "O:-1", "O:nan", "O:1e-40", "O:1+", "O:abc"}) {
        why.clear();
        EXPECT_FALSE(parse_fp8_descales(bad, &why)) << bad;
        EXPECT_FALSE(why.empty()) << bad;
    }
}

TEST(Fp8Descales, RoundScaledIsTheScaledGrid) {
    EXPECT_EQ(round_scaled(DType::e4m3, 1.f, 0.75f), 0.75f * 1.375f);  // 1/0.75 = 1.33 -> 1.375 (step 1/8)
    EXPECT_EQ(round_scaled(DType::e4m3, 1000.f, 0.5f), 224.f);          // saturates at 448 x 0.5
    EXPECT_EQ(round_scaled(DType::bf16, 1.f / 3, 1.f), round_to(DType::bf16, 1.f / 3));
}

Problem fp8_problem(DType dt, Dir dir, i64 B, i64 Hq, i64 Hkv, i64 Sq, i64 Skv, i64 D) {
    Problem p;
    p.dims = Dims{B, Hq, Hkv, Sq, Skv, D, D};
    p.dt = dt;
    p.dir = dir;
    return p;
}

TEST(Fp8Geometry, IoRolesCarryTheirDescalesAndAmaxIsAnOutput) {
    Problem p = fp8_problem(DType::e4m3, Dir::bwd, 1, 2, 1, 8, 8, 16);
    p.fp8.of(Fp8Tensor::dK) = 0.5f;
    const Geometry g = geometry(p);
    EXPECT_EQ(g.at(Role::Q).type, ElemType::e4m3);
    EXPECT_EQ(g.at(Role::Q).descale, 0.75f);
    EXPECT_EQ(g.at(Role::dK).descale, 0.5f);
    EXPECT_EQ(g.at(Role::O).descale, 3.f / 64);
    EXPECT_EQ(g.at(Role::stats).descale, 1.f);  // stats stay f32
    EXPECT_EQ(g.at(Role::stats).type, ElemType::f32);
    ASSERT_TRUE(g.has(Role::amax));
    EXPECT_EQ(g.at(Role::amax).dims, (std::array<i64, 4>{1, 1, 1, 4}));
    EXPECT_TRUE(g.at(Role::amax).output);
    p.dir = Dir::fwd_t;
    EXPECT_EQ(geometry(p).at(Role::amax).dims[3], 2);
    p.dt = DType::bf16;
    p.fp8 = {};
    EXPECT_FALSE(geometry(p).has(Role::amax));
    EXPECT_EQ(geometry(p).at(Role::Q).descale, 1.f);
    // The scale and mask tensors stay f32 under fp8 io.
    p.dt = DType::e5m2;
    EXPECT_EQ(scale_dtype(p), DType::f32);
    EXPECT_EQ(mask_dtype(p), DType::f32);
}

TEST(Fp8Buffers, CodesAreValuesOverDescale) {
    const Problem p = fp8_problem(DType::e4m3, Dir::fwd_t, 1, 1, 1, 4, 4, 8);
    const Geometry g = geometry(p);
    const SdpaInputs in = fill_inputs(p);
    const TensorGeom& q = g.at(Role::Q);
    const std::vector<std::byte> bytes = pack_input(q, in.Q);
    ASSERT_EQ(bytes.size(), static_cast<std::size_t>(q.elements()));
    for (std::size_t e = 0; e < in.Q.size(); ++e) {
        const float code = fp8_bits_to_f32(DType::e4m3, static_cast<std::uint8_t>(bytes[e]));
        EXPECT_EQ(code * q.descale, in.Q.data[e]) << e;   // exact: the fill's values are codes x descale
        EXPECT_EQ(round_to(DType::e4m3, code), code);
    }
    EXPECT_EQ(gather(q, bytes.data(), q.span()).data, in.Q.data);
    // An output buffer: a value written is read back as its scaled-grid rounding.
    GuardedBuffer o(g.at(Role::O));
    Tensor x(g.at(Role::O).dims, DType::e4m3, 0.1f);
    o.write(x);
    EXPECT_EQ(o.read().data[0], round_scaled(DType::e4m3, 0.1f, 3.f / 64));
    EXPECT_TRUE(o.check().clean());
}

TEST(Fp8Fill, EveryFamilyStaysOnTheScaledGrid) {
    for (DType dt : {DType::e4m3, DType::e5m2})
        for (const auto& f : kFillNames) {
            Problem p = fp8_problem(dt, Dir::bwd, 1, 2, 1, 70, 130, 16);
            p.fill = f.value;
            const SdpaInputs in = fill_inputs(p);
            const Geometry g = geometry(p);
            for (const Role r : {Role::Q, Role::K, Role::V, Role::dO}) {
                const float d = g.at(r).descale;
                for (const float x : in.of(r)->data) {
                    ASSERT_TRUE(std::isfinite(x)) << f.name;
                    ASSERT_EQ(round_scaled(dt, x, d), x) << format_as(dt) << " " << f.name << " " << format_as(r);
                }
            }
        }
}

/// The f64 forward of one fp8 problem with cuDNN's quantisation of P: O_i = sum_j q(P_ij) V_j,
/// q = round_scaled(dt, ., descale_S); also the largest P.
struct NaiveFwd {
    std::vector<double> O;
    double pmax = 0, omax = 0;
};
NaiveFwd naive_fp8_forward(const Problem& p, const SdpaInputs& in) {
    const Dims& d = p.dims;
    NaiveFwd r;
    r.O.assign(static_cast<std::size_t>(d.B * d.H_q * d.S_q * d.D_v), 0.0);
    const double v = scale_tensor_value(p);
    for (i64 b = 0; b < d.B; ++b)
        for (i64 h = 0; h < d.H_q; ++h)
            for (i64 i = 0; i < d.S_q; ++i) {
                std::vector<double> s(static_cast<std::size_t>(d.S_kv));
                double m = -INFINITY;
                for (i64 j = 0; j < d.S_kv; ++j) {
                    double dot = 0;
                    for (i64 k = 0; k < d.D_qk; ++k) dot += double(in.Q.at(b, h, i, k)) * in.K.at(b, h / (d.H_q / d.H_kv), j, k);
                    s[j] = static_cast<float>(static_cast<float>(dot) * static_cast<float>(v));
                    m = std::max(m, s[j]);
                }
                double l = 0;
                for (const double x : s) l += std::exp(x - m);
                for (i64 j = 0; j < d.S_kv; ++j) {
                    const double pj = std::exp(s[j] - m) / l;
                    r.pmax = std::max(r.pmax, pj);
                    const double pq = round_scaled(p.dt, static_cast<float>(pj), p.fp8.of(Fp8Tensor::S));
                    for (i64 k = 0; k < d.D_v; ++k)
                        r.O[static_cast<std::size_t>(((b * d.H_q + h) * d.S_q + i) * d.D_v + k)] +=
                                pq * in.V.at(b, h / (d.H_q / d.H_kv), j, k);
                }
            }
    for (const double o : r.O) r.omax = std::max(r.omax, std::fabs(o));
    return r;
}

TEST(Fp8Reference, ForwardRoundsPOntoTheScaledGridAndReportsAmax) {
    for (DType dt : {DType::e4m3, DType::e5m2}) {
        Problem p = fp8_problem(dt, Dir::fwd_t, 2, 4, 2, 9, 37, 16);
        p.fill = Fill::normal;
        const SdpaInputs in = fill_inputs(p);
        const RefForward r = ref_forward(p, in, RefOptions{});
        const NaiveFwd n = naive_fp8_forward(p, in);
        for (std::size_t e = 0; e < n.O.size(); ++e) EXPECT_NEAR(r.O.data[e], n.O[e], 1e-5 * (1 + std::fabs(n.O[e]))) << e;
        ASSERT_EQ(r.amax.dims, (std::array<i64, 4>{1, 1, 1, 2}));
        EXPECT_NEAR(r.amax.data[0], n.pmax, 1e-6);
        EXPECT_NEAR(r.amax.data[1], n.omax, 1e-5 * n.omax);
        EXPECT_GT(r.M_amax.data[0], 0.f);
        EXPECT_GE(r.M_amax.data[1], r.amax.data[1]);  // M_O bounds |O|
        // The emulation matters: without the P rounding O differs (by far less than the bound).
        Problem bf = p;
        bf.dt = DType::f32;
        bf.fp8 = {};
        const RefForward exact = ref_forward(bf, in, RefOptions{});
        double diff = 0;
        for (std::size_t e = 0; e < r.O.size(); ++e) diff = std::max(diff, std::fabs(double(r.O.data[e]) - exact.O.data[e]));
        EXPECT_GT(diff, 1e-4);
    }
}

TEST(Fp8Reference, BackwardRoundsPAndScaledDsAndReportsAmax) {
    Problem p = fp8_problem(DType::e4m3, Dir::bwd, 1, 2, 1, 7, 11, 16);
    p.fill = Fill::normal;
    SdpaInputs in = fill_inputs(p);
    displace(p, in);
    const Geometry g = geometry(p);
    for (const float x : in.O.data) EXPECT_EQ(round_scaled(p.dt, x, g.at(Role::O).descale), x);  // O on its grid
    const RefBackward r = ref_backward(p, in, RefOptions{});
    // dV_j = sum over the group's heads and queries of q(P_ij) dO_i; dQ_i = sum_j q(scale dS_ij) K_j.
    const Dims& d = p.dims;
    const double v = scale_tensor_value(p);
    const float ds_descale = p.fp8.of(Fp8Tensor::dP), p_descale = p.fp8.of(Fp8Tensor::S);
    std::vector<double> dV(static_cast<std::size_t>(d.S_kv * d.D_v), 0.0), dQ(static_cast<std::size_t>(d.H_q * d.S_q * d.D_qk), 0.0);
    double ds_max = 0;
    for (i64 h = 0; h < d.H_q; ++h)
        for (i64 i = 0; i < d.S_q; ++i) {
            double D = 0;
            for (i64 k = 0; k < d.D_v; ++k) D += double(in.dO.at(0, h, i, k)) * in.O.at(0, h, i, k);
            for (i64 j = 0; j < d.S_kv; ++j) {
                double dot = 0, dp = 0;
                for (i64 k = 0; k < d.D_qk; ++k) dot += double(in.Q.at(0, h, i, k)) * in.K.at(0, 0, j, k);
                for (i64 k = 0; k < d.D_v; ++k) dp += double(in.dO.at(0, h, i, k)) * in.V.at(0, 0, j, k);
                const float s = static_cast<float>(dot) * static_cast<float>(v);
                const double pij = std::exp(double(s) - in.stats.at(0, h, i, 0));
                const float dss = static_cast<float>(pij * (dp - D) * v);
                ds_max = std::max(ds_max, std::fabs(double(dss)));
                const double dsq = round_scaled(p.dt, dss, ds_descale);
                const double pq = round_scaled(p.dt, static_cast<float>(pij), p_descale);
                for (i64 k = 0; k < d.D_v; ++k) dV[static_cast<std::size_t>(j * d.D_v + k)] += pq * in.dO.at(0, h, i, k);
                for (i64 k = 0; k < d.D_qk; ++k)
                    dQ[static_cast<std::size_t>((h * d.S_q + i) * d.D_qk + k)] += dsq * in.K.at(0, 0, j, k);
            }
        }
    for (std::size_t e = 0; e < dV.size(); ++e) EXPECT_NEAR(r.dV.data[e], dV[e], 2e-3 * (1 + std::fabs(dV[e]))) << e;
    for (std::size_t e = 0; e < dQ.size(); ++e) EXPECT_NEAR(r.dQ.data[e], dQ[e], 2e-3 * (1 + std::fabs(dQ[e]))) << e;
    ASSERT_EQ(r.amax.dims, (std::array<i64, 4>{1, 1, 1, 4}));
    auto amax = [](const Tensor& t) {
        float m = 0;
        for (const float x : t.data) m = std::max(m, std::fabs(x));
        return m;
    };
    EXPECT_EQ(r.amax.data[0], amax(r.dQ));
    EXPECT_EQ(r.amax.data[1], amax(r.dK));
    EXPECT_EQ(r.amax.data[2], amax(r.dV));
    EXPECT_NEAR(r.amax.data[3], ds_max, 1e-4 * ds_max);
}

TEST(Fp8Compare, SaturatedOutputsAreExpectedSaturatedAndMistrusted) {
    Problem p = fp8_problem(DType::e4m3, Dir::fwd_i, 1, 1, 1, 1, 1, 2);
    p.fp8.of(Fp8Tensor::O) = 0.5f;  // largest O: 448 x 0.5 = 224
    const Geometry g = geometry(p);
    Tensor ref({1, 1, 1, 2}, DType::f32), mag = ref, got({1, 1, 1, 2}, DType::e4m3);
    ref.data = {300.f, 10.f};
    mag.data = {300.f, 10.f};
    got.data = {224.f, 10.f};  // what a satfinite kernel stores
    OutputCheck c = check_output(output_rule(p, Output::O, {}, &g.at(Role::O)), got, {ref, mag, 1});
    EXPECT_TRUE(c.pass) << c.reason;
    EXPECT_TRUE(c.mistrusted);
    EXPECT_EQ(c.saturated, 1);
    got.data = {448.f, 10.f};  // not saturated but code 896 (e4m3 cannot hold it): far beyond the bound
    c = check_output(output_rule(p, Output::O, {}, &g.at(Role::O)), got, {ref, mag, 1});
    EXPECT_FALSE(c.pass);
    EXPECT_EQ(c.expected, 224.f);
    // Without the geometry (no descale known) nothing saturates.
    got.data = {300.f, 10.f};
    c = check_output(output_rule(p, Output::O), got, {ref, mag, 1});
    EXPECT_TRUE(c.pass);
    EXPECT_EQ(c.saturated, 0);
}

TEST(Fp8Compare, AbsoluteTermIsInValues) {
    // A value below half the smallest subnormal x descale reads back as 0: within the bound.
    Problem p = fp8_problem(DType::e4m3, Dir::fwd_i, 1, 1, 1, 1, 1, 1);
    const Geometry g = geometry(p);
    const float tiny_value = static_cast<float>(0x1p-10 * (3.0 / 64));
    Tensor ref({1, 1, 1, 1}, DType::f32), mag = ref, got({1, 1, 1, 1}, DType::e4m3);
    ref.data = {tiny_value};
    mag.data = {0.f};
    got.data = {0.f};
    EXPECT_TRUE(check_output(output_rule(p, Output::O, {}, &g.at(Role::O)), got, {ref, mag, 1}).pass);
    ref.data = {tiny_value * 8};  // four subnormal steps: no longer absorbed
    EXPECT_FALSE(check_output(output_rule(p, Output::O, {}, &g.at(Role::O)), got, {ref, mag, 1}).pass);
}

/// The cases of case-language tokens on test:fp8 (the reference on fp8 buffers).
std::vector<CaseResult> run_all_fp8(std::vector<std::string> tokens) {
    tokens.insert(tokens.begin(), "--backend=test:fp8");
    const auto be = make_backend("test:fp8");
    std::vector<CaseResult> out;
    for (const auto& e : parse_cases(tokens)) {
        EXPECT_TRUE(e.c) << e.error;
        if (e.c) out.push_back(run_case(*e.c, *be, out.size()));
    }
    return out;
}
/// The one case of `tokens` on test:fp8.
CaseResult run_fp8(std::vector<std::string> tokens) {
    std::vector<CaseResult> r = run_all_fp8(std::move(tokens));
    EXPECT_EQ(r.size(), 1u);
    return r.empty() ? CaseResult{} : r.front();
}

TEST(Fp8Saturation, IntermediatesAndInputsPastTheRangeAreMistrusted) {
    // P past e4m3's range at descale_S (every P saturates in kernel and reference alike).
    CaseResult r = run_fp8({"--dt=e4m3", "--fp8-descale=S:1e-6", "b1hq2sq16d16"});
    EXPECT_EQ(r.status, Status::mistrusted) << r.reason;
    EXPECT_NE(r.reason.find("Amax_S"), std::string::npos) << r.reason;
    // The scaled dS past dP's range.
    r = run_fp8({"--dir=bwd", "--dt=e4m3", "--fp8-descale=dP:1e-6", "b1hq2sq16d16"});
    EXPECT_EQ(r.status, Status::mistrusted) << r.reason;
    EXPECT_NE(r.reason.find("Amax_dP"), std::string::npos) << r.reason;
    // P past descale_S's range in the backward (which has no Amax_S output: the check says so too).
    r = run_fp8({"--dir=bwd", "--dt=e4m3", "--fp8-descale=S:0.001", "b2hq4hkv2sq64d32"});
    EXPECT_EQ(r.status, Status::mistrusted) << r.reason;
    EXPECT_NE(r.reason.find("the largest P"), std::string::npos) << r.reason;
    EXPECT_NE(std::find_if(r.notes.begin(), r.notes.end(), [](const std::string& n) {
        return n.starts_with("fp8 descales: Q 0.75, K 1.25, V 0.625, O 0.046875, dO 1.5, dQ 0.375, dK 0.3125, dV 0.4375, S 0.001");
    }), r.notes.end());
    // The backward's O input (the displaced reference forward) past O's range.
    r = run_fp8({"--dir=bwd", "--dt=e5m2", "--fp8-descale=O:1.2e-38", "b1hq2sq16d16"});
    EXPECT_EQ(r.status, Status::mistrusted) << r.reason;
    EXPECT_NE(r.reason.find("O input"), std::string::npos) << r.reason;
    // An output past its range.
    r = run_fp8({"--dir=bwd", "--dt=e4m3", "--fp8-descale=dQ:1e-6", "b1hq2sq16d16"});
    EXPECT_EQ(r.status, Status::mistrusted) << r.reason;
    EXPECT_NE(r.reason.find("dQ:"), std::string::npos) << r.reason;
    // The defaults leave the ordinary fills inside every range.
    for (const char* dir : {"--dir=fwd_t", "--dir=bwd"})
        for (const char* fill : {"--fill=exact", "--fill=normal"}) {
            for (const CaseResult& x : run_all_fp8({dir, "--dt=e4m3,e5m2", fill, "b2hq4hkv2sq48skv80d64"}))
                EXPECT_EQ(x.status, Status::passed) << x.repro << ": " << x.reason;
        }
}

TEST(Fp8Saturation, ValuesThatRoundToTheLargestCodeAreNotSaturated) {
    // e4m3's largest code is 448; values below 464 round to it as any rounding does.
    EXPECT_EQ(overflow_threshold(DType::e4m3), 464.0);
    EXPECT_EQ(overflow_threshold(DType::e5m2), 61440.0);
    Problem p = fp8_problem(DType::e4m3, Dir::fwd_i, 1, 1, 1, 1, 1, 2);
    p.fp8.of(Fp8Tensor::O) = 1.f;
    const Geometry g = geometry(p);
    Tensor ref({1, 1, 1, 2}, DType::f32), mag = ref, got({1, 1, 1, 2}, DType::e4m3);
    ref.data = {460.f, 1.f};
    mag.data = {460.f, 1.f};
    got.data = {448.f, 1.f};
    const OutputCheck c = check_output(output_rule(p, Output::O, {}, &g.at(Role::O)), got, {ref, mag, 1});
    EXPECT_TRUE(c.pass);
    EXPECT_EQ(c.saturated, 0);
}

TEST(Fp8Random, GivenFp8KnobsAreKept) {
    const auto entries = parse_cases({"--backend=test:fp8", "--dt=e4m3", "--fp8-descale=O:0.0625", "--random=20"});
    ASSERT_EQ(entries.size(), 20u);
    for (const auto& e : entries) {
        ASSERT_TRUE(e.c) << e.error;
        EXPECT_EQ(e.c->prb.dt, DType::e4m3);
        EXPECT_EQ(e.c->prb.fp8.of(Fp8Tensor::O), 0.0625f);
    }
}

}  // namespace
}  // namespace sdpa
