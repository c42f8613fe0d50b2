// What a vendor ran (core/implementation.hpp): the reference-fallback rule, the --impl and
// --skip-impl patterns and the SKIPPED reasons they give.
#include "core/implementation.hpp"

#include <gtest/gtest.h>

namespace sdpa {
namespace {

/// oneDNN's bf16 backward with the scale as an f32 host scalar (oneDNN 3.13.2 on an AVX-512 CPU,
/// ONEDNN_VERBOSE=1): the QK^T matmul and the broadcast binaries on ref:any.
Implementation host_scalar_backward() {
    return {"larger_partition_kernel_t",
        {{"", "matmul", "ref:any", "1x8x512x64:1x8x64x512", 16967.2}, {"", "binary", "ref:any", "1x8x512x512:1x8x512x1", 1115.8},
            {"", "eltwise", "jit:avx512_core_bf16", "1x8x512x512", 0.9},
            {"", "matmul", "brg_matmul:avx512_core_bf16", "1x8x512x512:1x8x512x64", 42.9}}};
}

TEST(Implementation, ReferenceNamesAreRefAndRefUnderscore) {
    EXPECT_TRUE(is_reference_impl("ref:any"));
    EXPECT_TRUE(is_reference_impl("ref_fused:any"));
    EXPECT_TRUE(is_reference_impl("ref"));
    EXPECT_FALSE(is_reference_impl("brg_matmul:avx512_core_bf16"));
    EXPECT_FALSE(is_reference_impl("jit:uni"));
    EXPECT_FALSE(is_reference_impl("gemm:jit"));
    EXPECT_FALSE(is_reference_impl("refined:any"));  // a word that only starts with "ref"
    EXPECT_FALSE(is_reference_impl(""));
}

TEST(Implementation, FallbackNamesTheMatmulNotTheElementwiseParts) {
    const Implementation im = host_scalar_backward();
    EXPECT_EQ(reference_fallback(im), "matmul ref:any (1x8x512x64:1x8x64x512)");
    EXPECT_EQ(reference_parts(im), 2);
    // The same backward with the scale as a tensor: the matmuls are brgemm, the binaries still ref.
    Implementation tensor = im;
    tensor.parts[0].impl = "brg_matmul:avx512_core_bf16";
    EXPECT_EQ(reference_fallback(tensor), "");
    EXPECT_EQ(reference_parts(tensor), 1);
    // A softmax on a reference kernel is flagged too; several are joined.
    tensor.parts.push_back({"partition 1", "softmax", "ref:any", "", -1});
    tensor.parts.push_back({"partition 1", "matmul", "ref_fused:any", "2x2:2x2", -1});
    EXPECT_EQ(reference_fallback(tensor), "softmax ref:any; matmul ref_fused:any (2x2:2x2)");
    EXPECT_EQ(reference_fallback(Implementation{"cuDNN plan", {}}), "");
}

TEST(Implementation, PatternsAreSubstringsOrGlobs) {
    EXPECT_TRUE(impl_pattern_matches("ref", "ref:any"));  // benchdnn's substring
    EXPECT_TRUE(impl_pattern_matches("gemm", "x64:gemm:jit"));
    EXPECT_FALSE(impl_pattern_matches("ref", "brg_matmul:avx512_core_bf16"));
    EXPECT_TRUE(impl_pattern_matches("larger_*", "larger_partition_kernel_t"));  // a glob: the whole name
    EXPECT_FALSE(impl_pattern_matches("larger", "sdp_primitive_kernel_t"));
    EXPECT_FALSE(impl_pattern_matches("partition*", "larger_partition_kernel_t"));
    EXPECT_TRUE(impl_pattern_matches("*partition*", "larger_partition_kernel_t"));
    EXPECT_TRUE(impl_pattern_matches("brg_matmul:avx512_core_bf1[6]", "brg_matmul:avx512_core_bf16"));
}

TEST(Implementation, SelectionSkipsWithTheNameItGot) {
    const Implementation im = host_scalar_backward();
    EXPECT_EQ(impl_excluded(im, {}, true), "");
    EXPECT_EQ(impl_excluded(im, {{}, {"ref"}}, false),
            "implementation 'larger_partition_kernel_t': its matmul ran 'ref:any', which matches --skip-impl=ref");
    EXPECT_EQ(impl_excluded(im, {{}, {"sdp_*", "larger*"}}, false),
            "implementation 'larger_partition_kernel_t' matches --skip-impl=larger*");
    // --impl decides only once the plan ran (a part listed then may match).
    EXPECT_EQ(impl_excluded(im, {{"sdp_primitive_kernel_t"}, {}}, false), "");
    EXPECT_EQ(impl_excluded(im, {{"sdp_primitive_kernel_t", "micro*"}, {}}, true),
            "implementation 'larger_partition_kernel_t' matches no --impl pattern (sdp_primitive_kernel_t,micro*)");
    EXPECT_EQ(impl_excluded(im, {{"brg_matmul"}, {}}, true), "");  // a part matches
    EXPECT_EQ(impl_excluded(Implementation{}, {{"x"}, {}}, true), "implementation (not named) matches no --impl pattern (x)");
    EXPECT_EQ(impl_excluded(Implementation{}, {{}, {"x"}}, true), "");
    // A part's place is named when the plan has several partitions.
    Implementation two = im;
    two.parts[0].where = "partition 1";
    EXPECT_EQ(impl_excluded(two, {{}, {"ref:*"}}, true),
            "implementation 'larger_partition_kernel_t': its matmul ran 'ref:any' (partition 1), which matches "
            "--skip-impl=ref:*");
}

TEST(Implementation, Descriptions) {
    EXPECT_EQ(describe(BoundTensor{"K", "bf16", {1, 2, 1, 64, 32}, {4096, 2048, 2048, 32, 1}}),
            "K bf16 [1,2,1,64,32] strides [4096,2048,2048,32,1]");
    EXPECT_EQ(describe(BoundTensor{"scale", "f32", {}, {}}), "scale f32 host scalar");
    EXPECT_EQ(describe(host_scalar_backward().parts[0]),
            "matmul ref:any 1x8x512x64:1x8x64x512 1.697e+04 ms (reference implementation)");
    EXPECT_EQ(describe(ImplPart{"partition 0", "eltwise", "jit:avx512_core_bf16", "", -1}),
            "partition 0: eltwise jit:avx512_core_bf16");
}

}  // namespace
}  // namespace sdpa
