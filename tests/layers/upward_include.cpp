// Must not build (layers.upward_include_does_not_build): compiled with the include roots of the
// compare layer only (sdpabench_compare uses core and ref), it includes a header of the backends
// layer above it, which is not on its include path (docs/design.md "Layers and folders").
#include "backends/backend.hpp"
