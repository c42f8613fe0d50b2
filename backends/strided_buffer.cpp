#include "backends/strided_buffer.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace sdpa {

namespace {

using i64 = std::int64_t;

/// Encodes n floats of `src` as `t` at `dst` (s32: rounded to integers; fp8: the codes of the
/// values divided by `descale`).
void put(ElemType t, const float* src, std::byte* dst, std::size_t n, float descale = 1.f) {
    if (const auto dt = float_type(t)) {
        if (descale == 1.f) return encode(*dt, src, dst, n);
        for (std::size_t i = 0; i < n; ++i) {
            const auto code = static_cast<float>(src[i] / static_cast<double>(descale));
            encode(*dt, &code, dst + i * size_of(t), 1);
        }
        return;
    }
    for (std::size_t i = 0; i < n; ++i) {
        if (t == ElemType::s32) {
            const auto v = static_cast<std::int32_t>(src[i]);
            std::memcpy(dst + 4 * i, &v, 4);
        } else {
            dst[i] = static_cast<std::byte>(static_cast<std::uint8_t>(src[i]));
        }
    }
}

/// Decodes n elements of type `t` at `src` into floats (fp8: the codes times `descale`).
void get(ElemType t, const std::byte* src, float* dst, std::size_t n, float descale = 1.f) {
    if (const auto dt = float_type(t)) {
        decode(*dt, src, dst, n);
        if (descale != 1.f)
            for (std::size_t i = 0; i < n; ++i) dst[i] = static_cast<float>(dst[i] * static_cast<double>(descale));
        return;
    }
    for (std::size_t i = 0; i < n; ++i) {
        if (t == ElemType::s32) {
            std::int32_t v = 0;
            std::memcpy(&v, src + 4 * i, 4);
            dst[i] = static_cast<float>(v);
        } else {
            dst[i] = static_cast<float>(static_cast<std::uint8_t>(src[i]));
        }
    }
}

/// Calls row(host_index, offset_of_d0) for every stored row (a, b, c) of t (absent(host_index)
/// for the rows a ragged tensor does not store): the innermost dim d runs inside the callbacks.
template <class F, class G>
void for_each_row(const TensorGeom& t, F&& row, G&& absent) {
    const auto& n = t.dims;
    // Parallel only where no two rows share memory (an aliased input is written serially).
    const bool parallel = t.elements() > (i64{1} << 16) && non_overlapping(t);
#pragma omp parallel for collapse(3) schedule(static) if (parallel)
    for (i64 a = 0; a < n[0]; ++a)
        for (i64 b = 0; b < n[1]; ++b)
            for (i64 c = 0; c < n[2]; ++c) {
                const i64 h = ((a * n[1] + b) * n[2] + c) * n[3];
                if (t.present(a, c)) row(h, t.offset(a, b, c, 0));
                else absent(h);
            }
}

}  // namespace

void scatter(const TensorGeom& t, const Tensor& host, std::byte* dst, std::int64_t avail) {
    const std::size_t es = size_of(t.type);
    const i64 D = t.dims[3], sd = t.strides[3];
    for_each_row(
            t,
            [&](i64 h, i64 off) {
                if (sd == 1 && off + D <= avail)
                    return put(t.type, &host.data[static_cast<std::size_t>(h)], dst + static_cast<std::size_t>(off) * es,
                            static_cast<std::size_t>(D), t.descale);
                for (i64 d = 0; d < D; ++d) {
                    const i64 o = off + d * sd;
                    if (o < avail)
                        put(t.type, &host.data[static_cast<std::size_t>(h + d)], dst + static_cast<std::size_t>(o) * es, 1,
                                t.descale);
                }
            },
            [](i64) {});
}

Tensor gather(const TensorGeom& t, const std::byte* src, std::int64_t avail) {
    Tensor out(t.dims, float_type(t.type).value_or(DType::f32));
    const std::size_t es = size_of(t.type);
    const i64 D = t.dims[3], sd = t.strides[3];
    for_each_row(
            t,
            [&](i64 h, i64 off) {
                float* row = &out.data[static_cast<std::size_t>(h)];
                if (sd == 1 && off + D <= avail)
                    return get(t.type, src + static_cast<std::size_t>(off) * es, row, static_cast<std::size_t>(D),
                            t.descale);
                for (i64 d = 0; d < D; ++d) {
                    const i64 o = off + d * sd;
                    if (o < avail) get(t.type, src + static_cast<std::size_t>(o) * es, &row[d], 1, t.descale);
                    else row[d] = kInputGapCanary;
                }
            },
            [&](i64 h) { std::fill_n(&out.data[static_cast<std::size_t>(h)], D, kAbsentRow); });
    return out;
}

std::vector<std::byte> pack_input(const TensorGeom& t, const Tensor& host, std::int64_t min_elements) {
    const i64 span = std::max(t.span(), min_elements);
    const std::size_t es = size_of(t.type);
    std::vector<std::byte> out(static_cast<std::size_t>(span) * es);
    if (span > t.elements() || !non_overlapping(t)) {  // gaps exist: fill them with the canary first
        std::vector<float> canary(static_cast<std::size_t>(std::min<i64>(span, 4096)), kInputGapCanary);
        for (i64 at = 0; at < span; at += static_cast<i64>(canary.size())) {
            const auto n = static_cast<std::size_t>(std::min<i64>(span - at, static_cast<i64>(canary.size())));
            put(t.type, canary.data(), out.data() + static_cast<std::size_t>(at) * es, n);
        }
    }
    scatter(t, host, out.data(), span);
    return out;
}

std::string describe_offset(const TensorGeom& t, std::int64_t offset) {
    return fmt::format("element offset {} ((b,h,s,d) = ({}) of dims [{}], strides [{}])", offset,
            fmt::join(t.coords_of(offset), ","), fmt::join(t.dims, ","), fmt::join(t.strides, ","));
}

std::vector<float> merged_mask_values(const Problem& p, const Tensor& bias, const std::array<std::int64_t, 4>& dims) {
    std::vector<float> m(static_cast<std::size_t>(dims[0] * dims[1] * dims[2] * dims[3]));
    std::size_t at = 0;
    for (std::int64_t b = 0; b < dims[0]; ++b)
        for (std::int64_t h = 0; h < dims[1]; ++h)
            for (std::int64_t i = 0; i < dims[2]; ++i)
                for (std::int64_t j = 0; j < dims[3]; ++j, ++at) {
                    const float v = p.mask == Mask::bias ? bias.data[bias.broadcast_offset(b, h, i, j)] : 0.f;
                    m[at] = visible(p, b, i, j) ? v : -INFINITY;
                }
    return m;
}

}  // namespace sdpa
