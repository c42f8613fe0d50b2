#include "backends/guarded_buffer.hpp"

#include <algorithm>
#include <cstring>

namespace sdpa {

GuardedBuffer::GuardedBuffer(std::size_t payload_bytes, std::size_t elem_size)
    : bytes_(payload_bytes + 2 * kGuardBytes), payload_(payload_bytes), elem_size_(elem_size) {
    for (std::size_t i = 0; i < kGuardBytes; ++i) {
        bytes_[i] = canary(i);
        bytes_[kGuardBytes + payload_ + i] = canary(i + kGuardBytes);
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
    for (std::size_t e = 0; e + elem_size_ <= payload_; e += elem_size_)
        r.unwritten += std::all_of(p + e, p + e + elem_size_, [](unsigned char b) { return b == 0xFF; });
    return r;
}

}  // namespace sdpa
