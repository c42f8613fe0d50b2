#include "compare/tolerance.hpp"

#include <cmath>

namespace sdpa {

Tolerance tolerance(DType io, Output out) {
    if (out == Output::stats) return {16.0, unit_roundoff(DType::f32)};
    return {4.0, unit_roundoff(io)};
}

double effective_u(const Tolerance& t, std::int64_t reduction_length) {
    return t.u + unit_roundoff(DType::f32) * std::sqrt(static_cast<double>(reduction_length));
}

}  // namespace sdpa
