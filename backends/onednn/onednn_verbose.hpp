// oneDNN names the kernels it picks only in its verbose output (ONEDNN_VERBOSE, dnnl_set_verbose):
// its Graph API has no query for a compiled partition's implementation. This file reads that
// output: a capture of the process's stdout around the calls that print it, and a parser of the
// lines (docs/onednn.md#implementation-names). Neither needs the oneDNN library.
#pragma once

#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include "core/implementation.hpp"

namespace sdpa::onednn {

/// One partition as the verbose lines of one compile or execution name it: the kernel oneDNN
/// chose for it (the graph line's implementation column, e.g. "larger_partition_kernel_t"), its
/// partition kind ("sdp") and the primitives printed before its graph line (their engine
/// omitted; `ms`: the primitive's exec_time on an exec line, -1 on a create line).
struct VerbosePartition {
    std::string kernel;
    std::string kind;
    std::vector<ImplPart> primitives;
};

/// The partitions named by oneDNN verbose `text` (any mix of lines; lines that are not
/// "onednn_verbose," records of the primitive or graph component are ignored), in print order.
/// A primitive line (exec or create) belongs to the next graph line (exec or compile) after it;
/// primitives after the last graph line are dropped (nothing says which partition they ran
/// for). Fields are found by the component word ("primitive", "graph") and the operation after
/// it, so the optional version ("v1") and timestamp columns before them do not matter; a graph
/// line's implementation is the third field from its end (implementation, backend, time), the
/// column order oneDNN's own "graph,info,template:" line states. Graph lines of host-scalar
/// pseudo partitions ("_host_scalar(...)", no backend column) are skipped.
std::vector<VerbosePartition> parse_verbose(std::string_view text);

/// Captures what is written to file descriptor 1 (stdout) from construction until finish():
/// stdout is flushed and fd 1 is pointed at an anonymous temporary file, then restored. For the
/// verbose lines oneDNN prints with printf during a compile or an execution (nothing else of
/// sdpabench writes to stdout meanwhile: the driver runs one case at a time). When a step fails
/// (no temporary file, dup fails), nothing is captured and finish() returns "".
class StdoutCapture {
public:
    StdoutCapture();
    ~StdoutCapture();
    StdoutCapture(const StdoutCapture&) = delete;
    StdoutCapture& operator=(const StdoutCapture&) = delete;
    /// Restores stdout and returns what was written (at most 16 MiB; the rest is dropped).
    std::string finish();

private:
    std::FILE* file_ = nullptr;
    int saved_ = -1;
};

}  // namespace sdpa::onednn
