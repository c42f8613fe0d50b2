#include "ref/sdpa_ref.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace sdpa {

namespace {

using i64 = std::int64_t;

constexpr float kInf = std::numeric_limits<float>::infinity();
/// Keys per block in the backward column phase.
constexpr i64 kJB = 8;
/// Below this many multiply-adds (B*H_q*S_q*S_kv*(D_qk+D_v)) the reference runs on one
/// thread: tiny cases would spend longer in OpenMP barriers than in arithmetic.
constexpr double kParallelWork = 1 << 20;

double work(const Dims& d) {
    return static_cast<double>(d.B) * static_cast<double>(d.H_q) * static_cast<double>(d.S_q) *
           static_cast<double>(d.S_kv) * static_cast<double>(d.D_qk + d.D_v);
}

/// sum_k a_k * b_k in f64. Each product of two floats is exact in f64; only the order of
/// the additions (fixed at compile time by the SIMD width) is not the textbook one.
inline double dot_f64(const float* a, const float* b, i64 n) {
    double acc = 0.0;
#pragma omp simd reduction(+ : acc)
    for (i64 k = 0; k < n; ++k) acc += static_cast<double>(a[k]) * static_cast<double>(b[k]);
    return acc;
}

/// acc_k += w * x_k and macc_k += mw * |x_k|, both in f64 (the two are always needed together:
/// a value and its magnitude bound).
inline void axpy2_f64(double* acc, double* macc, double w, double mw, const float* x, i64 n) {
#pragma omp simd
    for (i64 k = 0; k < n; ++k) {
        const double xv = static_cast<double>(x[k]);
        acc[k] += w * xv;
        macc[k] += mw * std::fabs(xv);
    }
}

void check_dims(const Tensor& t, const char* name, std::array<i64, 4> want) {
    if (t.dims != want || t.size() != static_cast<std::size_t>(want[0] * want[1] * want[2] * want[3]))
        throw std::invalid_argument(fmt::format("reference: {} has dims [{}], expected [{}]", name,
            fmt::join(t.dims, ","), fmt::join(want, ",")));
}

void check_inputs(const Problem& p, const SdpaInputs& in, bool backward) {
    const Dims& d = p.dims;
    if (d.B <= 0 || d.H_q <= 0 || d.H_kv <= 0 || d.S_q <= 0 || d.S_kv <= 0 || d.D_qk <= 0 || d.D_v <= 0)
        throw std::invalid_argument("reference: every dimension must be positive");
    if (d.H_q % d.H_kv != 0)
        throw std::invalid_argument(
            fmt::format("reference: H_q = {} is not a multiple of H_kv = {}", d.H_q, d.H_kv));
    check_dims(in.Q, "Q", {d.B, d.H_q, d.S_q, d.D_qk});
    check_dims(in.K, "K", {d.B, d.H_kv, d.S_kv, d.D_qk});
    check_dims(in.V, "V", {d.B, d.H_kv, d.S_kv, d.D_v});
    if (p.mask == Mask::bias) {
        const auto& bd = in.bias.dims;
        const bool ok = (bd[0] == 1 || bd[0] == d.B) && (bd[1] == 1 || bd[1] == d.H_q) &&
                        (bd[2] == 1 || bd[2] == d.S_q) && bd[3] == d.S_kv &&
                        in.bias.size() == static_cast<std::size_t>(bd[0] * bd[1] * bd[2] * bd[3]);
        if (!ok)
            throw std::invalid_argument(fmt::format(
                "reference: bias has dims [{}], expected [1|{},1|{},1|{},{}]", fmt::join(bd, ","), d.B,
                d.H_q, d.S_q, d.S_kv));
    }
    if (backward) {
        check_dims(in.O, "O", {d.B, d.H_q, d.S_q, d.D_v});
        check_dims(in.dO, "dO", {d.B, d.H_q, d.S_q, d.D_v});
        check_dims(in.stats, "stats", {d.B, d.H_q, d.S_q, 1});
    }
}

/// Computes one row of masked, scaled scores exactly as the vendor graph does: the dot product
/// in f64, rounded once to f32, the scale op in f32, then the bias add in f32.
struct Scorer {
    const Problem& p;
    const Tensor& Q;
    const Tensor& K;
    const Tensor* bias;  ///< null unless p.mask == Mask::bias
    float v;             ///< scale tensor value
    i64 group;           ///< query heads per kv head

    Scorer(const Problem& pr, const SdpaInputs& in)
        : p(pr), Q(in.Q), K(in.K), bias(pr.mask == Mask::bias ? &in.bias : nullptr),
          v(scale_tensor_value(pr)), group(pr.dims.H_q / pr.dims.H_kv) {}

