// Host buffer for one vendor output laid out as its geometry says, surrounded by guard bands,
// prefilled with NaN (the gaps between strided rows included).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <vector>

#include "core/geometry.hpp"
#include "core/sdpa_tensors.hpp"

namespace sdpa {

/// [guard | payload | guard] for one output role. The payload holds t.span() elements of t.type
/// (or more, when the library asks for a larger buffer) at t's strides. The guards (kGuardBytes each) hold a canary pattern that no kernel writes by
/// accident; the whole payload, stride gaps included, is prefilled with 0xFF bytes (a NaN in f32,
/// bf16 and f16), so a logical element the kernel never wrote stays NaN (counted as unwritten)
/// and a gap element that no longer holds 0xFF was written by the kernel (counted as a gap write).
class GuardedBuffer {
public:
    static constexpr std::size_t kGuardBytes = 4096;

    /// A buffer for output `t` (a validated, non-overlapping geometry) of t.span() elements, or
    /// `min_elements` when a library asks for more (the elements past the span count as gap).
    explicit GuardedBuffer(const TensorGeom& t, std::int64_t min_elements = 0);

    void* data() { return bytes_.data() + kGuardBytes; }
    const void* data() const { return bytes_.data() + kGuardBytes; }
    /// Payload bytes (span x element size).
    std::size_t size() const { return payload_; }
    const TensorGeom& geometry() const { return geom_; }
    /// The whole allocation, guards included (for backends that copy it to a device and back).
    std::vector<std::byte>& raw() { return bytes_; }

    /// Refills the payload, gaps included, with the NaN pattern (before a run whose writes are checked).
    void poison();
    /// Rows c >= rows[a] (dimension 2) of batch a are left to the kernel (Conventions::
    /// padded_rows_unspecified): check() does not count them as unwritten. rows has dims[0] entries.
    void set_unspecified_rows(const std::vector<std::int64_t>& rows);
    /// Guard bytes that changed, logical elements still all-0xFF (those of unspecified rows
    /// apart), and gap elements that are not, with the first such gap element described: one
    /// pass over the payload (OpenMP over elements).
    OutputIntegrity check() const;
    /// The logical elements decoded into a dense host tensor of the geometry's dims.
    Tensor read() const;
    /// Writes a dense host tensor at the geometry's offsets (a reference-computed "kernel"), or at
    /// those of `as` (a fault that ignores strides; elements past the payload are dropped).
    void write(const Tensor& host, const TensorGeom* as = nullptr);

private:
    static std::byte canary(std::size_t i) { return static_cast<std::byte>(0x5Au ^ ((i * 37u) & 0xFFu)); }
    TensorGeom geom_;
    std::size_t payload_, elem_size_;
    std::vector<std::byte> bytes_;
    /// What each payload element is (kGap, kLogical, kUnspecified); empty when every element is
    /// logical and checked (a dense layout, no unspecified rows).
    std::vector<std::uint8_t> kind_;
    static constexpr std::uint8_t kGap = 0, kLogical = 1, kUnspecified = 2;
    /// kind_ for the geometry (gaps apart from logical elements), built on first need.
    void classify();
};

/// Puts `buf`'s decoded logical elements and what its guards saw into `out`, as the output of
/// the buffer's geometry role (a backend's Plan::read_outputs, one call per output buffer).
inline void store_output(SdpaOutputs& out, const GuardedBuffer& buf) {
    const Output o = *output_of(buf.geometry().role);
    out.of(o) = buf.read();
    out.integrity_of(o) = buf.check();
}

/// One guarded buffer per output role of a geometry (a host-memory plan's outputs: the reference
/// and PyTorch backends), with the Plan's poison and read steps over all of them.
class GuardedOutputs {
public:
    explicit GuardedOutputs(const Geometry& g) {
        for (const TensorGeom* t : g.outputs()) bufs_.emplace(t->role, GuardedBuffer(*t));
    }
    /// The buffer of output role `r`, nullptr when the geometry has no such output.
    GuardedBuffer* find(Role r) {
        const auto it = bufs_.find(r);
        return it == bufs_.end() ? nullptr : &it->second;
    }
    auto begin() { return bufs_.begin(); }
    auto end() { return bufs_.end(); }
    /// Plan::poison_outputs: every buffer back to the NaN prefill.
    void poison() {
        for (auto& [role, buf] : bufs_) buf.poison();
    }
    /// Plan::read_outputs: every buffer decoded, with what its guards saw.
    SdpaOutputs read() const {
        SdpaOutputs out;
        for (const auto& [role, buf] : bufs_) store_output(out, buf);
        return out;
    }

private:
    std::map<Role, GuardedBuffer> bufs_;
};

}  // namespace sdpa
