#include <chrono>

#include <fmt/format.h>

#include "backends/backend.hpp"
#include "core/geometry.hpp"

namespace sdpa {

double Plan::execute_timed_ms() {
    const auto t0 = std::chrono::steady_clock::now();
    execute();
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

std::vector<BoundTensor> geometry_tensors(const Problem& p) {
    std::vector<BoundTensor> out;
    const Geometry g = geometry(p);
    for (const TensorGeom* t : g.all())
        if (t->input || t->output)
            out.push_back({fmt::format("{}", t->role), fmt::format("{}", t->type), {t->dims.begin(), t->dims.end()},
                {t->strides.begin(), t->strides.end()}});
    return out;
}

}  // namespace sdpa
