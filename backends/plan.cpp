#include <chrono>

#include "backends/backend.hpp"

namespace sdpa {

double Plan::execute_timed_ms() {
    const auto t0 = std::chrono::steady_clock::now();
    execute();
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace sdpa
