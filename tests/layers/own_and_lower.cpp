// Must build (the control of layers.upward_include_does_not_build): compiled with the include
// roots of the compare layer, it includes its own headers and those of the layers it uses.
#include "compare/compare.hpp"
#include "core/problem.hpp"
#include "ref/sdpa_ref.hpp"
