#include "driver/determinism.hpp"

#include <bit>
#include <cstdint>

#include <fmt/format.h>

namespace sdpa {

std::optional<std::string> bitwise_difference(const std::vector<Output>& outputs, const SdpaOutputs& a,
        const SdpaOutputs& b) {
    for (const Output o : outputs) {
        const Tensor& x = a.of(o);
        const Tensor& y = b.of(o);
        if (x.size() != y.size()) return fmt::format("{}: {} elements then {}", o, x.size(), y.size());
        std::int64_t differ = 0;
        std::size_t first = 0;
        for (std::size_t k = 0; k < x.size(); ++k)
            if (std::bit_cast<std::uint32_t>(x.data[k]) != std::bit_cast<std::uint32_t>(y.data[k]) && differ++ == 0)
                first = k;
        if (differ > 0) {
            const auto w = x.index(first);
            return fmt::format("{}: {} element(s) differ, first at ({},{},{},{}): {} then {}", o, differ, w[0], w[1], w[2],
                    w[3], x.data[first], y.data[first]);
        }
    }
    return std::nullopt;
}

std::optional<std::string> rerun_differs(Plan& plan, const std::vector<Output>& outputs, const SdpaOutputs& first) {
    plan.poison_outputs();
    plan.execute();
    if (auto diff = bitwise_difference(outputs, first, plan.read_outputs()))
        return "not deterministic between two runs: " + *diff;
    return std::nullopt;
}

}  // namespace sdpa
