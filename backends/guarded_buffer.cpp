#include "backends/guarded_buffer.hpp"

#include <algorithm>
#include <cstring>

#include "backends/strided_buffer.hpp"

namespace sdpa {

GuardedBuffer::GuardedBuffer(const TensorGeom& t, std::int64_t min_elements)
    : geom_(t),
      payload_(static_cast<std::size_t>(std::max(t.span(), min_elements)) * size_of(t.type)),
      elem_size_(size_of(t.type)) {
    bytes_.resize(payload_ + 2 * kGuardBytes);
    for (std::size_t i = 0; i < kGuardBytes; ++i) {
        bytes_[i] = canary(i);
        bytes_[kGuardBytes + payload_ + i] = canary(i + kGuardBytes);
    }
    if (payload_ / elem_size_ > static_cast<std::size_t>(t.elements())) {  // gaps: which elements are logical
        logical_.assign(payload_ / elem_size_, false);
        for (std::int64_t a = 0; a < t.dims[0]; ++a)
            for (std::int64_t b = 0; b < t.dims[1]; ++b)
                for (std::int64_t c = 0; c < t.dims[2]; ++c)
                    if (t.present(a, c))
                        for (std::int64_t d = 0; d < t.dims[3]; ++d) logical_[static_cast<std::size_t>(t.offset(a, b, c, d))] = true;
    }
    poison();
}

void GuardedBuffer::poison() { std::memset(data(), 0xFF, payload_); }

OutputIntegrity GuardedBuffer::check() const {
    OutputIntegrity r;
    for (std::size_t i = 0; i < kGuardBytes; ++i) {
        r.touched_before += bytes_[i] != canary(i);
        r.touched_after += bytes_[kGuardBytes + payload_ + i] != canary(i + kGuardBytes);
    }
    const auto* p = static_cast<const unsigned char*>(data());
    const std::size_t n = payload_ / elem_size_;
    std::vector<bool> exempt;  // elements of unspecified rows: no unwritten count
    if (!unspecified_rows_.empty()) {
        exempt.assign(n, false);
        const TensorGeom& t = geom_;
        for (std::int64_t a = 0; a < t.dims[0]; ++a)
            for (std::int64_t b = 0; b < t.dims[1]; ++b)
                for (std::int64_t c = unspecified_rows_[static_cast<std::size_t>(a)]; c < t.dims[2]; ++c)
                    if (t.present(a, c))
                        for (std::int64_t d = 0; d < t.dims[3]; ++d) {
                            const auto o = static_cast<std::size_t>(t.offset(a, b, c, d));
                            if (o < n) exempt[o] = true;
                        }
    }
    for (std::size_t e = 0; e < n; ++e) {
        const bool poisoned = std::all_of(p + e * elem_size_, p + (e + 1) * elem_size_, [](unsigned char b) { return b == 0xFF; });
        if (logical_.empty() || logical_[e]) {
            r.unwritten += poisoned && (exempt.empty() || !exempt[e]);
        } else if (!poisoned && r.gap_written++ == 0) {
            r.first_gap = static_cast<std::int64_t>(e);
            r.first_gap_where = describe_offset(geom_, r.first_gap);
        }
    }
    return r;
}

Tensor GuardedBuffer::read() const {
    return gather(geom_, static_cast<const std::byte*>(data()), static_cast<std::int64_t>(payload_ / elem_size_));
}

void GuardedBuffer::write(const Tensor& host, const TensorGeom* as) {
    scatter(as ? *as : geom_, host, static_cast<std::byte*>(data()), static_cast<std::int64_t>(payload_ / elem_size_));
}

}  // namespace sdpa