    /// Fills, for every key j of row (b, h, i): vis[j] (visible under the mask), s[j] (final
    /// score), pre[j] (scaled score before the mask) and mv[j] (additive mask value, 0 without
    /// a bias). Entries of invisible keys are left unspecified except vis[j] = 0.
    void row(i64 b, i64 h, i64 i, float* s, float* pre, float* mv, unsigned char* vis) const {
        const Dims& d = p.dims;
        const float* q = &Q.data[Q.offset(b, h, i, 0)];
        const i64 hk = h / group;
        const float* brow = nullptr;
        if (bias) {
            const auto& bd = bias->dims;
            brow = &bias->data[bias->offset(bd[0] == 1 ? 0 : b, bd[1] == 1 ? 0 : h, bd[2] == 1 ? 0 : i, 0)];
        }
        for (i64 j = 0; j < d.S_kv; ++j) {
            vis[j] = visible(p, b, i, j) ? 1 : 0;
            if (!vis[j]) continue;
            const float* k = &K.data[K.offset(b, hk, j, 0)];
            float x = static_cast<float>(dot_f64(q, k, d.D_qk));
            x = p.scale_op == ScaleOp::mul ? x * v : x / v;
            pre[j] = x;
            const float m = brow ? brow[j] : 0.f;
            mv[j] = m;
            s[j] = brow ? x + m : x;
        }
    }
};

}  // namespace

RefForward ref_forward(const Problem& p, const SdpaInputs& in, const RefOptions& opt) {
    check_inputs(p, in, false);
    const Dims& d = p.dims;
    // Emulated rounding of P to the io dtype; for f32 it must stay a no-op (P kept in f64).
    const bool emul = opt.emulate_rounding && p.dt != DType::f32;
    const Scorer sc(p, in);

    RefForward r;
    r.O = Tensor({d.B, d.H_q, d.S_q, d.D_v}, DType::f32);
    r.M_O = Tensor({d.B, d.H_q, d.S_q, d.D_v}, DType::f32);
    r.stats = Tensor({d.B, d.H_q, d.S_q, 1}, DType::f32);
    r.M_stats = Tensor({d.B, d.H_q, d.S_q, 1}, DType::f32);
    const double sqrt_skv = std::sqrt(static_cast<double>(d.S_kv));

#pragma omp parallel if (work(d) >= kParallelWork)
    {
        std::vector<float> s(static_cast<std::size_t>(d.S_kv)), pre(s.size()), mv(s.size());
        std::vector<unsigned char> vis(s.size());
        std::vector<double> acc(static_cast<std::size_t>(d.D_v)), macc(acc.size());

        // Rows are independent; causal rows differ in cost, hence the dynamic schedule.
#pragma omp for collapse(3) schedule(dynamic, 4)
        for (i64 b = 0; b < d.B; ++b)
            for (i64 h = 0; h < d.H_q; ++h)
                for (i64 i = 0; i < d.S_q; ++i) {
                    sc.row(b, h, i, s.data(), pre.data(), mv.data(), vis.data());
                    const i64 hk = h / sc.group;
                    float m = -kInf;
                    for (i64 j = 0; j < d.S_kv; ++j)
                        if (vis[j]) m = std::max(m, s[j]);
                    float* o = &r.O.data[r.O.offset(b, h, i, 0)];
                    float* mo = &r.M_O.data[r.M_O.offset(b, h, i, 0)];
                    const std::size_t si = r.stats.offset(b, h, i, 0);
                    if (m == -kInf) {
                        // Fully masked row: nothing to attend to. O = 0, M_O = 0,
                        // stats = +inf, and M_stats = 1 + sqrt(S_kv) (its P-weighted sum is empty).
                        std::fill(o, o + d.D_v, 0.f);
                        std::fill(mo, mo + d.D_v, 0.f);
                        r.stats.data[si] = kInf;
                        r.M_stats.data[si] = static_cast<float>(1.0 + sqrt_skv);
                        continue;
                    }
                    double sum = 0.0;
                    for (i64 j = 0; j < d.S_kv; ++j)
                        if (vis[j]) sum += std::exp(static_cast<double>(s[j]) - static_cast<double>(m));
                    r.stats.data[si] = static_cast<float>(static_cast<double>(m) + std::log(sum));
                    std::fill(acc.begin(), acc.end(), 0.0);
                    std::fill(macc.begin(), macc.end(), 0.0);
                    double mstat = 0.0;
                    for (i64 j = 0; j < d.S_kv; ++j) {
                        if (!vis[j]) continue;
                        const double pj = std::exp(static_cast<double>(s[j]) - static_cast<double>(m)) / sum;
                        // O uses P rounded like the vendor's TypeCast; M_O the exact P.
                        const double pt =
                            emul ? static_cast<double>(round_to(p.dt, static_cast<float>(pj))) : pj;
                        axpy2_f64(acc.data(), macc.data(), pt, pj, &in.V.data[in.V.offset(b, hk, j, 0)], d.D_v);
                        mstat += pj * (std::fabs(static_cast<double>(pre[j])) + std::fabs(static_cast<double>(mv[j])));
                    }
                    for (i64 k = 0; k < d.D_v; ++k) {
                        o[k] = static_cast<float>(acc[k]);
                        mo[k] = static_cast<float>(macc[k]);
                    }
                    r.M_stats.data[si] = static_cast<float>(1.0 + sqrt_skv + mstat);
                }
    }
    return r;
}

