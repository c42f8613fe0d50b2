// What a vendor ran for a case, in the vendor's own words: the implementation name of its plan,
// the implementations inside it (oneDNN: each primitive of a partition), and the tensors as they
// were bound (dims and strides). Plain data: the backends fill it, the driver copies it into the
// case's result, the reports print it (docs/perf_and_reports.md#what-ran).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace sdpa {

/// One implementation inside a plan, as the vendor names it.
struct ImplPart {
    std::string where;  ///< which kernel of the plan it belongs to (oneDNN: "partition 0"), "" when one
    std::string kind;   ///< what it computes in the vendor's words (oneDNN: the primitive kind, "matmul")
    std::string impl;   ///< the vendor's implementation name ("brg_matmul:avx512_core_bf16", "ref:any")
    std::string shape;  ///< the vendor's problem description ("1x8x512x64:1x8x64x512"), "" when none
    double ms = -1;     ///< its time in the run that listed it (oneDNN verbose exec_time), < 0: unknown
    friend bool operator==(const ImplPart&, const ImplPart&) = default;
};

/// What a vendor ran for one plan: `name` is the plan-level implementation (oneDNN: each
/// partition's kernel, e.g. "larger_partition_kernel_t", joined by '+'; cuDNN: the execution
/// plan's name; PyTorch: the ATen operator and on CUDA its SDPA backend; sdpabench's own
/// backends: what they run). `parts` lists the implementations inside it, where the vendor
/// exposes them (oneDNN), in run order. An empty name: the vendor did not say.
struct Implementation {
    std::string name;
    std::vector<ImplPart> parts;
    friend bool operator==(const Implementation&, const Implementation&) = default;
};

/// One tensor as a plan bound it to the vendor: its name (a geometry role such as "Q", "dQ",
/// "stats", or a tensor only the vendor graph has: "scale", "mask"), element type, and the dims
/// and strides (elements) the vendor was given, in the vendor's rank and order (oneDNN's GQA
/// graph: 5-D [B,H_kv,G,S,D]). A host scalar has rank 0.
struct BoundTensor {
    std::string name;
    std::string dt;                     ///< "bf16", "f32", "s32", ...
    std::vector<std::int64_t> dims, strides;
    friend bool operator==(const BoundTensor&, const BoundTensor&) = default;
};

/// True for an implementation name of a reference (unoptimised) kernel: oneDNN spells them with
/// a first ':'-separated word "ref" or "ref_..." ("ref:any", "ref_fused:any"; its optimised ones
/// are "jit:...", "brg_matmul:...", "gemm:..."). Reused by benchdnn's habit --skip-impl=ref.
bool is_reference_impl(std::string_view impl);

/// The part kinds whose reference fallback the reports flag (reference_fallback()): the ones that
/// carry the graph's matrix products and its softmax, where a reference kernel costs orders of
/// magnitude (docs/perf_and_reports.md#reference-fallback).
bool is_flagged_kind(std::string_view kind);

/// The reference fallback of a plan: its parts of a flagged kind (is_flagged_kind) that ran a
/// reference implementation, as "KIND IMPL (SHAPE)" joined by "; " (e.g. "matmul ref:any
/// (1x8x512x64:1x8x64x512)"); "" when none did or the vendor lists no parts.
std::string reference_fallback(const Implementation& impl);

/// Every part as "KIND:IMPL" (e.g. "matmul:brg_matmul:avx10_1_512_amx"), each once, in run order,
/// space-separated; "" when the vendor lists no parts. The reports' "impls" field.
std::string implementation_kinds(const Implementation& impl);

/// How many parts ran a reference implementation, of any kind (elementwise ones included).
std::int64_t reference_parts(const Implementation& impl);

/// True when `pattern` names implementation `name`: a shell glob over the whole name (fnmatch:
/// '*', '?', '[...]') when the pattern holds one of "*?[", else a substring of it, as benchdnn's
/// --impl and --skip-impl match ("ref" names "ref:any" and "ref_fused:any").
bool impl_pattern_matches(std::string_view pattern, std::string_view name);

/// --impl=LIST and --skip-impl=LIST (comma-separated patterns, impl_pattern_matches): a case runs
/// only when its implementation name or one of its parts' matches an --impl pattern (any, when
/// none is given) and none matches a --skip-impl pattern.
struct ImplSelection {
    std::vector<std::string> impl, skip;
    bool empty() const { return impl.empty() && skip.empty(); }
};

/// The SKIPPED reason of a case whose vendor implementation `im` `sel` leaves out, naming the
/// implementation and the pattern; "" when it runs. `complete` says im is final (after the plan's
/// first run): before that only --skip-impl decides, since a part listed by the run may still
/// match --impl. A case whose vendor names no implementation is left out by --impl.
std::string impl_excluded(const Implementation& im, const ImplSelection& sel, bool complete);

/// "Q bf16 [1,64,512,64] strides [2097152,32768,64,1]" (a host scalar: "scale f32 host scalar").
std::string describe(const BoundTensor& t);

/// "KIND IMPL SHAPE MS ms" for -v (the time when known).
std::string describe(const ImplPart& p);

}  // namespace sdpa
