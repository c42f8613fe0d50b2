#include "driver/determinism.hpp"

#include <bit>
#include <cstdint>

#include <fmt/format.h>

namespace sdpa {

std::optional<std::string> rerun_differs(Plan& plan, const SdpaOutputs& first) {
    plan.poison_outputs();
    plan.execute();
    const SdpaOutputs second = plan.read_outputs();
    const std::pair<Output, const Tensor*> outs[] = {{Output::O, &first.O}, {Output::stats, &first.stats},
        {Output::dQ, &first.dQ}, {Output::dK, &first.dK}, {Output::dV, &first.dV}, {Output::dMask, &first.dMask}};
    const Tensor* seconds[] = {&second.O, &second.stats, &second.dQ, &second.dK, &second.dV, &second.dMask};
    for (std::size_t o = 0; o < 5; ++o) {
        const Tensor& a = *outs[o].second;
        const Tensor& b = *seconds[o];
        if (a.size() != b.size())
            return fmt::format("{}: second run has {} elements, first {}", outs[o].first, b.size(), a.size());
        std::int64_t differ = 0;
        std::size_t first_diff = 0;
        for (std::size_t k = 0; k < a.size(); ++k)
            if (std::bit_cast<std::uint32_t>(a.data[k]) != std::bit_cast<std::uint32_t>(b.data[k]) &&
                    differ++ == 0)
                first_diff = k;
        if (differ > 0) {
            const auto w = a.index(first_diff);
            return fmt::format("{}: not deterministic: {} element(s) differ between two runs, first at ({},{},{},{}): "
                               "{} then {}",
                    outs[o].first, differ, w[0], w[1], w[2], w[3], a.data[first_diff], b.data[first_diff]);
        }
    }
    return std::nullopt;
}

}  // namespace sdpa
