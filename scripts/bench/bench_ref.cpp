// bench_ref: the f32 reference's GFLOP/s (forward and backward) on model-shaped SDPA problems,
// next to oneDNN's f32 matmul primitive doing the same total FLOPs on the same machine.
// Figures only; not a test. Run through scripts/bench_ref.sh (docs/reference.md#its-benchmark).
//
// FLOPs (cuDNN's convention, core/flops.hpp): N = visible score elements summed over the batch
// (core's visible_scores), fwd = 2 H_q N (D_qk + D_v), bwd = 2 H_q N (3 D_qk + 2 D_v).
// The matmul baseline runs two attention-shaped f32 matmuls, [S_q x D] * [D x S_kv] ("qk")
// and [S_q x S_kv] * [S_kv x D] ("pv"), repeated until they reach the SDPA FLOP count, and the
// ratio is against the faster of the two.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <oneapi/dnnl/dnnl.hpp>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "core/problem.hpp"
#include "ref/sdpa_ref.hpp"

namespace {

using i64 = std::int64_t;
using Clock = std::chrono::steady_clock;

struct Args {
    std::vector<i64> seq{1024, 2048, 4096};
    std::vector<std::string> masks{"none", "causal_tl"};
    std::vector<std::string> dirs{"fwd", "bwd"};
    i64 b = 1, hq = 4, hkv = 1, d = 128;
    int reps = 2;
    bool matmul = true;
};

std::vector<std::string> split(const std::string& s) {
    std::vector<std::string> out;
    std::stringstream ss(s);
    for (std::string t; std::getline(ss, t, ',');) out.push_back(t);
    return out;
}

/// Parses --seq=1024,2048 --mask=none,causal_tl --dir=fwd,bwd --b= --hq= --hkv= --d= --reps=
/// --no-matmul. Returns false (and prints usage) on anything else.
bool parse(int argc, char** argv, Args& a) {
    for (int k = 1; k < argc; ++k) {
        const std::string s = argv[k];
        const auto eq = s.find('=');
        const std::string key = s.substr(0, eq), val = eq == std::string::npos ? "" : s.substr(eq + 1);
        try {
            if (key == "--seq") {
                a.seq.clear();
                for (auto& t : split(val)) a.seq.push_back(std::stoll(t));
            } else if (key == "--mask") a.masks = split(val);
            else if (key == "--dir") a.dirs = split(val);
            else if (key == "--b") a.b = std::stoll(val);
            else if (key == "--hq") a.hq = std::stoll(val);
            else if (key == "--hkv") a.hkv = std::stoll(val);
            else if (key == "--d") a.d = std::stoll(val);
            else if (key == "--reps") a.reps = std::stoi(val);
            else if (key == "--no-matmul") a.matmul = false;
            else throw std::invalid_argument(key);
        } catch (const std::exception&) {
            fmt::print(stderr,
                "usage: bench_ref [--seq=1024,2048,4096] [--mask=none,causal_tl] [--dir=fwd,bwd] [--b=1] "
                "[--hq=4] [--hkv=1] [--d=128] [--reps=2] [--no-matmul]\n(bad argument: {})\n", s);
            return false;
        }
    }
    return true;
}

void fill(sdpa::Tensor& t, std::uint32_t seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> dist(0.f, 1.f);
    for (float& x : t.data) x = dist(rng);
}

template <class F>
double best_seconds(int reps, F&& f) {
    double best = 1e300;
    for (int r = 0; r < std::max(1, reps); ++r) {
        const auto t0 = Clock::now();
        f();
        best = std::min(best, std::chrono::duration<double>(Clock::now() - t0).count());
    }
    return best;
}

/// oneDNN f32 matmul [M x K] * [K x N] repeated until `flops` are done; returns GFLOP/s.
double matmul_gflops(dnnl::engine& eng, dnnl::stream& st, i64 M, i64 K, i64 N, double flops) {
    using tag = dnnl::memory::format_tag;
    using dt = dnnl::memory::data_type;
    const dnnl::memory::desc a({M, K}, dt::f32, tag::ab), w({K, N}, dt::f32, tag::ab), c({M, N}, dt::f32, tag::ab);
    const dnnl::matmul::primitive_desc pd(eng, a, w, c);
    dnnl::matmul mm(pd);
    dnnl::memory ma(a, eng), mw(w, eng), mc(c, eng);
    for (auto* m : {&ma, &mw}) {
        auto* p = static_cast<float*>(m->map_data());
        const auto n = m->get_desc().get_size() / sizeof(float);
        for (std::size_t k = 0; k < n; ++k) p[k] = static_cast<float>((k * 2654435761u) % 1000) / 1000.f - 0.5f;
        m->unmap_data(p);
    }
    const double per = 2.0 * static_cast<double>(M) * static_cast<double>(N) * static_cast<double>(K);
    const int reps = std::max(1, static_cast<int>(std::llround(flops / per)));
    auto run = [&] {
        mm.execute(st, {{DNNL_ARG_SRC, ma}, {DNNL_ARG_WEIGHTS, mw}, {DNNL_ARG_DST, mc}});
    };
    run();  // warm-up (JIT, first touch)
    st.wait();
    const auto t0 = Clock::now();
    for (int r = 0; r < reps; ++r) run();
    st.wait();
    const double s = std::chrono::duration<double>(Clock::now() - t0).count();
    return per * reps / s * 1e-9;
}

}  // namespace

