// The backend registry (backends/registry.hpp): one row per backend, compiled in or not; the
// engine column; a backend missing from the build is SKIPPED with its reason; and the GPU layer's
// device description and peak rates (backends/cuda/gpu_spec.hpp), which need no GPU.
#include "backends/registry.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <vector>
#include <string>

#include "backends/cuda/gpu_spec.hpp"

namespace sdpa {
namespace {

TEST(Registry, EveryBackendHasOneRowAndItsEngine) {
    std::set<std::string> names;
    for (const BackendRow& r : backend_table()) {
        EXPECT_TRUE(names.insert(r.name).second) << r.name;
        EXPECT_EQ(r.family, r.name.ends_with(':')) << r.name;
        EXPECT_EQ(r.compiled_in(), r.missing.empty()) << r.name;  // a row lacking its factory says why
    }
    for (const char* n : {"onednn", "cudnn", "torch:math", "torch:flash", "torch:efficient", "torch:cudnn", "torch:math:cuda",
             "torch:flash:cuda", "ref", "faulty:", "test:"})
        EXPECT_TRUE(names.count(n)) << n;
    EXPECT_EQ(engine_of("cudnn"), Engine::gpu);
    EXPECT_EQ(engine_of("torch:cudnn"), Engine::gpu);
    EXPECT_EQ(engine_of("torch:efficient"), Engine::gpu);
    EXPECT_EQ(engine_of("torch:flash:cuda"), Engine::gpu);
    EXPECT_EQ(engine_of("torch:math:cuda"), Engine::gpu);
    EXPECT_EQ(engine_of("onednn"), Engine::cpu);
    EXPECT_EQ(engine_of("torch:flash"), Engine::cpu);
    EXPECT_EQ(engine_of("faulty:stats_log2"), Engine::cpu);
    EXPECT_EQ(find_backend_row("faulty:anything")->name, "faulty:");
    EXPECT_EQ(find_backend_row("nope"), nullptr);
    EXPECT_EQ(find_backend_row("onednnx"), nullptr);
}

TEST(Registry, PrefixesAndLibrariesComeFromTheTable) {
    // A family's or a variant's prefix is the row's: the factory gets the kind alone.
    for (const BackendRow& r : backend_table()) {
        if (r.family) {
            EXPECT_EQ(r.prefix, r.name) << r.name;
        }
        EXPECT_TRUE(r.name.starts_with(r.prefix)) << r.name;
    }
    EXPECT_EQ(find_backend_row("torch:flash")->prefix, kTorchPrefix);
    EXPECT_EQ(family_names(kTestPrefix), (std::vector<std::string>{"test:sleep", "test:segv", "test:stateful", "test:fp8", "test:slow", "test:ref_f32",
                      "test:ref_rounded", "test:orphan", "test:device"}));
    for (const std::string& n : family_names(kTestPrefix)) EXPECT_EQ(make_backend(n)->name(), n);
    EXPECT_TRUE(family_names("nope:").empty());
    EXPECT_EQ(library_keys(), (std::vector<std::string>{"onednn", "cudnn", "torch"}));
    if (find_backend_row("torch:math")->compiled_in()) {
        EXPECT_EQ(library_version_of("torch"), make_backend("torch:math")->library_version());
    }
    EXPECT_EQ(library_version_of("nope"), "");
}

TEST(Registry, ListedNamesAreTheCompiledRowsAndMissingOnesSayWhy) {
    std::size_t listed = 0, compiled = 0, missing = 0;
    for (const BackendRow& r : backend_table())
        if (r.listed) {
            ++listed;
            (r.compiled_in() ? compiled : missing)++;
        }
    EXPECT_EQ(backend_names().size(), compiled);
    EXPECT_EQ(missing_backend_names().size(), missing);
    EXPECT_EQ(compiled + missing, listed);
    for (const std::string& m : missing_backend_names()) EXPECT_NE(m.find(" ("), std::string::npos) << m;
    EXPECT_NE(std::find(backend_names().begin(), backend_names().end(), "ref"), backend_names().end());
}

TEST(Registry, UnknownNamesGiveNoBackendKnownOnesAlwaysOne) {
    EXPECT_EQ(make_backend("nope"), nullptr);
    EXPECT_EQ(make_backend("faulty:no_such_fault"), nullptr);
    EXPECT_EQ(make_backend("test:no_such_kind"), nullptr);
    for (const BackendRow& r : backend_table())
        if (!r.family) {
            const auto be = make_backend(r.name);
            ASSERT_NE(be, nullptr) << r.name;
            if (!r.compiled_in()) {  // this build lacks it: SKIPPED with the row's reason
                const auto no = be->support(Problem{});
                ASSERT_TRUE(no) << r.name;
                EXPECT_EQ(no->status, Status::skipped);
                EXPECT_NE(no->reason.find(r.missing), std::string::npos);
            }
        }
}

// A backend answers to the name it was made by (its row's, or PREFIX + KIND): the registry and
// the family tables are the only places that spell one.
TEST(Registry, EveryBackendIsCalledByItsRowsName) {
    for (const BackendRow& r : backend_table()) {
        const std::vector<std::string> names = r.family ? family_names(r.name) : std::vector<std::string>{r.name};
        EXPECT_FALSE(names.empty()) << r.name;
        for (const std::string& n : names) {
            const auto be = make_backend(n);
            ASSERT_NE(be, nullptr) << n;
            EXPECT_EQ(be->name(), n);
        }
    }
}

// The --backend knob's help is written from the rows: every row, every torch variant and every
// test kind is in it, each prefix's rows once.
TEST(Registry, BackendKnobHelpComesFromTheRows) {
    const std::string help(backend_knob_help());
    for (const BackendRow& r : backend_table()) {
        EXPECT_NE(help.find(r.what), std::string::npos) << r.name;
        if (r.prefix.empty()) EXPECT_NE(help.find(r.name + " ("), std::string::npos) << r.name;
        if (r.family && r.name == kTestPrefix)
            for (const std::string& n : family_names(r.name)) EXPECT_NE(help.find(n + ": "), std::string::npos) << n;
        if (!r.family && !r.prefix.empty()) EXPECT_NE(help.find(r.name.substr(r.prefix.size())), std::string::npos) << r.name;
    }
    EXPECT_NE(help.find("torch:VARIANT ("), std::string::npos);
    EXPECT_EQ(help.find("torch:VARIANT", help.find("torch:VARIANT") + 1), std::string::npos);
    EXPECT_EQ(backend_list({}), "");
    EXPECT_EQ(backend_list({"a"}), "a");
    EXPECT_EQ(backend_list({"a", "b"}), "a and b");
    EXPECT_EQ(backend_list({"a", "b", "c"}), "a, b and c");
    EXPECT_EQ(backend_list(backends_needing_isolate()), "test:sleep and test:segv");
}

TEST(Registry, MissingBackendIsSkippedWithItsReason) {
    const auto be = make_missing_backend("cudnn", "configured without the CUDA Toolkit");
    EXPECT_EQ(be->name(), "cudnn");
    const auto no = be->support(Problem{});
    ASSERT_TRUE(no);
    EXPECT_EQ(no->status, Status::skipped);
    EXPECT_EQ(no->reason, "backend cudnn is not compiled into this build: configured without the CUDA Toolkit");
    try {
        be->prepare(Problem{}, SdpaInputs{});
        FAIL() << "prepare() must throw";
    } catch (const BackendError& e) {
        EXPECT_EQ(e.status, Status::skipped);
    }
}

TEST(GpuSpec, PeakDenseRatesOfPublishedArchitectures) {
    cuda::GpuSpec h200;
    h200.name = "NVIDIA H200";
    h200.sm_major = 9;
    h200.sm_count = 132;
    h200.sm_clock_mhz = 1980;
    // 132 x 4096 x 1.98 GHz = 1070.5 TFLOP/s bf16 (989.4 at the datasheet's 1830 MHz); fp8 twice that.
    EXPECT_NEAR(cuda::peak_dense_tflops(h200, DType::bf16), 1070.5, 0.1);
    EXPECT_NEAR(cuda::peak_dense_tflops(h200, DType::f16), 1070.5, 0.1);
    EXPECT_NEAR(cuda::peak_dense_tflops(h200, DType::e4m3), 2141.0, 0.1);
    EXPECT_EQ(cuda::peak_dense_tflops(h200, DType::f32), 0.0);  // no f32 tensor-core rate stated
    h200.sm_clock_mhz = 1830;
    EXPECT_NEAR(cuda::peak_dense_tflops(h200, DType::bf16), 989.4, 0.1);
    cuda::GpuSpec a100{"NVIDIA A100", 8, 0, 108, 1410, 1215, 40 << 20, 40ll << 30, 12000, 12000};
    EXPECT_NEAR(cuda::peak_dense_tflops(a100, DType::bf16), 311.9, 0.1);
    EXPECT_EQ(cuda::peak_dense_tflops(a100, DType::e4m3), 0.0);
    cuda::GpuSpec unknown{"future GPU", 12, 1, 100, 2000, 0, 0, 0, 0, 0};
    EXPECT_EQ(cuda::peak_dense_tflops(unknown, DType::bf16), 0.0);
    EXPECT_EQ(cuda::describe(a100), "NVIDIA A100 (sm_80, 108 SMs, 1410 MHz, L2 40 MiB, 40 GiB, driver 12.0, runtime 12.0)");
}

}  // namespace
}  // namespace sdpa
