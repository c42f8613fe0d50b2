// Host-side vendor buffers laid out as the geometry says (core/geometry.hpp): the dense host
// tensors the filler and the reference use, packed into strided memory and read back. Shared by
// every backend (oneDNN binds these bytes, cuDNN uploads them, the reference backend reads them).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/geometry.hpp"
#include "core/tensor.hpp"

namespace sdpa {

/// The value of every gap element of a strided input buffer (the elements of its span that no
/// logical element occupies): a power of two far outside every fill's range and exact in every
/// type, so a kernel that reads a gap into a result is far off.
inline constexpr float kInputGapCanary = 8192.f;

/// What gather() gives the rows a ragged tensor does not store (TensorGeom::present): 0, the value
/// of a padded row of O and of the gradients; the checks skip those rows (compare/compare.hpp).
inline constexpr float kAbsentRow = 0.f;

/// Writes the dense host tensor `host` (dims t.dims) into `dst` (t.span() elements of t.type) at
/// t's offsets, encoded to t.type (s32: the values as integers; fp8: the codes of value /
/// t.descale), skipping the rows a ragged t does not store. Elements whose offset is not below
/// `avail` are dropped (only a fault-injected write with foreign strides gets there). Aliased
/// elements (stride 0) get the last value written; the fill makes them equal.
void scatter(const TensorGeom& t, const Tensor& host, std::byte* dst, std::int64_t avail);

/// The logical elements of `t` read from `src` (`avail` elements of t.type) into a dense host
/// tensor of dims t.dims (fp8: code x t.descale); offsets at or past `avail` read kInputGapCanary,
/// rows a ragged t does not store read kAbsentRow.
Tensor gather(const TensorGeom& t, const std::byte* src, std::int64_t avail);

/// One input buffer: t.span() elements of t.type (or `min_elements` when a library asks for a
/// larger buffer), every gap element kInputGapCanary, every logical element host's value (scatter).
std::vector<std::byte> pack_input(const TensorGeom& t, const Tensor& host, std::int64_t min_elements = 0);

/// The values of the one additive mask a vendor without native masks consumes, dense row-major
/// over `dims` = [1|B, heads (1 or H_q), 1|S_q, S_kv] (merged_mask_dims(p), or a vendor's own
/// flattening of it): the filled `bias` (broadcast; 0 without --mask=bias) where visible(p, b, i, j)
/// holds, -inf elsewhere (causal, window and padding become explicit -inf entries).
std::vector<float> merged_mask_values(const Problem& p, const Tensor& bias, const std::array<std::int64_t, 4>& dims);

/// For messages: "element offset N ((b,h,s,d) = (0,1,3,70) of dims [1,4,32,64])".
std::string describe_offset(const TensorGeom& t, std::int64_t offset);

}  // namespace sdpa
