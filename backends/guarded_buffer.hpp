// Host buffer for one vendor output, surrounded by guard bands, prefilled with NaN.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/sdpa_tensors.hpp"

namespace sdpa {

/// [guard | payload | guard]. The guards (kGuardBytes each) hold a canary pattern that no
/// kernel writes by accident; the payload is prefilled with 0xFF bytes, a NaN in f32, bf16 and
/// f16, so an element the kernel never wrote stays NaN and is counted as unwritten.
class GuardedBuffer {
public:
    static constexpr std::size_t kGuardBytes = 4096;

    /// `payload_bytes` of output, elements of `elem_size` bytes (2 or 4).
    GuardedBuffer(std::size_t payload_bytes, std::size_t elem_size);

    void* data() { return bytes_.data() + kGuardBytes; }
    const void* data() const { return bytes_.data() + kGuardBytes; }
    std::size_t size() const { return payload_; }
    /// The whole allocation, guards included (for backends that copy it to a device and back).
    std::vector<std::byte>& raw() { return bytes_; }

    /// Refills the payload with the NaN pattern (before a run whose writes must be checked).
    void poison();
    /// Guard bytes that changed and payload elements still all-0xFF.
    OutputIntegrity check() const;

private:
    static std::byte canary(std::size_t i) { return static_cast<std::byte>(0x5Au ^ ((i * 37u) & 0xFFu)); }
    std::vector<std::byte> bytes_;
    std::size_t payload_, elem_size_;
};

}  // namespace sdpa
