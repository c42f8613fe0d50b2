// The input check: a vendor must not write into its inputs. After the checked run, each input
// buffer the plan can show (Plan::input_buffers) must still hold, byte for byte, what prepare()
// packed into it from the filled inputs (backends/strided_buffer.hpp pack_input: the logical
// elements in the geometry's strides, kInputGapCanary in the gaps). A kernel that uses dO or Q as
// scratch, or writes a gradient over its input, passes every output check when it writes after
// reading; the next training step then reads the damaged tensor. docs/trust.md#inputs-unchanged.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "backends/backend.hpp"
#include "core/problem.hpp"
#include "core/sdpa_tensors.hpp"

namespace sdpa {

/// Each of `now` (the plan's input buffers after its run, in their order) that differs from what
/// prepare() packed from `in` for problem `q`: "dO: 12 element(s) modified by the vendor, first at
/// element offset 5 ((b,h,s,d) = (0,0,0,5) ...): was 0.5, now 0" (gaps and padding count as
/// elements of the buffer: their offsets are named the same way), or "dO: the buffer has 100
/// elements, 96 were packed", joined by "; input "; nullopt when every buffer is as packed. A role
/// without a floating host tensor in `in` (the padding lengths) is skipped.
std::optional<std::string> modified_input(const Problem& q, const SdpaInputs& in, const std::vector<InputBuffer>& now);

}  // namespace sdpa
