// Unit tests of the f32 reference (ref/sdpa_ref.hpp): against a naive all-f64 implementation,
// analytic cases, central finite differences, rounding emulation and magnitude bounds.
#include "driver/knobs.hpp"
#include "core/geometry.hpp"
#include "ref/sdpa_ref.hpp"
#include "compare/compare.hpp"

#include <gtest/gtest.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <ostream>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#ifdef _OPENMP
#include <omp.h>
#endif

namespace sdpa {
namespace {

using i64 = std::int64_t;
using Vec = std::vector<double>;
constexpr double kInfD = std::numeric_limits<double>::infinity();

// ---------------------------------------------------------------------------------------------
// Problem and input construction.

Problem make_problem(i64 B, i64 Hq, i64 Hkv, i64 Sq, i64 Skv, i64 Dqk, i64 Dv, Mask mask = Mask::none,
    BiasShape bs = BiasShape::one, ScaleOp op = ScaleOp::mul, std::optional<float> scale = std::nullopt,
    DType dt = DType::f32) {
    Problem p;
    p.dims = Dims{B, Hq, Hkv, Sq, Skv, Dqk, Dv};
    p.mask = mask;
    p.bias_shape = bs;
    p.scale_op = op;
    p.scale = scale;
    p.dt = dt;
    p.dir = Dir::bwd;
    return p;
}

Tensor random_tensor(std::array<i64, 4> dims, DType dt, std::mt19937& rng, float sigma = 1.f) {
    Tensor t(dims, dt);
    std::normal_distribution<float> dist(0.f, sigma);
    for (auto& x : t.data) x = round_to(dt, dist(rng));
    return t;
}

/// Q, K, V, dO (and bias for Mask::bias), values representable in p.dt; O and stats empty.
SdpaInputs make_inputs(const Problem& p, unsigned seed) {
    std::mt19937 rng(seed);
    const Dims& d = p.dims;
    SdpaInputs in;
    in.Q = random_tensor({d.B, d.H_q, d.S_q, d.D_qk}, p.dt, rng);
    in.K = random_tensor({d.B, d.H_kv, d.S_kv, d.D_qk}, p.dt, rng);
    in.V = random_tensor({d.B, d.H_kv, d.S_kv, d.D_v}, p.dt, rng);
    in.dO = random_tensor({d.B, d.H_q, d.S_q, d.D_v}, p.dt, rng);
    if (p.mask == Mask::bias) in.bias = random_tensor(bias_dims(p), mask_dtype(p), rng, 1.5f);
    return in;
}

/// Runs the reference forward and stores its O (rounded to the io dtype, as the displacement
/// step does) and stats into `in`.
RefForward displace(const Problem& p, SdpaInputs& in, const RefOptions& opt = {false}) {
    RefForward f = ref_forward(p, in, opt);
    in.O = f.O;
    in.O.dt = p.dt;
    for (auto& x : in.O.data) x = round_to(p.dt, x);
    in.stats = f.stats;
    return f;
}

// ---------------------------------------------------------------------------------------------
// Naive reference: plain f64 loops, no emulation, written independently of ref/sdpa_ref.cpp.

struct NaiveIn {
    Problem p;
    Vec Q, K, V, bias, dO, O;  // dense, same layouts as the Tensors
    std::array<i64, 4> bdims{1, 1, 1, 1};
    const DropoutMask* drop = nullptr;  // with p.dropout: Z, applied as P_d = Z o P / (1 - p)
};

/// Z_ij / (1 - p) for (b, h, i, j): 1 without dropout (written from the formulas in
/// core/dropout.hpp, independently of the reference's tiles).
double keep_factor(const NaiveIn& n, i64 b, i64 h, i64 i, i64 j) {
    if (!n.drop || !n.p.dropout || n.p.dropout->p == 0.f) return 1.0;
    std::uint8_t z = 0;
    n.drop->keep_row(b, h, i, j, 1, &z);
    return z ? 1.0 / (1.0 - static_cast<double>(n.p.dropout->p)) : 0.0;
}

Vec to_vec(const Tensor& t) { return Vec(t.data.begin(), t.data.end()); }

NaiveIn naive_in(const Problem& p, const SdpaInputs& in) {
    NaiveIn n{p, to_vec(in.Q), to_vec(in.K), to_vec(in.V), to_vec(in.bias), to_vec(in.dO), to_vec(in.O), {}};
    if (p.mask == Mask::bias) n.bdims = in.bias.dims;
    return n;
}

struct NaiveOut {
    Vec O, stats, M_O, M_stats;         // forward
    Vec M_O_hi;  // forward: M_O with each row's largest score magnitude in the score-error sum
    Vec dQ, dK, dV, M_dQ, M_dK, M_dV;  // backward
    Vec dMask, M_dMask;                // backward with a bias: dS and W summed into the bias's dims
};

i64 idx4(i64 a, i64 b, i64 c, i64 d, i64 n1, i64 n2, i64 n3) { return ((a * n1 + b) * n2 + c) * n3 + d; }

/// Scaled score before the mask (pre), the bias value (mv) of (b, h, i, j), and the bound
/// |scale| ||q_i|| ||k_j|| (Cauchy-Schwarz) of the score's magnitude |scale| sum_k |q_k k_k| (sigma).
void naive_score(const NaiveIn& n, i64 b, i64 h, i64 i, i64 j, double& pre, double& mv, double* sigma = nullptr) {
    const Dims& d = n.p.dims;
    const i64 hk = h / (d.H_q / d.H_kv);
    double dot = 0, q2 = 0, k2 = 0;
    for (i64 k = 0; k < d.D_qk; ++k) {
        const double qk = n.Q[idx4(b, h, i, k, d.H_q, d.S_q, d.D_qk)], kk = n.K[idx4(b, hk, j, k, d.H_kv, d.S_kv, d.D_qk)];
        dot += qk * kk;
        q2 += qk * qk;
        k2 += kk * kk;
    }
    const double v = scale_tensor_value(n.p), adot = std::sqrt(q2) * std::sqrt(k2);
    pre = n.p.scale_op == ScaleOp::mul ? dot * v : dot / v;
    if (sigma) *sigma = n.p.scale_op == ScaleOp::mul ? adot * std::fabs(v) : adot / std::fabs(v);
    mv = 0;
    if (n.p.mask == Mask::bias) {
        const auto& bd = n.bdims;
        mv = n.bias[idx4(bd[0] == 1 ? 0 : b, bd[1] == 1 ? 0 : h, bd[2] == 1 ? 0 : i, j, bd[1], bd[2], bd[3])];
    }
}

/// P (softmax over the visible keys, 0 elsewhere) for all (b, h, i, j), stats, M_stats, and
/// (when given) each visible score's magnitude |scale| ||q_i|| ||k_j|| + |bias| (0 where P = 0).
void naive_softmax(const NaiveIn& n, Vec& P, Vec& stats, Vec& Mst, Vec* Mag = nullptr) {
    const Dims& d = n.p.dims;
    P.assign(static_cast<std::size_t>(d.B * d.H_q * d.S_q * d.S_kv), 0.0);
    if (Mag) Mag->assign(P.size(), 0.0);
    stats.assign(static_cast<std::size_t>(d.B * d.H_q * d.S_q), 0.0);
    Mst = stats;
    Vec s(static_cast<std::size_t>(d.S_kv)), mag(s.size());
    for (i64 b = 0; b < d.B; ++b)
        for (i64 h = 0; h < d.H_q; ++h)
            for (i64 i = 0; i < d.S_q; ++i) {
                const i64 row = (b * d.H_q + h) * d.S_q + i;
                double mx = -kInfD;
                for (i64 j = 0; j < d.S_kv; ++j) {
                    double pre = 0, mv = 0, sigma = 0;
                    naive_score(n, b, h, i, j, pre, mv, &sigma);
                    s[j] = visible(n.p, b, i, j) ? pre + mv : -kInfD;
                    mag[j] = std::isfinite(s[j]) ? sigma + std::fabs(mv) : 0.0;
                    if (Mag) (*Mag)[static_cast<std::size_t>(row * d.S_kv + j)] = mag[j];
                    mx = std::max(mx, s[j]);
                }
                if (mx == -kInfD) {
                    stats[row] = kInfD;
                    Mst[row] = 1 + std::sqrt(static_cast<double>(d.S_kv));
                    continue;
                }
                double sum = 0;
                for (i64 j = 0; j < d.S_kv; ++j) sum += std::exp(s[j] - mx);
                stats[row] = mx + std::log(sum);
                double ms = 1 + std::sqrt(static_cast<double>(d.S_kv));
                for (i64 j = 0; j < d.S_kv; ++j) {
                    const double pij = std::exp(s[j] - mx) / sum;
                    P[row * d.S_kv + j] = pij;
                    ms += pij * mag[j];
                }
                Mst[row] = ms;
            }
}

NaiveOut naive_forward(const NaiveIn& n) {
    const Dims& d = n.p.dims;
    NaiveOut r;
    Vec P, Mag;
    naive_softmax(n, P, r.stats, r.M_stats, &Mag);
    r.O.assign(static_cast<std::size_t>(d.B * d.H_q * d.S_q * d.D_v), 0.0);
    r.M_O = r.M_O_hi = r.O;
    // M_O = P|V| + kappa (sum_j P_d,ij mag_ij |V_j| + (sum_j P_ij mag_ij) P_d|V|), kappa = u_f32 / u_dt;
    // M_O_hi with max_j mag_ij in place of mag_ij in the first sum (ref_forward.cpp bounds that
    // sum by each key block's largest mag_ij, so its M_O lies between the two).
    const double kappa = unit_roundoff(DType::f32) / unit_roundoff(n.p.dt);
    for (i64 b = 0; b < d.B; ++b)
        for (i64 h = 0; h < d.H_q; ++h)
            for (i64 i = 0; i < d.S_q; ++i) {
                const i64 row = (b * d.H_q + h) * d.S_q + i;
                double pm = 0, mmax = 0;  // sum_j P_ij mag_ij, undropped; max_j mag_ij
                for (i64 j = 0; j < d.S_kv; ++j) {
                    pm += P[row * d.S_kv + j] * Mag[row * d.S_kv + j];
                    mmax = std::max(mmax, Mag[row * d.S_kv + j]);
                }
                for (i64 k = 0; k < d.D_v; ++k) {
                    const i64 hk = h / (d.H_q / d.H_kv);
                    double o = 0, m = 0, ms = 0;
                    for (i64 j = 0; j < d.S_kv; ++j) {
                        const double pij = P[row * d.S_kv + j] * keep_factor(n, b, h, i, j);
                        const double vv = n.V[idx4(b, hk, j, k, d.H_kv, d.S_kv, d.D_v)];
                        o += pij * vv;
                        m += pij * std::fabs(vv);
                        ms += pij * Mag[row * d.S_kv + j] * std::fabs(vv);
                    }
                    r.O[idx4(b, h, i, k, d.H_q, d.S_q, d.D_v)] = o;
                    r.M_O[idx4(b, h, i, k, d.H_q, d.S_q, d.D_v)] = m + kappa * (ms + pm * m);
                    r.M_O_hi[idx4(b, h, i, k, d.H_q, d.S_q, d.D_v)] = m + kappa * (mmax * m + pm * m);
                }
            }
    return r;
}

/// Textbook backward from the exact f64 P, using n.O for D_i = rowsum(dO o O).
NaiveOut naive_backward(const NaiveIn& n) {
    const Dims& d = n.p.dims;
    NaiveOut r;
    Vec P;
    naive_softmax(n, P, r.stats, r.M_stats);
    const double v = scale_tensor_value(n.p);
    const double g = n.p.scale_op == ScaleOp::mul ? v : 1.0 / v;
    r.dQ.assign(n.Q.size(), 0.0);
    r.M_dQ = r.dQ;
    r.dK.assign(n.K.size(), 0.0);
    r.M_dK = r.dK;
    r.dV.assign(n.V.size(), 0.0);
    r.M_dV = r.dV;
    const auto& bd = n.bdims;
    r.dMask.assign(static_cast<std::size_t>(bd[0] * bd[1] * bd[2] * bd[3]), 0.0);
    r.M_dMask = r.dMask;
    // The score errors' share: mag_ij = |scale| ||q_i|| ||k_j|| + |bias_ij|, in units of u_dt.
    const double kappa = unit_roundoff(DType::f32) / unit_roundoff(n.p.dt);
    const auto norm = [](const Vec& x, i64 at, i64 len) {
        double s2 = 0;
        for (i64 k = 0; k < len; ++k) s2 += x[static_cast<std::size_t>(at + k)] * x[static_cast<std::size_t>(at + k)];
        return std::sqrt(s2);
    };
    for (i64 b = 0; b < d.B; ++b)
        for (i64 h = 0; h < d.H_q; ++h) {
            const i64 hk = h / (d.H_q / d.H_kv);
            for (i64 i = 0; i < d.S_q; ++i) {
                double Di = 0, r2 = 0;
                for (i64 k = 0; k < d.D_v; ++k) {
                    const double t = n.dO[idx4(b, h, i, k, d.H_q, d.S_q, d.D_v)] * n.O[idx4(b, h, i, k, d.H_q, d.S_q, d.D_v)];
                    Di += t;
                    r2 += t * t;
                }
                for (i64 j = 0; j < d.S_kv; ++j) {
                    const double pij = P[((b * d.H_q + h) * d.S_q + i) * d.S_kv + j];
                    double dP = 0;
                    for (i64 k = 0; k < d.D_v; ++k)
                        dP += n.dO[idx4(b, h, i, k, d.H_q, d.S_q, d.D_v)] * n.V[idx4(b, hk, j, k, d.H_kv, d.S_kv, d.D_v)];
                    // Dropout: dP_d = Z o dP / (1-p) enters dS, P_d = Z o P / (1-p) enters dV.
                    const double z = keep_factor(n, b, h, i, j);
                    dP *= z;
                    const double dS = pij * (dP - Di);
                    double pre = 0, mv = 0;
                    naive_score(n, b, h, i, j, pre, mv);
                    const double mag = std::fabs(g) * norm(n.Q, idx4(b, h, i, 0, d.H_q, d.S_q, d.D_qk), d.D_qk) *
                            norm(n.K, idx4(b, hk, j, 0, d.H_kv, d.S_kv, d.D_qk), d.D_qk) + std::fabs(mv);
                    const double W = std::fabs(dS) * (1 + kappa * mag) + pij * std::sqrt(r2);
                    if (n.p.mask == Mask::bias) {  // the bias element (b, h, i, j) reads, broadcast dims at 0
                        const auto mi = idx4(bd[0] == 1 ? 0 : b, bd[1] == 1 ? 0 : h, bd[2] == 1 ? 0 : i, j, bd[1],
                                bd[2], bd[3]);
                        r.dMask[static_cast<std::size_t>(mi)] += dS;
                        r.M_dMask[static_cast<std::size_t>(mi)] += W;
                    }
                    for (i64 k = 0; k < d.D_qk; ++k) {
                        const auto qi = idx4(b, h, i, k, d.H_q, d.S_q, d.D_qk);
                        const auto kj = idx4(b, hk, j, k, d.H_kv, d.S_kv, d.D_qk);
                        r.dQ[qi] += g * dS * n.K[kj];
                        r.M_dQ[qi] += std::fabs(g) * W * std::fabs(n.K[kj]);
                        r.dK[kj] += g * dS * n.Q[qi];
                        r.M_dK[kj] += std::fabs(g) * W * std::fabs(n.Q[qi]);
                    }
                    for (i64 k = 0; k < d.D_v; ++k) {
                        const double dO = n.dO[idx4(b, h, i, k, d.H_q, d.S_q, d.D_v)];
                        r.dV[idx4(b, hk, j, k, d.H_kv, d.S_kv, d.D_v)] += pij * z * dO;
                        r.M_dV[idx4(b, hk, j, k, d.H_kv, d.S_kv, d.D_v)] += pij * z * (1 + kappa * mag) * std::fabs(dO);
                    }
                }
            }
        }
    return r;
}

/// Expects lo_k (1 - rel) - tiny <= got_k <= hi_k (1 + rel) + tiny for every element, tiny =
/// rel * max|hi| / 1024: a magnitude that bounds at least what lo says and at most what hi says.
void expect_between(const char* what, const Tensor& got, const Vec& lo, const Vec& hi, double rel) {
    ASSERT_EQ(got.size(), lo.size()) << what;
    ASSERT_EQ(got.size(), hi.size()) << what;
    double hmax = 0;
    for (double m : hi) hmax = std::max(hmax, std::fabs(m));
    int bad = 0;
    for (std::size_t k = 0; k < got.size(); ++k) {
        const double g = got.data[k], tiny = rel * hmax / 1024;
        if ((g < lo[k] * (1 - rel) - tiny || g > hi[k] * (1 + rel) + tiny) && bad++ < 5)
            ADD_FAILURE() << what << "[" << k << "] = " << g << " not in [" << lo[k] << ", " << hi[k] << "]";
    }
}

/// Expects |got - want| <= rel * (|mag_k| + max|mag| / 1024) + abs_floor for every element.
void expect_close(const char* what, const Tensor& got, const Vec& want, const Vec& mag, double rel,
    double abs_floor = 1e-12) {
    ASSERT_EQ(got.size(), want.size()) << what;
    double mmax = 0;
    for (double m : mag) mmax = std::max(mmax, std::fabs(m));
    int bad = 0;
    for (std::size_t k = 0; k < want.size(); ++k) {
        const double bound = rel * (std::fabs(mag[k]) + mmax / 1024) + abs_floor;
        const double err = std::fabs(static_cast<double>(got.data[k]) - want[k]);
        if (!(err <= bound) && bad++ < 5)
            ADD_FAILURE() << what << "[" << k << "]: got " << got.data[k] << " want " << want[k] << " err "
                          << err << " bound " << bound;
    }
    EXPECT_EQ(bad, 0) << what << ": " << bad << " elements out of bound";
}

// ---------------------------------------------------------------------------------------------
// Reference vs naive on many small shapes.

/// `p` with the sliding window bounds (left, right).
Problem windowed(Problem p, i64 left, i64 right) {
    p.window_left = left;
    p.window_right = right;
    return p;
}

/// `p` with per-batch padding lengths.
Problem padded(Problem p, std::vector<i64> q, std::vector<i64> kv) {
    p.seq_len_q = std::move(q);
    p.seq_len_kv = std::move(kv);
    return p;
}

struct Config {
    std::string name;
    Problem p;
};

Problem with_padding(Problem p, std::vector<i64> lq, std::vector<i64> lkv) {
    p.seq_len_q = std::move(lq);
    p.seq_len_kv = std::move(lkv);
    return p;
}

std::vector<Config> configs() {
    using M = Mask;
    using BS = BiasShape;
    using SO = ScaleOp;
    return {
        {"mha_none", make_problem(2, 2, 2, 5, 5, 4, 4)},
        {"gqa_causal_tl", make_problem(1, 4, 2, 6, 7, 5, 3, M::causal_tl)},
        {"mqa_causal_br_sq_gt_skv", make_problem(2, 3, 1, 7, 4, 4, 4, M::causal_br)},
        {"mha_causal_br_sq_lt_skv", make_problem(1, 2, 2, 3, 8, 6, 6, M::causal_br)},
        {"mha_causal_tl_sq_gt_skv", make_problem(1, 2, 2, 8, 3, 4, 5, M::causal_tl)},
        {"gqa_causal_tl_sq_lt_skv", make_problem(2, 4, 2, 4, 9, 3, 7, M::causal_tl)},
        {"gqa_bias_one", make_problem(2, 4, 2, 5, 6, 4, 3, M::bias, BS::one)},
        {"gqa_bias_b", make_problem(2, 4, 2, 5, 6, 4, 3, M::bias, BS::b)},
        {"gqa_bias_bh", make_problem(2, 4, 2, 5, 6, 4, 3, M::bias, BS::bh)},
        {"mqa_bias_bh_div", make_problem(2, 2, 1, 6, 4, 5, 5, M::bias, BS::bh, SO::div)},
        {"mha_div_default", make_problem(1, 2, 2, 6, 6, 8, 8, M::none, BS::one, SO::div)},
        {"mha_div_explicit", make_problem(1, 1, 1, 5, 7, 4, 6, M::causal_tl, BS::one, SO::div, 2.5f)},
        {"gqa_mul_explicit", make_problem(1, 4, 2, 7, 5, 6, 2, M::causal_br, BS::one, SO::mul, 0.3f)},
        {"mha_larger_vectorized", make_problem(1, 2, 1, 33, 65, 20, 17, M::causal_br)},
        // Tile boundaries of the tiled reference (64 x 64 tiles, head sizes padded to 32).
        {"blk63_causal_tl", make_problem(1, 2, 1, 63, 63, 16, 16, M::causal_tl)},
        {"blk64_none", make_problem(1, 1, 1, 64, 64, 32, 32)},
        {"blk65_causal_br", make_problem(1, 2, 2, 65, 65, 8, 12, M::causal_br)},
        {"blk127_129_causal_br", make_problem(1, 1, 1, 127, 129, 33, 31, M::causal_br)},
        {"blk129_65_bias_bh_div", make_problem(1, 2, 1, 129, 65, 8, 8, M::bias, BS::bh, SO::div)},
        {"blk129_127_causal_tl_gqa", make_problem(1, 4, 2, 129, 127, 40, 24, M::causal_tl)},
        {"blk_padding_causal_br", with_padding(make_problem(2, 2, 1, 65, 129, 16, 16, M::causal_br), {60, 65}, {70, 129})},
        {"blk_padding_none", with_padding(make_problem(2, 1, 1, 130, 66, 8, 8), {0, 129}, {66, 1})},
        // Sliding window (FlashAttention's window_size) and padding, through core's visible().
        {"gqa_window_2_1", windowed(make_problem(2, 4, 2, 7, 9, 4, 3, M::window), 2, 1)},
        {"mha_window_0_0_sq_gt_skv", windowed(make_problem(1, 2, 2, 8, 5, 4, 4, M::window), 0, 0)},
        {"mqa_window_3_0_div", windowed(make_problem(1, 2, 1, 6, 6, 5, 5, M::window, BS::one, SO::div), 3, 0)},
        {"gqa_padding_causal_br", padded(make_problem(2, 4, 2, 6, 7, 4, 3, M::causal_br), {6, 3}, {5, 7})},
        {"mha_padding_bias_b", padded(make_problem(2, 2, 2, 5, 6, 4, 4, M::bias, BS::b), {0, 4}, {6, 2})},
        {"gqa_padding_window", padded(windowed(make_problem(2, 4, 2, 7, 8, 3, 3, M::window), 1, 2), {7, 4}, {3, 8})},
    };
}

void PrintTo(const Config& c, std::ostream* os) { *os << c.name << " " << descriptor(c.p.dims) << " " << knobs(c.p); }

class RefVsNaive : public ::testing::TestWithParam<Config> {};

TEST_P(RefVsNaive, ForwardMatches) {
    const Problem& p = GetParam().p;
    ASSERT_FALSE(validate(p).has_value()) << *validate(p);
    SdpaInputs in = make_inputs(p, 7);
    const RefForward f = ref_forward(p, in, default_ref_options(p));
    const NaiveOut n = naive_forward(naive_in(p, in));
    expect_close("O", f.O, n.O, n.M_O, 1e-5);
    expect_between("M_O", f.M_O, n.M_O, n.M_O_hi, 1e-5);
    expect_close("M_stats", f.M_stats, n.M_stats, n.M_stats, 1e-5);
    ASSERT_EQ(f.stats.size(), n.stats.size());
    for (std::size_t k = 0; k < n.stats.size(); ++k) {
        if (std::isinf(n.stats[k])) {
            EXPECT_TRUE(std::isinf(f.stats.data[k]) && f.stats.data[k] > 0) << "stats[" << k << "]";
        } else {
            EXPECT_NEAR(f.stats.data[k], n.stats[k], 1e-5 * (1 + std::fabs(n.stats[k]))) << "stats[" << k << "]";
        }
    }
    for (const Tensor* t : {&f.O, &f.stats, &f.M_O, &f.M_stats}) EXPECT_EQ(t->dt, DType::f32);
    EXPECT_EQ(f.O.dims, (std::array<i64, 4>{p.dims.B, p.dims.H_q, p.dims.S_q, p.dims.D_v}));
    EXPECT_EQ(f.stats.dims, (std::array<i64, 4>{p.dims.B, p.dims.H_q, p.dims.S_q, 1}));
}

TEST_P(RefVsNaive, BackwardMatches) {
    const Problem& p = GetParam().p;
    SdpaInputs in = make_inputs(p, 11);
    displace(p, in);
    const RefBackward g = ref_backward(p, in, default_ref_options(p));
    const NaiveOut n = naive_backward(naive_in(p, in));
    expect_close("dQ", g.dQ, n.dQ, n.M_dQ, 1e-5);
    expect_close("dK", g.dK, n.dK, n.M_dK, 1e-5);
    expect_close("dV", g.dV, n.dV, n.M_dV, 1e-5);
    expect_close("M_dQ", g.M_dQ, n.M_dQ, n.M_dQ, 1e-5);
    expect_close("M_dK", g.M_dK, n.M_dK, n.M_dK, 1e-5);
    expect_close("M_dV", g.M_dV, n.M_dV, n.M_dV, 1e-5);
    for (const Tensor* t : {&g.dQ, &g.dK, &g.dV, &g.M_dQ, &g.M_dK, &g.M_dV}) EXPECT_EQ(t->dt, DType::f32);
    EXPECT_EQ(g.dK.dims, (std::array<i64, 4>{p.dims.B, p.dims.H_kv, p.dims.S_kv, p.dims.D_qk}));
    EXPECT_EQ(g.dV.dims, (std::array<i64, 4>{p.dims.B, p.dims.H_kv, p.dims.S_kv, p.dims.D_v}));
}

/// The tolerance model relies on M_X >= |X| (emulation off, f32).
TEST_P(RefVsNaive, MagnitudesBoundValues) {
    const Problem& p = GetParam().p;
    SdpaInputs in = make_inputs(p, 13);
    const RefForward f = displace(p, in);
    const RefBackward g = ref_backward(p, in, RefOptions{false});
    auto check = [](const char* what, const Tensor& x, const Tensor& m) {
        ASSERT_EQ(x.size(), m.size());
        for (std::size_t k = 0; k < x.size(); ++k)
            ASSERT_LE(std::fabs(x.data[k]), m.data[k] * (1 + 1e-6) + 1e-30) << what << "[" << k << "]";
    };
    check("O", f.O, f.M_O);
    check("dQ", g.dQ, g.M_dQ);
    check("dK", g.dK, g.M_dK);
    check("dV", g.dV, g.M_dV);
    // M_stats is at least its constant part 1 + sqrt(S_kv).
    for (std::size_t k = 0; k < f.M_stats.size(); ++k)
        EXPECT_GE(f.M_stats.data[k], 1 + std::sqrt(static_cast<float>(p.dims.S_kv)) * (1 - 1e-6f));
}

INSTANTIATE_TEST_SUITE_P(Shapes, RefVsNaive, ::testing::ValuesIn(configs()),
    [](const ::testing::TestParamInfo<Config>& info) { return info.param.name; });

// ---------------------------------------------------------------------------------------------
// Analytic cases.

/// With Q = 0 all visible scores are 0: P is uniform over the visible keys, O_i is the mean of
/// the visible V rows and stats_i = log(number of visible keys).
TEST(RefForward, ZeroQueryGivesMeanOfVisibleValues) {
    for (Mask mask : {Mask::none, Mask::causal_tl, Mask::causal_br}) {
        SCOPED_TRACE(std::string(format_as(mask)));
        const Problem p = make_problem(1, 2, 1, 5, 4, 3, 3, mask);
        SdpaInputs in = make_inputs(p, 3);
        std::fill(in.Q.data.begin(), in.Q.data.end(), 0.f);
        const RefForward f = ref_forward(p, in, {});
        for (i64 h = 0; h < 2; ++h)
            for (i64 i = 0; i < 5; ++i) {
                int nvis = 0;
                for (i64 j = 0; j < 4; ++j) nvis += visible(p, 0, i, j) ? 1 : 0;
                if (nvis == 0) {
                    EXPECT_TRUE(std::isinf(f.stats.at(0, h, i, 0)));
                    for (i64 k = 0; k < 3; ++k) EXPECT_EQ(f.O.at(0, h, i, k), 0.f);
                    continue;
                }
                EXPECT_NEAR(f.stats.at(0, h, i, 0), std::log(static_cast<double>(nvis)), 1e-6);
                for (i64 k = 0; k < 3; ++k) {
                    double mean = 0;
                    for (i64 j = 0; j < 4; ++j)
                        if (visible(p, 0, i, j)) mean += in.V.at(0, 0, j, k);
                    mean /= nvis;
                    EXPECT_NEAR(f.O.at(0, h, i, k), mean, 1e-6) << "h " << h << " i " << i << " k " << k;
                }
            }
    }
}

/// causal_br with S_q > S_kv: the first S_q - S_kv rows see nothing. O and dQ rows are exactly
/// 0, stats +inf, and M_stats = 1 + sqrt(S_kv).
TEST(RefBackward, FullyMaskedRowsAreExactlyZero) {
    const Problem p = make_problem(1, 2, 1, 6, 3, 4, 4, Mask::causal_br);
    SdpaInputs in = make_inputs(p, 5);
    const RefForward f = displace(p, in);
    const RefBackward g = ref_backward(p, in, {});
    for (i64 h = 0; h < 2; ++h)
        for (i64 i = 0; i < 6; ++i) {
            const bool masked = i < 3;
            ASSERT_EQ(row_fully_masked(p, 0, i), masked);
            if (!masked) {
                EXPECT_TRUE(std::isfinite(f.stats.at(0, h, i, 0)));
                continue;
            }
            EXPECT_EQ(f.stats.at(0, h, i, 0), std::numeric_limits<float>::infinity());
            EXPECT_FLOAT_EQ(f.M_stats.at(0, h, i, 0), 1 + std::sqrt(3.f));
            for (i64 k = 0; k < 4; ++k) {
                EXPECT_EQ(f.O.at(0, h, i, k), 0.f);
                EXPECT_EQ(f.M_O.at(0, h, i, k), 0.f);
                EXPECT_EQ(g.dQ.at(0, h, i, k), 0.f);
                EXPECT_EQ(g.M_dQ.at(0, h, i, k), 0.f);
            }
        }
    // Every key is visible to some query here, so dK is not trivially zero.
    double nrm = 0;
    for (float x : g.dK.data) nrm += std::fabs(x);
    EXPECT_GT(nrm, 0.0);
}

// ---------------------------------------------------------------------------------------------
// Finite differences of L = sum(O o dO) through the naive f64 forward.

double loss(const NaiveIn& n) {
    const NaiveOut o = naive_forward(n);
    double l = 0;
    for (std::size_t k = 0; k < o.O.size(); ++k) l += o.O[k] * n.dO[k];
    return l;
}

void check_fd(const char* what, const Tensor& grad, NaiveIn n, Vec NaiveIn::*field) {
    constexpr double h = 1e-3;
    ASSERT_EQ(grad.size(), (n.*field).size());
    double gmax = 0;
    for (float x : grad.data) gmax = std::max(gmax, static_cast<double>(std::fabs(x)));
    ASSERT_GT(gmax, 1e-3) << what << " is trivially zero; the check would prove nothing";
    for (std::size_t k = 0; k < grad.size(); ++k) {
        const double x0 = (n.*field)[k];
        (n.*field)[k] = x0 + h;
        const double lp = loss(n);
        (n.*field)[k] = x0 - h;
        const double lm = loss(n);
        (n.*field)[k] = x0;
        const double fd = (lp - lm) / (2 * h);
        EXPECT_NEAR(grad.data[k], fd, 1e-4 + 1e-3 * std::fabs(fd))
            << what << "[" << k << "]";
    }
}

struct FdCase {
    const char* name;
    Problem p;
};

TEST(RefBackward, MatchesFiniteDifferences) {
    const std::vector<FdCase> cases = {
        {"gqa_none", make_problem(1, 2, 1, 3, 4, 3, 2)},
        {"gqa_bias_bh_div", make_problem(1, 2, 1, 3, 4, 3, 2, Mask::bias, BiasShape::bh, ScaleOp::div, 1.7f)},
        {"gqa_causal_tl", make_problem(1, 4, 2, 4, 4, 3, 2, Mask::causal_tl)},
        {"mqa_causal_br_sq_gt_skv", make_problem(1, 2, 1, 5, 3, 3, 2, Mask::causal_br)},
        {"mha_causal_br_sq_lt_skv_explicit", make_problem(1, 1, 1, 3, 5, 2, 3, Mask::causal_br, BiasShape::one, ScaleOp::mul, 0.8f)},
    };
    for (const auto& c : cases) {
        SCOPED_TRACE(c.name);
        SdpaInputs in = make_inputs(c.p, 17);
        const RefForward f = displace(c.p, in);
        const RefBackward g = ref_backward(c.p, in, default_ref_options(c.p));
        const NaiveIn n = naive_in(c.p, in);
        check_fd("dQ", g.dQ, n, &NaiveIn::Q);
        check_fd("dK", g.dK, n, &NaiveIn::K);
        check_fd("dV", g.dV, n, &NaiveIn::V);
        for (i64 h = 0; h < c.p.dims.H_q; ++h)
            for (i64 i = 0; i < c.p.dims.S_q; ++i) {
                if (!row_fully_masked(c.p, 0, i)) continue;
                EXPECT_EQ(f.stats.at(0, h, i, 0), std::numeric_limits<float>::infinity());
                for (i64 k = 0; k < c.p.dims.D_v; ++k) EXPECT_EQ(f.O.at(0, h, i, k), 0.f);
                for (i64 k = 0; k < c.p.dims.D_qk; ++k) EXPECT_EQ(g.dQ.at(0, h, i, k), 0.f);
            }
    }
}

// dMask (Problem::dmask): the gradient of L = sum(O o dO) with respect to the bias, i.e. dS summed
// over the bias's broadcast dims, for every broadcast shape; against the naive sums and finite
// differences of the bias; M_dMask bounds |dMask|; and the no-reduce fault differs.
TEST(RefBackward, DMaskIsTheBiasGradient) {
    for (const BiasShape bs : {BiasShape::one, BiasShape::b, BiasShape::h, BiasShape::bh, BiasShape::one_row,
             BiasShape::b_row, BiasShape::h_row, BiasShape::bh_row}) {
        Problem p = make_problem(2, 4, 2, 5, 7, 3, 4, Mask::bias, bs, ScaleOp::div, 1.3f);
        p.dmask = true;
        SCOPED_TRACE(fmt::format("{}", bs));
        SdpaInputs in = make_inputs(p, 23);
        displace(p, in);
        const RefBackward g = ref_backward(p, in, RefOptions{false});
        const auto want = bias_dims(p);
        EXPECT_EQ(g.dMask.dims, want);
        EXPECT_EQ(g.M_dMask.dims, want);
        const NaiveIn n = naive_in(p, in);
        const NaiveOut nb = naive_backward(n);
        expect_close("dMask", g.dMask, nb.dMask, nb.M_dMask, 1e-5);
        expect_close("M_dMask", g.M_dMask, nb.M_dMask, nb.M_dMask, 1e-5);
        for (std::size_t k = 0; k < g.dMask.size(); ++k)
            ASSERT_LE(std::fabs(g.dMask.data[k]), g.M_dMask.data[k] * (1 + 1e-6) + 1e-30) << k;
        check_fd("dMask", g.dMask, n, &NaiveIn::bias);
        RefOptions bad{false};
        bad.dmask_no_reduce = true;
        const RefBackward f = ref_backward(p, in, bad);
        EXPECT_EQ(f.dQ.data, g.dQ.data);  // only dMask changes
        if (bs == BiasShape::bh) EXPECT_EQ(f.dMask.data, g.dMask.data);  // nothing to reduce
        else EXPECT_NE(f.dMask.data, g.dMask.data);
    }
}

// Dropout: the backward formulas (core/dropout.hpp) are the gradient of L = sum(O o dO) through a
// forward with P_d = Z o P / (1-p) and a fixed mask Z; a wrong place for Z or 1/(1-p) (dS from
// P_d, dP undropped, no rescale) fails here.
TEST(RefBackward, DropoutMatchesFiniteDifferences) {
    std::vector<FdCase> cases = {
        {"mha_none", make_problem(1, 2, 2, 4, 5, 3, 2)},
        {"gqa_causal_tl", make_problem(2, 4, 2, 4, 4, 3, 2, Mask::causal_tl)},
        {"mqa_bias_div", make_problem(1, 2, 1, 3, 6, 3, 2, Mask::bias, BiasShape::bh, ScaleOp::div, 1.3f)},
    };
    for (auto& c : cases) {
        SCOPED_TRACE(c.name);
        c.p.dropout = Dropout{0.4f, 11, 3};
        const auto mask = ref_dropout_mask(c.p);
        RefOptions opt{false};
        opt.dropout = mask.get();
        SdpaInputs in = make_inputs(c.p, 23);
        displace(c.p, in, opt);
        const RefBackward g = ref_backward(c.p, in, opt);
        NaiveIn n = naive_in(c.p, in);
        n.drop = mask.get();
        check_fd("dQ", g.dQ, n, &NaiveIn::Q);
        check_fd("dK", g.dK, n, &NaiveIn::K);
        check_fd("dV", g.dV, n, &NaiveIn::V);
        // The same values from the naive backward, magnitudes included.
        const NaiveOut nb = naive_backward(n);
        expect_close("dQ", g.dQ, nb.dQ, nb.M_dQ, 1e-5);
        expect_close("dV", g.dV, nb.dV, nb.M_dV, 1e-5);
        expect_close("M_dV", g.M_dV, nb.M_dV, nb.M_dV, 1e-5);
    }
}

/// With dropout, O = P_d V over many tiles (the keep flags of every tile, the online rescaling)
/// and stats unchanged by the mask; the reference refuses to run without the mask.
TEST(RefForward, DropoutMatchesNaiveAndKeepsStats) {
    Problem p = make_problem(1, 2, 1, 130, 150, 16, 24, Mask::causal_br);
    p.dir = Dir::fwd_t;
    SdpaInputs in = make_inputs(p, 5);
    const RefForward plain = ref_forward(p, in, RefOptions{false});
    p.dropout = Dropout{0.25f, 3, 9};
    EXPECT_THROW(ref_forward(p, in, RefOptions{false}), std::invalid_argument);
    const auto mask = ref_dropout_mask(p);
    RefOptions opt{false};
    opt.dropout = mask.get();
    const RefForward f = ref_forward(p, in, opt);
    NaiveIn n = naive_in(p, in);
    n.drop = mask.get();
    const NaiveOut nf = naive_forward(n);
    expect_close("O", f.O, nf.O, nf.M_O, 1e-5);
    expect_between("M_O", f.M_O, nf.M_O, nf.M_O_hi, 1e-5);
    EXPECT_EQ(f.stats.data, plain.stats.data);
    EXPECT_NE(f.O.data, plain.O.data);
    // p = 0 is no dropout, bitwise.
    p.dropout->p = 0.f;
    EXPECT_EQ(ref_forward(p, in, opt).O.data, plain.O.data);
}

// ---------------------------------------------------------------------------------------------
// Rounding emulation.

TEST(RefEmulation, Bf16RoundsPBeforePV) {
    const Problem p = make_problem(1, 1, 1, 4, 16, 8, 8, Mask::none, BiasShape::one, ScaleOp::mul,
        std::nullopt, DType::bf16);
    SdpaInputs in = make_inputs(p, 23);
    const RefForward on = ref_forward(p, in, RefOptions{true});
    const RefForward off = ref_forward(p, in, RefOptions{false});

    double maxdiff = 0;
    for (std::size_t k = 0; k < on.O.size(); ++k)
        maxdiff = std::max(maxdiff, std::fabs(static_cast<double>(on.O.data[k]) - off.O.data[k]));
    EXPECT_GT(maxdiff, 1e-5);
    // Stats and magnitudes do not depend on the emulation.
    EXPECT_EQ(on.stats.data, off.stats.data);
    EXPECT_EQ(on.M_O.data, off.M_O.data);

    // One element by hand: row i = 1, channel 2.
    const i64 i = 1, c = 2;
    const float v = scale_tensor_value(p);
    std::vector<float> s(16);
    float m = -std::numeric_limits<float>::infinity();
    for (i64 j = 0; j < 16; ++j) {
        double dot = 0;
        for (i64 k = 0; k < 8; ++k)
            dot += static_cast<double>(in.Q.at(0, 0, i, k)) * static_cast<double>(in.K.at(0, 0, j, k));
        s[j] = static_cast<float>(dot) * v;
        m = std::max(m, s[j]);
    }
    double sum = 0;
    for (i64 j = 0; j < 16; ++j) sum += std::exp(static_cast<double>(s[j]) - m);
    double o_round = 0, o_exact = 0;
    int changed = 0;
    for (i64 j = 0; j < 16; ++j) {
        const double pj = std::exp(static_cast<double>(s[j]) - m) / sum;
        const float pr = round_to(DType::bf16, static_cast<float>(pj));
        changed += pr != static_cast<float>(pj) ? 1 : 0;
        o_round += static_cast<double>(pr) * in.V.at(0, 0, j, c);
        o_exact += pj * in.V.at(0, 0, j, c);
    }
    ASSERT_GT(changed, 0);
    EXPECT_NEAR(on.O.at(0, 0, i, c), o_round, 1e-6 * (1 + std::fabs(o_round)));
    EXPECT_NEAR(off.O.at(0, 0, i, c), o_exact, 1e-6 * (1 + std::fabs(o_exact)));
    EXPECT_GT(std::fabs(o_round - o_exact), 1e-5);
}

TEST(RefEmulation, Bf16BackwardDiffersAndF32IsNoOp) {
    for (DType dt : {DType::bf16, DType::f16, DType::f32}) {
        SCOPED_TRACE(std::string(format_as(dt)));
        const Problem p = make_problem(1, 2, 1, 6, 9, 8, 8, Mask::causal_br, BiasShape::one, ScaleOp::div,
            std::nullopt, dt);
        SdpaInputs in = make_inputs(p, 29);
        displace(p, in);
        const RefBackward on = ref_backward(p, in, RefOptions{true});
        const RefBackward off = ref_backward(p, in, RefOptions{false});
        for (auto t : {&RefBackward::dQ, &RefBackward::dK, &RefBackward::dV}) {
            if (dt == DType::f32) {
                EXPECT_EQ((on.*t).data, (off.*t).data);
            } else {
                EXPECT_NE((on.*t).data, (off.*t).data);
            }
        }
        // The magnitudes never depend on the emulation.
        EXPECT_EQ(on.M_dQ.data, off.M_dQ.data);
        EXPECT_EQ(on.M_dK.data, off.M_dK.data);
        EXPECT_EQ(on.M_dV.data, off.M_dV.data);
        const RefForward fon = ref_forward(p, in, RefOptions{true});
        const RefForward foff = ref_forward(p, in, RefOptions{false});
        if (dt == DType::f32) {
            EXPECT_EQ(fon.O.data, foff.O.data);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Determinism and argument checks.

#ifdef _OPENMP
TEST(RefDeterminism, IndependentOfThreadCount) {
    // Large enough (B*H_q*S_q*S_kv*(D_qk+D_v) ~ 9e6) for the reference to go parallel.
    const Problem p = make_problem(2, 4, 2, 150, 130, 32, 24, Mask::causal_tl);
    SdpaInputs in = make_inputs(p, 31);
    const int saved = omp_get_max_threads();
    omp_set_num_threads(1);
    const RefForward f1 = displace(p, in);
    const RefBackward g1 = ref_backward(p, in, {});
    omp_set_num_threads(3);
    const RefForward f3 = ref_forward(p, in, {false});
    const RefBackward g3 = ref_backward(p, in, {});
    omp_set_num_threads(saved);
    EXPECT_EQ(f1.O.data, f3.O.data);
    EXPECT_EQ(f1.stats.data, f3.stats.data);
    EXPECT_EQ(g1.dQ.data, g3.dQ.data);
    EXPECT_EQ(g1.dK.data, g3.dK.data);
    EXPECT_EQ(g1.dV.data, g3.dV.data);
    EXPECT_EQ(g1.M_dK.data, g3.M_dK.data);
}
#endif

// Issue 43: the magnitudes do not depend on whether the reference rounds P and dS to the io type,
// and for f16 they cover the difference the rounding makes, the subnormal range included: with dO
// scaled so that the scaled dS falls below f16's smallest normal (2^-14), the two references'
// dQ, dK, dV and O are within each other's bound, and without the subnormal share they are not.
TEST(RefIntermediates, EitherRoundingIsWithinTheBound) {
    for (const DType dt : {DType::f16, DType::bf16}) {
        SCOPED_TRACE(fmt::format("{}", dt));
        Problem p = make_problem(1, 2, 2, 40, 70, 16, 16, Mask::causal_br, BiasShape::one, ScaleOp::mul, std::nullopt, dt);
        SdpaInputs in = make_inputs(p, 77);
        for (auto& x : in.dO.data) x = round_to(dt, x * 0x1p-16f);  // tiny gradients: dS mostly subnormal in f16
        RefOptions rounds, f32;
        f32.emulate_rounding = false;
        displace(p, in, rounds);
        const RefBackward a = ref_backward(p, in, rounds), b = ref_backward(p, in, f32);
        EXPECT_EQ(a.M_dQ.data, b.M_dQ.data);
        EXPECT_EQ(a.M_dK.data, b.M_dK.data);
        EXPECT_EQ(a.M_dV.data, b.M_dV.data);
        EXPECT_NE(a.dQ.data, b.dQ.data);  // the rounding does change the gradients
        Problem pf = p;
        pf.dir = Dir::fwd_t;
        const RefForward fa = ref_forward(pf, in, rounds), fb = ref_forward(pf, in, f32);
        EXPECT_EQ(fa.M_O.data, fb.M_O.data);
        const auto within = [&](Output out, const Tensor& got, const Tensor& ref, const Tensor& mag, i64 k) {
            const Problem& q = out == Output::O ? pf : p;
            return check_output(output_rule(q, out), got, {ref, mag, k}).worst_ratio;
        };
        for (const auto* x : {&a, &b}) {
            const RefBackward& other = x == &a ? b : a;
            EXPECT_LT(within(Output::dQ, x->dQ, other.dQ, other.M_dQ, p.dims.S_kv), 1.0);
            EXPECT_LT(within(Output::dK, x->dK, other.dK, other.M_dK, p.dims.S_q), 1.0);
            EXPECT_LT(within(Output::dV, x->dV, other.dV, other.M_dV, p.dims.S_q), 1.0);
        }
        EXPECT_LT(within(Output::O, fa.O, fb.O, fb.M_O, p.dims.S_kv), 1.0);
        if (dt == DType::f16) {
            // The subnormal share is what covers it: the rounding's dQ difference is within 4 u of
            // M_dQ with the share (without it, 84 u of M_dQ on this case).
            double worst = 0;
            for (std::size_t e = 0; e < a.dQ.data.size(); ++e) {
                const double rel = unit_roundoff(DType::f16) * (b.M_dQ.data[e]);  // with the share: a bound
                worst = std::max(worst, std::fabs(a.dQ.data[e] - b.dQ.data[e]) / std::max(rel, 1e-30));
            }
            EXPECT_LT(worst, 4.0);  // within c = 4 of the magnitude that carries the share
        }
    }
}

#ifdef _OPENMP
/// One thread and two threads give bitwise identical results on a shape with many tiles,
/// GQA, a bias, bf16 rounding emulation and padding (every output and magnitude).
TEST(RefDeterminism, OneAndTwoThreadsBitwiseEqual) {
    Problem p = with_padding(make_problem(2, 4, 2, 200, 260, 48, 40, Mask::bias, BiasShape::b, ScaleOp::mul,
                                 std::nullopt, DType::bf16), {200, 150}, {260, 190});
    SdpaInputs in = make_inputs(p, 41);
    const int saved = omp_get_max_threads();
    omp_set_num_threads(1);
    const RefForward f1 = displace(p, in, default_ref_options(p));
    const RefBackward g1 = ref_backward(p, in, default_ref_options(p));
    omp_set_num_threads(2);
    const RefForward f2 = ref_forward(p, in, default_ref_options(p));
    const RefBackward g2 = ref_backward(p, in, default_ref_options(p));
    omp_set_num_threads(saved);
    for (auto t : {&RefForward::O, &RefForward::stats, &RefForward::M_O, &RefForward::M_stats})
        EXPECT_EQ((f1.*t).data, (f2.*t).data);
    for (auto t : {&RefBackward::dQ, &RefBackward::dK, &RefBackward::dV, &RefBackward::M_dQ, &RefBackward::M_dK,
             &RefBackward::M_dV})
        EXPECT_EQ((g1.*t).data, (g2.*t).data);
}

// dMask sums over batches and heads in one fixed order: bitwise the same for 1 and 2 threads.
TEST(RefDeterminism, DMaskOneAndTwoThreadsBitwiseEqual) {
    for (const BiasShape bs : {BiasShape::one, BiasShape::one_row}) {
        Problem p = make_problem(3, 4, 2, 150, 170, 32, 32, Mask::bias, bs, ScaleOp::mul, std::nullopt, DType::bf16);
        p.dmask = true;
        SdpaInputs in = make_inputs(p, 43);
        displace(p, in, default_ref_options(p));
        const int saved = omp_get_max_threads();
        omp_set_num_threads(1);
        const RefBackward g1 = ref_backward(p, in, default_ref_options(p));
        omp_set_num_threads(2);
        const RefBackward g2 = ref_backward(p, in, default_ref_options(p));
        omp_set_num_threads(saved);
        EXPECT_EQ(g1.dMask.data, g2.dMask.data);
        EXPECT_EQ(g1.M_dMask.data, g2.M_dMask.data);
    }
}

// Dropout: the keep mask is a pure function of (seed, offset, b, h, i, j), so the results do not
// depend on the thread count either.
TEST(RefDeterminism, DropoutOneAndTwoThreadsBitwiseEqual) {
    Problem p = make_problem(2, 4, 2, 150, 170, 32, 32, Mask::causal_tl, BiasShape::one, ScaleOp::mul,
            std::nullopt, DType::bf16);
    p.dropout = Dropout{0.3f, 99, 5};
    const auto mask = ref_dropout_mask(p);
    const RefOptions opt = default_ref_options(p, mask.get());
    SdpaInputs in = make_inputs(p, 43);
    const int saved = omp_get_max_threads();
    omp_set_num_threads(1);
    const RefForward f1 = displace(p, in, opt);
    const RefBackward g1 = ref_backward(p, in, opt);
    omp_set_num_threads(2);
    const RefForward f2 = ref_forward(p, in, opt);
    const RefBackward g2 = ref_backward(p, in, opt);
    omp_set_num_threads(saved);
    EXPECT_EQ(f1.O.data, f2.O.data);
    for (auto t : {&RefBackward::dQ, &RefBackward::dK, &RefBackward::dV}) EXPECT_EQ((g1.*t).data, (g2.*t).data);
}

// The one-sweep backward (ref/ref_backward.cpp) cuts the tiles into chunks that depend on the
// thread count (here 4 x 10 x 11 = 440 tiles, more than one chunk holds, so the running dQ and
// dK/dV sums are carried between chunks); every output and magnitude must still be bitwise the
// same for 1, 2 and 3 threads. GQA, causal_br with S_q != S_kv, dropout and bf16 emulation.
TEST(RefDeterminism, BackwardBitwiseEqualForOneTwoThreeThreads) {
    Problem p = make_problem(1, 4, 2, 600, 700, 32, 40, Mask::causal_br, BiasShape::one, ScaleOp::mul, std::nullopt,
        DType::bf16);
    p.dropout = Dropout{0.25f, 7, 3};
    const auto mask = ref_dropout_mask(p);
    const RefOptions opt = default_ref_options(p, mask.get());
    SdpaInputs in = make_inputs(p, 47);
    displace(p, in, opt);
    const int saved = omp_get_max_threads();
    std::vector<RefBackward> g;
    for (int threads : {1, 2, 3}) {
        omp_set_num_threads(threads);
        g.push_back(ref_backward(p, in, opt));
    }
    omp_set_num_threads(saved);
    for (std::size_t k = 1; k < g.size(); ++k)
        for (auto t : {&RefBackward::dQ, &RefBackward::dK, &RefBackward::dV, &RefBackward::M_dQ, &RefBackward::M_dK,
                 &RefBackward::M_dV})
            EXPECT_EQ((g[0].*t).data, (g[k].*t).data) << "threads " << k + 1;
}
#endif

/// A shape spanning many tiles in both directions, with D = 128 as in the models, against the
/// naive f64 reference: every element of O, stats, dQ, dK, dV and the magnitudes.
/// The displacement's forward (RefOptions::magnitudes off) gives bitwise the O and stats of the
/// full forward, and a backward that takes the forward's Q and K work (RefOptions::qk) bitwise what
/// it computes alone; a RefQK of other sizes is ignored.
TEST(RefSharing, LeanForwardAndSharedQKChangeNoBit) {
    for (const DType dt : {DType::f32, DType::bf16})
        for (const Mask m : {Mask::none, Mask::causal_br, Mask::bias}) {
            // D_v = 24 pads V's rows; S not a multiple of 64; GQA; large enough to go parallel.
            const Problem p = make_problem(2, 4, 2, 150, 130, 40, 24, m, BiasShape::b, ScaleOp::mul, std::nullopt, dt);
            SdpaInputs in = make_inputs(p, 47);
            const RefForward full = ref_forward(p, in, {});
            RefQK qk;
            RefOptions lean_opt;
            lean_opt.magnitudes = false;
            lean_opt.save_qk = &qk;
            const RefForward lean = ref_forward(p, in, lean_opt);
            EXPECT_EQ(full.O.data, lean.O.data) << fmt::format("{} {}", dt, m);
            EXPECT_EQ(full.stats.data, lean.stats.data) << fmt::format("{} {}", dt, m);
            EXPECT_TRUE(lean.M_O.empty() && lean.M_stats.empty());
            EXPECT_EQ(qk.qn.size(), static_cast<std::size_t>(2 * 4 * 150));
            displace(p, in, {});
            const RefBackward alone = ref_backward(p, in, {});
            RefOptions shared_opt;
            shared_opt.qk = &qk;
            const RefBackward shared = ref_backward(p, in, shared_opt);
            RefQK wrong{{1.0}, {1.0}, {1.f}};
            RefOptions wrong_opt;
            wrong_opt.qk = &wrong;
            const RefBackward ignored = ref_backward(p, in, wrong_opt);
            for (auto t : {&RefBackward::dQ, &RefBackward::dK, &RefBackward::dV, &RefBackward::M_dQ, &RefBackward::M_dK,
                     &RefBackward::M_dV}) {
                EXPECT_EQ((alone.*t).data, (shared.*t).data) << fmt::format("{} {}", dt, m);
                EXPECT_EQ((alone.*t).data, (ignored.*t).data) << fmt::format("{} {}", dt, m);
            }
        }
}

TEST(RefVsNaiveLarge, ManyTilesD128) {
    const Problem p = make_problem(1, 2, 1, 300, 450, 128, 128, Mask::causal_br);
    SdpaInputs in = make_inputs(p, 43);
    const RefForward f = displace(p, in);
    const RefBackward g = ref_backward(p, in, default_ref_options(p));
    const NaiveIn ni = naive_in(p, in);
    const NaiveOut nf = naive_forward(ni);
    const NaiveOut nb = naive_backward(ni);
    expect_close("O", f.O, nf.O, nf.M_O, 1e-5);
    expect_between("M_O", f.M_O, nf.M_O, nf.M_O_hi, 1e-5);
    expect_close("M_stats", f.M_stats, nf.M_stats, nf.M_stats, 1e-5);
    for (std::size_t k = 0; k < nf.stats.size(); ++k)
        ASSERT_NEAR(f.stats.data[k], nf.stats[k], 1e-5 * (1 + std::fabs(nf.stats[k]))) << "stats[" << k << "]";
    expect_close("dQ", g.dQ, nb.dQ, nb.M_dQ, 1e-5);
    expect_close("dK", g.dK, nb.dK, nb.M_dK, 1e-5);
    expect_close("dV", g.dV, nb.dV, nb.M_dV, 1e-5);
    expect_close("M_dQ", g.M_dQ, nb.M_dQ, nb.M_dQ, 1e-5);
    expect_close("M_dK", g.M_dK, nb.M_dK, nb.M_dK, 1e-5);
    expect_close("M_dV", g.M_dV, nb.M_dV, nb.M_dV, 1e-5);
}

TEST(RefArguments, WrongShapesThrow) {
    const Problem p = make_problem(1, 2, 1, 4, 4, 3, 3, Mask::bias, BiasShape::b);
    SdpaInputs in = make_inputs(p, 37);
    EXPECT_NO_THROW(ref_forward(p, in, {}));
    SdpaInputs bad = in;
    bad.K = Tensor({1, 2, 4, 3}, DType::f32);  // H_kv should be 1
    EXPECT_THROW(ref_forward(p, bad, {}), std::invalid_argument);
    bad = in;
    bad.bias = Tensor({1, 1, 4, 5}, DType::f32);  // S_kv mismatch
    EXPECT_THROW(ref_forward(p, bad, {}), std::invalid_argument);
    // Backward needs O, dO and stats.
    EXPECT_THROW(ref_backward(p, in, {}), std::invalid_argument);
}

}  // namespace
}  // namespace sdpa

// An explicit additive mask with -inf entries (imported oneDNN graphs use one) must leave every
// magnitude finite: the masked entries have P = 0 and contribute 0, not 0 * inf.
TEST(RefForward, InfiniteBiasEntriesKeepMagnitudesFinite) {
    using namespace sdpa;
    Problem p;
    p.dims = {1, 2, 2, 5, 7, 8, 8};
    p.mask = Mask::bias;
    p.bias_shape = BiasShape::bh;
    SdpaInputs in;
    in.Q = Tensor({1, 2, 5, 8}, DType::f32, 0.5f);
    in.K = Tensor({1, 2, 7, 8}, DType::f32, 0.25f);
    in.V = Tensor({1, 2, 7, 8}, DType::f32, 1.f);
    in.bias = Tensor({1, 2, 5, 7}, DType::f32, 0.f);
    for (int h = 0; h < 2; ++h)
        for (int i = 0; i < 5; ++i)
            for (int j = i + 1; j < 7; ++j) in.bias.at(0, h, i, j) = -INFINITY;
    const RefForward f = ref_forward(p, in, RefOptions{false});
    for (float m : f.M_stats.data) EXPECT_TRUE(std::isfinite(m));
    for (float m : f.M_O.data) EXPECT_TRUE(std::isfinite(m));
    // Row 0 sees key 0 only: stats = its score, 8 * 0.5 * 0.25 / sqrt(8).
    EXPECT_NEAR(f.stats.at(0, 0, 0, 0), 1.0 / std::sqrt(8.0), 1e-6);
}
