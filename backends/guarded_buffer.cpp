#include "backends/guarded_buffer.hpp"

#include <algorithm>
#include <cstring>

#include "backends/strided_buffer.hpp"

namespace sdpa {

GuardedBuffer::GuardedBuffer(const TensorGeom& t, std::int64_t min_elements)
    : geom_(t),
      payload_(static_cast<std::size_t>(std::max(t.span(), min_elements)) * size_of(t.type)),
      elem_size_(size_of(t.type)),
      bytes_(payload_ + 2 * kGuardBytes, std::byte{0xFF}) {  // the payload's NaN prefill, written once
    for (std::size_t i = 0; i < kGuardBytes; ++i) {
        bytes_[i] = canary(i);
        bytes_[kGuardBytes + payload_ + i] = canary(i + kGuardBytes);
    }
    if (payload_ / elem_size_ > static_cast<std::size_t>(t.elements())) classify();  // gaps: which elements are logical
}

void GuardedBuffer::classify() {
    const TensorGeom& t = geom_;
    kind_.assign(payload_ / elem_size_, kGap);
    for (std::int64_t a = 0; a < t.dims[0]; ++a)
        for (std::int64_t b = 0; b < t.dims[1]; ++b)
            for (std::int64_t c = 0; c < t.dims[2]; ++c) {
                if (!t.present(a, c)) continue;
                const std::int64_t o = t.offset(a, b, c, 0);
                for (std::int64_t d = 0; d < t.dims[3]; ++d) kind_[static_cast<std::size_t>(o + d * t.strides[3])] = kLogical;
            }
}

void GuardedBuffer::set_unspecified_rows(const std::vector<std::int64_t>& rows) {
    if (rows.empty()) return;
    if (kind_.empty()) classify();
    const TensorGeom& t = geom_;
    const std::size_t n = kind_.size();
    for (std::int64_t a = 0; a < t.dims[0]; ++a)
        for (std::int64_t b = 0; b < t.dims[1]; ++b)
            for (std::int64_t c = rows[static_cast<std::size_t>(a)]; c < t.dims[2]; ++c)
                if (t.present(a, c))
                    for (std::int64_t d = 0; d < t.dims[3]; ++d)
                        if (const auto o = static_cast<std::size_t>(t.offset(a, b, c, d)); o < n) kind_[o] = kUnspecified;
}

void GuardedBuffer::poison() { std::memset(data(), 0xFF, payload_); }

namespace {

/// Counts over the payload's n elements of type U (all bits set: the NaN prefill): elements of kind
/// kLogical still all-ones (unwritten), elements of kind kGap that are not (gap writes) and the first
/// of those (n when none). Without kinds every element is logical.
template <class U>
void scan_payload(const unsigned char* bytes, const std::uint8_t* kind, std::size_t n, std::uint8_t logical,
        std::uint8_t gap, OutputIntegrity& r) {
    constexpr U ones = static_cast<U>(~U{0});
    const auto count = static_cast<std::int64_t>(n);
    std::int64_t unwritten = 0, gap_written = 0, first_gap = count;
#pragma omp parallel for reduction(+ : unwritten, gap_written) reduction(min : first_gap) schedule(static) \
        if (count >= (std::int64_t{1} << 16))
    for (std::int64_t e = 0; e < count; ++e) {
        U v;
        std::memcpy(&v, bytes + static_cast<std::size_t>(e) * sizeof(U), sizeof(U));
        const bool poisoned = v == ones;
        if (!kind) {
            unwritten += poisoned;
        } else if (kind[e] == logical) {
            unwritten += poisoned;
        } else if (kind[e] == gap && !poisoned) {
            ++gap_written;
            first_gap = std::min(first_gap, e);
        }
    }
    r.unwritten = unwritten;
    r.gap_written = gap_written;
    if (gap_written > 0) r.first_gap = first_gap;
}

}  // namespace

OutputIntegrity GuardedBuffer::check() const {
    OutputIntegrity r;
    for (std::size_t i = 0; i < kGuardBytes; ++i) {
        r.touched_before += bytes_[i] != canary(i);
        r.touched_after += bytes_[kGuardBytes + payload_ + i] != canary(i + kGuardBytes);
    }
    const auto* p = static_cast<const unsigned char*>(data());
    const std::size_t n = payload_ / elem_size_;
    const std::uint8_t* kind = kind_.empty() ? nullptr : kind_.data();
    switch (elem_size_) {
        case 1: scan_payload<std::uint8_t>(p, kind, n, kLogical, kGap, r); break;
        case 2: scan_payload<std::uint16_t>(p, kind, n, kLogical, kGap, r); break;
        case 4: scan_payload<std::uint32_t>(p, kind, n, kLogical, kGap, r); break;
        default: scan_payload<std::uint64_t>(p, kind, n, kLogical, kGap, r); break;
    }
    if (r.gap_written > 0) r.first_gap_where = describe_offset(geom_, r.first_gap);
    return r;
}

Tensor GuardedBuffer::read() const {
    return gather(geom_, static_cast<const std::byte*>(data()), static_cast<std::int64_t>(payload_ / elem_size_));
}

void GuardedBuffer::write(const Tensor& host, const TensorGeom* as) {
    scatter(as ? *as : geom_, host, static_cast<std::byte*>(data()), static_cast<std::int64_t>(payload_ / elem_size_));
}

}  // namespace sdpa