int main(int argc, char** argv) {
    Args a;
    if (!parse(argc, argv, a)) return 2;
#ifdef SDPABENCH_ONEDNN_OCL_ICD
    // The wheel's SYCL CPU runtime needs the OpenCL ICD loader pointed at libintelocl.so.
    if (std::strlen(SDPABENCH_ONEDNN_OCL_ICD) > 0 && std::getenv("OCL_ICD_FILENAMES") == nullptr)
        setenv("OCL_ICD_FILENAMES", SDPABENCH_ONEDNN_OCL_ICD, 0);
#endif
    int threads = 1;
#ifdef _OPENMP
    threads = omp_get_max_threads();
#endif
    std::unique_ptr<dnnl::engine> eng;
    std::unique_ptr<dnnl::stream> st;
    if (a.matmul) {
        try {
            eng = std::make_unique<dnnl::engine>(dnnl::engine::kind::cpu, 0);
            st = std::make_unique<dnnl::stream>(*eng);
        } catch (const dnnl::error& e) {
            fmt::print(stderr, "bench_ref: cannot create the oneDNN CPU engine ({}); use --no-matmul\n", e.what());
            return 1;
        }
    }
    fmt::print("# reference: OpenMP, {} threads; oneDNN {}.{}.{} f32 matmul: CPU engine, all cores of the machine\n",
        threads, dnnl_version()->major, dnnl_version()->minor, dnnl_version()->patch);
    fmt::print("# FLOPs: cuDNN convention over visible scores; time: best of {} runs\n", a.reps);
    fmt::print("{:<28} {:<9} {:<3} {:>9} {:>8} {:>9} {:>9} {:>9} {:>6}\n", "problem", "mask", "dir", "GFLOP",
        "ref_s", "ref_GF/s", "mm_qk", "mm_pv", "ratio");
    for (i64 S : a.seq)
        for (const auto& mask_name : a.masks) {
            sdpa::Problem p;
            p.dims = sdpa::Dims{a.b, a.hq, a.hkv, S, S, a.d, a.d};
            p.dt = sdpa::DType::f32;
            p.mask = mask_name == "causal_tl" ? sdpa::Mask::causal_tl
                     : mask_name == "causal_br" ? sdpa::Mask::causal_br
                                                : sdpa::Mask::none;
            const sdpa::Dims& d = p.dims;
            sdpa::SdpaInputs in;
            in.Q = sdpa::Tensor({d.B, d.H_q, d.S_q, d.D_qk}, sdpa::DType::f32);
            in.K = sdpa::Tensor({d.B, d.H_kv, d.S_kv, d.D_qk}, sdpa::DType::f32);
            in.V = sdpa::Tensor({d.B, d.H_kv, d.S_kv, d.D_v}, sdpa::DType::f32);
            in.dO = sdpa::Tensor({d.B, d.H_q, d.S_q, d.D_v}, sdpa::DType::f32);
            fill(in.Q, 1);
            fill(in.K, 2);
            fill(in.V, 3);
            fill(in.dO, 4);
            const sdpa::RefOptions opt = sdpa::default_ref_options(p);
            const double N = static_cast<double>(sdpa::visible_scores(p));
            for (const auto& dir : a.dirs) {
                const bool bwd = dir == "bwd";
                const double flops = 2.0 * static_cast<double>(d.H_q) * N *
                                     static_cast<double>(bwd ? 3 * d.D_qk + 2 * d.D_v : d.D_qk + d.D_v);
                double secs = 0;
                if (bwd) {
                    sdpa::RefForward f = sdpa::ref_forward(p, in, opt);
                    in.O = std::move(f.O);
                    in.stats = std::move(f.stats);
                    secs = best_seconds(a.reps, [&] { (void)sdpa::ref_backward(p, in, opt); });
                } else {
                    secs = best_seconds(a.reps, [&] { (void)sdpa::ref_forward(p, in, opt); });
                }
                const double ref = flops / secs * 1e-9;
                double qk = 0, pv = 0;
                if (a.matmul) {
                    qk = matmul_gflops(*eng, *st, S, d.D_qk, S, flops);
                    pv = matmul_gflops(*eng, *st, S, S, d.D_v, flops);
                }
                const double best = std::max(qk, pv);
                fmt::print("{:<28} {:<9} {:<3} {:>9.1f} {:>8.3f} {:>9.1f} {:>9.1f} {:>9.1f} {:>6}\n",
                    sdpa::descriptor(d), mask_name, dir, flops * 1e-9, secs, ref, qk, pv,
                    best > 0 ? fmt::format("{:.0f}%", 100 * ref / best) : std::string("-"));
                std::fflush(stdout);
            }
        }
    return 0;
}
