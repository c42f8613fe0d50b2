#include "driver/input_check.hpp"

#include <cstring>

#include <fmt/format.h>

#include "backends/strided_buffer.hpp"
#include "core/geometry.hpp"

namespace sdpa {

namespace {

/// Element `offset` of a buffer of t's type, decoded (fp8: the code times t.descale).
float element(const TensorGeom& t, const std::byte* bytes, std::int64_t offset) {
    float v = 0;
    const DType dt = *float_type(t.type);
    decode(dt, bytes + static_cast<std::size_t>(offset) * size_of(dt), &v, 1);
    return is_fp8(dt) ? v * t.descale : v;
}

/// The difference of one buffer from its packed original, or nullopt.
std::optional<std::string> difference(const TensorGeom& t, const std::vector<std::byte>& packed, const InputBuffer& now) {
    const std::size_t es = size_of(t.type);
    if (now.bytes.size() != packed.size())
        return fmt::format("{}: the buffer has {} elements, {} were packed", t.role, now.bytes.size() / es, packed.size() / es);
    std::int64_t first = -1, n = 0;
    for (std::size_t e = 0; e < packed.size() / es; ++e)
        if (std::memcmp(packed.data() + e * es, now.bytes.data() + e * es, es) != 0) {
            if (first < 0) first = static_cast<std::int64_t>(e);
            ++n;
        }
    if (n == 0) return std::nullopt;
    return fmt::format("{}: {} element(s) modified by the vendor, first at {}: was {:g}, now {:g}", t.role, n,
            describe_offset(t, first), element(t, packed.data(), first),
            element(t, now.bytes.data(), first));
}

}  // namespace

std::optional<std::string> modified_input(const Problem& q, const SdpaInputs& in, const std::vector<InputBuffer>& now) {
    const Geometry geo = geometry(q);
    std::string all;
    for (const InputBuffer& b : now) {
        const Tensor* host = in.of(b.role);
        const TensorGeom* t = geo.find(b.role);
        if (!host || host->empty() || !t || !float_type(t->type)) continue;
        const auto packed = pack_input(*t, *host, static_cast<std::int64_t>(b.bytes.size() / size_of(t->type)));
        if (auto d = difference(*t, packed, b)) all += (all.empty() ? "" : "; input ") + *d;
    }
    if (all.empty()) return std::nullopt;
    return all;
}

}  // namespace sdpa
