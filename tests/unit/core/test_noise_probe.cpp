#include <gtest/gtest.h>

#include <cmath>
#include <fstream>

#include "core/noise_probe.hpp"

namespace sdpa {
namespace {

TEST(NoiseProbe, ASampleHasFiniteValuesInTheirRanges) {
    for (const int threads : {0, 1, 2}) {  // 0 runs as 1
        const NoiseSample s = noise_sample(threads);
        EXPECT_EQ(s.calib_reps, kNoiseCalibReps);
        EXPECT_TRUE(std::isfinite(s.calib_ms) && s.calib_ms > 0) << s.calib_ms;
        EXPECT_TRUE(std::isfinite(s.calib_cv) && s.calib_cv >= 0) << s.calib_cv;
        // The fastest repetition is never slower than itself: at most all but one are slow.
        EXPECT_TRUE(s.calib_slow >= 0 && s.calib_slow <= 1.0 - 1.0 / s.calib_reps) << s.calib_slow;
        // Linux has both files; a load average is never negative, a stolen share is in [0, 1].
        ASSERT_TRUE(s.loadavg.has_value());
        EXPECT_TRUE(std::isfinite(*s.loadavg) && *s.loadavg >= 0) << *s.loadavg;
        ASSERT_EQ(s.steal.has_value(), std::ifstream("/proc/stat").good());
        ASSERT_EQ(s.total_jiffies.has_value(), s.steal.has_value());
        if (s.total_jiffies) {
            EXPECT_TRUE(*s.total_jiffies > 0 && *s.steal_jiffies <= *s.total_jiffies);
        }
        if (s.steal) {
            EXPECT_TRUE(*s.steal >= 0 && *s.steal <= 1) << *s.steal;
        }
    }
}

}  // namespace
}  // namespace sdpa
