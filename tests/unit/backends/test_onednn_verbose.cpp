// oneDNN's verbose lines read back (backends/onednn/onednn_verbose.hpp): lines recorded from
// oneDNN 3.13.2 on this project's CI CPU (ONEDNN_VERBOSE=1 and 2), and the stdout capture.
#include "backends/onednn/onednn_verbose.hpp"

#include <cstdio>

#include <gtest/gtest.h>

namespace sdpa::onednn {
namespace {

// A bf16 backward with the scale as an f32 host scalar, run (exec lines), abridged: its info
// header, the host-scalar pseudo partition, three of its primitives and the partition's line.
constexpr const char* kExec =
    "onednn_verbose,v1,info,oneDNN v3.13.2 (commit c852e73ef73b861f95d3b96fbe7518b330bc24d5)\n"
    "onednn_verbose,v1,info,cpu,runtime:SYCL,nthr:2\n"
    "onednn_verbose,v1,primitive,info,template:operation,engine,primitive,implementation,prop_kind,memory_descriptors,"
    "attributes,auxiliary,problem_desc,exec_time\n"
    "onednn_verbose,v1,graph,info,template:operation,engine,partition_id,partition_kind,op_names,data_formats,"
    "logical_tensors,fpmath_mode,implementation,backend,exec_time\n"
    "onednn_verbose,v1,graph,exec,cpu,_host_scalar(_host_scalar),18446744073709551615,inputs:{f32:4:strided:host_scalar::},"
    "outputs:{f32:18446744073709551615:strided:undef:1:0},0.0939941\n"
    "onednn_verbose,v1,primitive,exec,cpu,matmul,ref:any,undef,src:bf16::blocked:abcd::f0 wei:bf16::blocked:abdc::f0 "
    "dst:f32::blocked:abcd::f0,attr-scratchpad:user attr-post-ops:binary_mul:f32:0,,1x8x512x64:1x8x64x512,16967.2\n"
    "onednn_verbose,v1,primitive,exec,cpu,binary,ref:any,undef,src:f32::blocked:abcd::f0 src:f32::blocked:abcd::f0 "
    "dst:f32::blocked:abcd::f0,attr-scratchpad:user,alg:binary_sub,1x8x512x512:1x8x512x1,1115.84\n"
    "onednn_verbose,v1,primitive,exec,cpu,eltwise,jit:avx512_core_bf16,forward_training,data:f32::blocked:abcd::f0,"
    "attr-scratchpad:user,alg:eltwise_exp alpha:0 beta:0,1x8x512x512,0.899902\n"
    "onednn_verbose,v1,graph,exec,cpu,100002,sdp,bmm_qk;scale;sub_stats;exp;cast_p;bmm_dv,,in0_bf16:1:strided:undef:"
    "1x8x512x64:262144s32768s64s1 in2_f32:4:strided:host_scalar:0:2,fpm:strict,scratchpad:library:133440,"
    "larger_partition_kernel_t,dnnl_backend,20842.1\n";

TEST(OnednnVerbose, ExecLinesNameThePartitionAndItsPrimitives) {
    const auto parts = parse_verbose(kExec);
    ASSERT_EQ(parts.size(), 1u);  // the host-scalar pseudo partition is no partition
    EXPECT_EQ(parts[0].kernel, "larger_partition_kernel_t");
    EXPECT_EQ(parts[0].kind, "sdp");
    ASSERT_EQ(parts[0].primitives.size(), 3u);
    EXPECT_EQ(parts[0].primitives[0], (ImplPart{"", "matmul", "ref:any", "1x8x512x64:1x8x64x512", 16967.2}));
    EXPECT_EQ(parts[0].primitives[1], (ImplPart{"", "binary", "ref:any", "1x8x512x512:1x8x512x1", 1115.84}));
    EXPECT_EQ(parts[0].primitives[2].impl, "jit:avx512_core_bf16");
    EXPECT_DOUBLE_EQ(parts[0].primitives[2].ms, 0.899902);
}

TEST(OnednnVerbose, CompileLinesAndSeveralPartitions) {
    // ONEDNN_VERBOSE=2 during compilation: create lines (a cache hit too), then the compile line;
    // a second partition whose compiled partition came from oneDNN's cache lists no primitive.
    const std::string text =
        "onednn_verbose,v1,primitive,create:cache_miss,cpu,matmul,brg_matmul:avx512_core_bf16,undef,src:bf16::blocked:abcd::f0,"
        "attr-scratchpad:user,,1x2x64x64:1x2x64x64,0.506104\n"
        "onednn_verbose,v1,primitive,create:cache_hit,cpu,reorder,jit_direct_copy:uni,undef,src:f32::blocked:abcd::f0,"
        "attr-scratchpad:user,,1x2x64x64,0.00585938\n"
        "onednn_verbose,v1,graph,compile:cache_miss,cpu,100002,sdp,bmm_qk;scale,,in0_bf16:1:strided:undef:1x2x64x64:"
        "8192s4096s64s1,,scratchpad:133504,larger_partition_kernel_t,dnnl_backend,60.0078\n"
        "onednn_verbose,v1,graph,compile:cache_hit,cpu,100003,mha,bmm_dq,,in0_f32:1:strided:undef:1:1,,scratchpad:0,"
        "sdp_primitive_kernel_t,dnnl_backend,0.01\n"
        "onednn_verbose,v1,primitive,create:cache_miss,cpu,matmul,gemm:jit,undef,x,,,2x2:2x2,0.1\n";  // no partition after it
    const auto parts = parse_verbose(text);
    ASSERT_EQ(parts.size(), 2u);
    EXPECT_EQ(parts[0].kernel, "larger_partition_kernel_t");
    ASSERT_EQ(parts[0].primitives.size(), 2u);
    EXPECT_EQ(parts[0].primitives[0], (ImplPart{"", "matmul", "brg_matmul:avx512_core_bf16", "1x2x64x64:1x2x64x64", -1}));
    EXPECT_EQ(parts[0].primitives[1].kind, "reorder");
    EXPECT_EQ(parts[1].kernel, "sdp_primitive_kernel_t");
    EXPECT_EQ(parts[1].kind, "mha");
    EXPECT_TRUE(parts[1].primitives.empty());
}

TEST(OnednnVerbose, OtherLinesAndOtherColumnsAreIgnored) {
    // Without the version column, with a timestamp column, CRLF ends, and text that is not oneDNN's.
    const std::string text =
        "0:PASSED (1.0 ms) __REPRO: b1hq1sq8d8\n"
        "onednn_verbose,1733212345.5,primitive,exec,cpu,softmax,ref:any,forward_inference,d,a,alg:softmax_accurate axis:3,"
        "1x1x8x8,0.5\r\n"
        "onednn_verbose,graph,exec,cpu,7,sdp,x,,y,fpm:strict,larger_partition_kernel_t,dnnl_backend,1.5\r\n"
        "dnnl_verbose,primitive,exec,cpu,matmul,ref:any,undef,x,,,1x1:1x1,1\n"
        "onednn_verbose,v1,primitive,exec\n"
        "onednn_verbose,v1,graph,exec,cpu,7\n";
    const auto parts = parse_verbose(text);
    ASSERT_EQ(parts.size(), 1u);
    ASSERT_EQ(parts[0].primitives.size(), 1u);
    EXPECT_EQ(parts[0].primitives[0], (ImplPart{"", "softmax", "ref:any", "1x1x8x8", 0.5}));
    EXPECT_TRUE(parse_verbose("").empty());
}

TEST(OnednnVerbose, CaptureTakesWhatStdoutGetsAndRestoresIt) {
    std::printf("before the capture\n");
    StdoutCapture cap;
    std::printf("onednn_verbose,v1,info,captured\n");
    std::fputs("second line, buffered\n", stdout);
    const std::string text = cap.finish();
    EXPECT_EQ(text, "onednn_verbose,v1,info,captured\nsecond line, buffered\n");
    EXPECT_EQ(cap.finish(), "");  // finished once
    std::printf("after the capture\n");  // on the real stdout again (visible in the test log)
    StdoutCapture second;
    EXPECT_EQ(second.finish(), "");
}

}  // namespace
}  // namespace sdpa::onednn
