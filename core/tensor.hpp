// Host tensor of f32 values with a logical data type and dense row-major strides.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/dtype.hpp"

namespace sdpa {

/// Dense 4-D tensor [d0, d1, d2, d3] (row-major) of floats. `dt` is the type the values
/// stand for: every value is exactly representable in `dt` once produced by a filler or
/// read back from a vendor, so encode()/decode() to `dt` are lossless.
struct Tensor {
    std::array<std::int64_t, 4> dims{0, 0, 0, 0};
    DType dt = DType::f32;
    std::vector<float> data;

    Tensor() = default;
    /// Allocates dims[0]*dims[1]*dims[2]*dims[3] elements, all set to `value`.
    Tensor(std::array<std::int64_t, 4> d, DType t, float value = 0.f)
        : dims(d), dt(t), data(static_cast<std::size_t>(d[0] * d[1] * d[2] * d[3]), value) {}

    bool empty() const { return data.empty(); }
    std::size_t size() const { return data.size(); }
    /// Row-major offset of element (a, b, c, d); no bounds check.
    std::size_t offset(std::int64_t a, std::int64_t b, std::int64_t c, std::int64_t d) const {
        return static_cast<std::size_t>(((a * dims[1] + b) * dims[2] + c) * dims[3] + d);
    }
    float& at(std::int64_t a, std::int64_t b, std::int64_t c, std::int64_t d) { return data[offset(a, b, c, d)]; }
    float at(std::int64_t a, std::int64_t b, std::int64_t c, std::int64_t d) const { return data[offset(a, b, c, d)]; }
    /// Offset of (a, b, c, d) with numpy broadcasting: a dimension of size 1 takes index 0
    /// (e.g. a [1,1,S_q,S_kv] bias read at (b, h, i, j)); no bounds check.
    std::size_t broadcast_offset(std::int64_t a, std::int64_t b, std::int64_t c, std::int64_t d) const {
        return offset(dims[0] == 1 ? 0 : a, dims[1] == 1 ? 0 : b, dims[2] == 1 ? 0 : c, dims[3] == 1 ? 0 : d);
    }
    /// Inverse of offset(): the 4-D index of flat element `i`.
    std::array<std::int64_t, 4> index(std::size_t i) const {
        std::array<std::int64_t, 4> idx{};
        auto rem = static_cast<std::int64_t>(i);
        for (int k = 3; k >= 0; --k) {
            idx[static_cast<std::size_t>(k)] = rem % dims[static_cast<std::size_t>(k)];
            rem /= dims[static_cast<std::size_t>(k)];
        }
        return idx;
    }
};

/// `t` with only the indices `at` (each < t.dims[dim]) of dimension `dim` (2: rows, 3: columns), in
/// that order; `t` itself when that dimension is broadcast (size 1) or t is empty.
inline Tensor gather(const Tensor& t, int dim, const std::vector<std::int64_t>& at) {
    const auto k = static_cast<std::size_t>(dim);
    if (t.empty() || t.dims[k] == 1) return t;
    std::array<std::int64_t, 4> dims = t.dims;
    dims[k] = static_cast<std::int64_t>(at.size());
    Tensor g(dims, t.dt);
    for (std::int64_t a = 0; a < dims[0]; ++a)
        for (std::int64_t b = 0; b < dims[1]; ++b)
            for (std::int64_t c = 0; c < dims[2]; ++c) {
                float* row = &g.at(a, b, c, 0);
                if (dim == 2) {
                    const float* src = &t.data[t.offset(a, b, at[static_cast<std::size_t>(c)], 0)];
                    std::copy(src, src + dims[3], row);
                } else {
                    for (std::int64_t d = 0; d < dims[3]; ++d) row[d] = t.at(a, b, c, at[static_cast<std::size_t>(d)]);
                }
            }
    return g;
}

}  // namespace sdpa
