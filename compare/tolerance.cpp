#include "compare/tolerance.hpp"

#include <cmath>

namespace sdpa {

Tolerance tolerance(DType io, Output out) {
    if (out == Output::stats) return {16.0, unit_roundoff(DType::f32), 0x1p-149};
    const double tiny = io == DType::f16 ? 0x1p-24 : io == DType::bf16 ? 0x1p-133 : 0x1p-149;
    return {4.0, unit_roundoff(io), tiny};
}

double effective_u(const Tolerance& t, std::int64_t reduction_length) {
    return t.u + unit_roundoff(DType::f32) * std::sqrt(static_cast<double>(reduction_length));
}

}  // namespace sdpa