RefBackward ref_backward(const Problem& p, const SdpaInputs& in, const RefOptions& opt) {
    check_inputs(p, in, true);
    const Dims& d = p.dims;
    const bool emul = opt.emulate_rounding && p.dt != DType::f32;
    const Scorer sc(p, in);
    const bool mul = p.scale_op == ScaleOp::mul;
    const double v = static_cast<double>(sc.v);
    // Derivative of the scale op: d(x*v)/dx = v, d(x/v)/dx = 1/v.
    const double gabs = std::fabs(mul ? v : 1.0 / v);
    const i64 Sq = d.S_q, Skv = d.S_kv, Dqk = d.D_qk, Dv = d.D_v;

    RefBackward r;
    r.dQ = Tensor({d.B, d.H_q, Sq, Dqk}, DType::f32);
    r.M_dQ = Tensor({d.B, d.H_q, Sq, Dqk}, DType::f32);
    r.dK = Tensor({d.B, d.H_kv, Skv, Dqk}, DType::f32);
    r.M_dK = Tensor({d.B, d.H_kv, Skv, Dqk}, DType::f32);
    r.dV = Tensor({d.B, d.H_kv, Skv, Dv}, DType::f32);
    r.M_dV = Tensor({d.B, d.H_kv, Skv, Dv}, DType::f32);

    // The scaled dS as it enters the dQ/dK matmuls (the division stays a division, as in the
    // vendor graph), optionally rounded to the io dtype.
    auto ds_scaled = [&](double ds) {
        const double x = mul ? ds * v : ds / v;
        return emul ? static_cast<double>(round_to(p.dt, static_cast<float>(x))) : x;
    };
    // P as it enters the dV matmul.
    auto p_rounded = [&](double pv) {
        return emul ? static_cast<double>(round_to(p.dt, static_cast<float>(pv))) : pv;
    };

    // Per (b, h_q): P and the unscaled dS = P o (dP - D), row-major S_q x S_kv in f64 (0 for
    // masked keys), and r_i. Per (b, h_kv): f64 accumulators for dK, dV and their magnitudes,
    // summed over the group's query heads in head order (deterministic).
    const auto nm = static_cast<std::size_t>(Sq * Skv);
    std::vector<double> Pm(nm), dSm(nm), rr(static_cast<std::size_t>(Sq));
    std::vector<double> dKa(static_cast<std::size_t>(Skv * Dqk)), mdKa(dKa.size());
    std::vector<double> dVa(static_cast<std::size_t>(Skv * Dv)), mdVa(dVa.size());

#pragma omp parallel if (work(d) >= kParallelWork)
    {
        std::vector<float> s(static_cast<std::size_t>(Skv)), pre(s.size()), mv(s.size());
        std::vector<unsigned char> vis(s.size());
        std::vector<double> acc(static_cast<std::size_t>(Dqk)), macc(acc.size());

        for (i64 b = 0; b < d.B; ++b)
            for (i64 hk = 0; hk < d.H_kv; ++hk) {
#pragma omp for schedule(static)
                for (std::size_t k = 0; k < dKa.size(); ++k) dKa[k] = mdKa[k] = 0.0;
#pragma omp for schedule(static)
                for (std::size_t k = 0; k < dVa.size(); ++k) dVa[k] = mdVa[k] = 0.0;

                for (i64 h = hk * sc.group; h < (hk + 1) * sc.group; ++h) {
                    // Row phase: P, dP, D, dS for each query row, and dQ, M_dQ from them.
#pragma omp for schedule(dynamic, 4)
                    for (i64 i = 0; i < Sq; ++i) {
                        sc.row(b, h, i, s.data(), pre.data(), mv.data(), vis.data());
                        const double st = static_cast<double>(in.stats.data[in.stats.offset(b, h, i, 0)]);
                        const float* dO = &in.dO.data[in.dO.offset(b, h, i, 0)];
                        const float* O = &in.O.data[in.O.offset(b, h, i, 0)];
                        const double Di = dot_f64(dO, O, Dv);
                        double r2 = 0.0;
                        for (i64 k = 0; k < Dv; ++k) {
                            const double t = static_cast<double>(dO[k]) * static_cast<double>(O[k]);
                            r2 += t * t;
                        }
                        const double ri = std::sqrt(r2);
                        rr[static_cast<std::size_t>(i)] = ri;
                        double* Prow = &Pm[static_cast<std::size_t>(i * Skv)];
                        double* dSrow = &dSm[static_cast<std::size_t>(i * Skv)];
                        std::fill(acc.begin(), acc.end(), 0.0);
                        std::fill(macc.begin(), macc.end(), 0.0);
                        for (i64 j = 0; j < Skv; ++j) {
                            // stats = +inf (fully masked row) gives P = 0 and so dQ = 0 exactly.
                            if (!vis[j] || st == static_cast<double>(kInf)) {
                                Prow[j] = 0.0;
                                dSrow[j] = 0.0;
                                continue;
                            }
                            const double pij = std::exp(static_cast<double>(s[j]) - st);
                            const double dP = dot_f64(dO, &in.V.data[in.V.offset(b, hk, j, 0)], Dv);
                            const double ds = pij * (dP - Di);
                            Prow[j] = pij;
                            dSrow[j] = ds;
                            // W_ij = P_ij (|dP_ij - D_i| + r_i) = |dS_ij| + P_ij r_i.
                            const double w = std::fabs(ds) + pij * ri;
                            axpy2_f64(acc.data(), macc.data(), ds_scaled(ds), w,
                                &in.K.data[in.K.offset(b, hk, j, 0)], Dqk);
                        }
                        float* dq = &r.dQ.data[r.dQ.offset(b, h, i, 0)];
                        float* mdq = &r.M_dQ.data[r.M_dQ.offset(b, h, i, 0)];
                        for (i64 k = 0; k < Dqk; ++k) {
                            dq[k] = static_cast<float>(acc[k]);
                            mdq[k] = static_cast<float>(gabs * macc[k]);
                        }
                    }  // implicit barrier: Pm, dSm, rr complete for head h

                    // Column phase: each key row j belongs to one thread, so the accumulators
                    // are race-free; for each j, i runs in order, so the sums do not depend on
                    // the thread count. Keys go in blocks of kJB so that one cache line of a
                    // P/dS row and one Q/dO row serve the whole block.
#pragma omp for schedule(dynamic, 1)
                    for (i64 j0 = 0; j0 < Skv; j0 += kJB) {
                        const i64 j1 = std::min(Skv, j0 + kJB);
                        for (i64 i = 0; i < Sq; ++i) {
                            const float* q = &in.Q.data[in.Q.offset(b, h, i, 0)];
                            const float* dO = &in.dO.data[in.dO.offset(b, h, i, 0)];
                            const double ri = rr[static_cast<std::size_t>(i)];
                            for (i64 j = j0; j < j1; ++j) {
                                if (!visible(p, b, i, j)) continue;
                                const auto ij = static_cast<std::size_t>(i * Skv + j);
                                const double pij = Pm[ij];
                                const double ds = dSm[ij];
                                if (pij == 0.0 && ds == 0.0) continue;  // would add exact zeros only
                                const double w = std::fabs(ds) + pij * ri;
                                axpy2_f64(&dKa[static_cast<std::size_t>(j * Dqk)],
                                    &mdKa[static_cast<std::size_t>(j * Dqk)], ds_scaled(ds), w, q, Dqk);
                                axpy2_f64(&dVa[static_cast<std::size_t>(j * Dv)],
                                    &mdVa[static_cast<std::size_t>(j * Dv)], p_rounded(pij), pij, dO, Dv);
                            }
                        }
                    }  // implicit barrier before the next head reuses Pm, dSm
                }

#pragma omp for schedule(static)
                for (i64 j = 0; j < Skv; ++j) {
                    for (i64 k = 0; k < Dqk; ++k) {
                        const auto a = static_cast<std::size_t>(j * Dqk + k);
                        r.dK.data[r.dK.offset(b, hk, j, k)] = static_cast<float>(dKa[a]);
                        r.M_dK.data[r.M_dK.offset(b, hk, j, k)] = static_cast<float>(gabs * mdKa[a]);
                    }
                    for (i64 k = 0; k < Dv; ++k) {
                        const auto a = static_cast<std::size_t>(j * Dv + k);
                        r.dV.data[r.dV.offset(b, hk, j, k)] = static_cast<float>(dVa[a]);
                        r.M_dV.data[r.M_dV.offset(b, hk, j, k)] = static_cast<float>(mdVa[a]);
                    }
                }  // implicit barrier before the accumulators are cleared for the next (b, h_kv)
            }
    }
    return r;
}

}  // namespace sdpa
