// The only place that knows which backends are compiled in.
#include "backends/backend.hpp"
#include "backends/onednn/onednn_backend.hpp"
#include "backends/ref/ref_backend.hpp"
#include "backends/test/test_backends.hpp"

namespace sdpa {

std::vector<std::string> backend_names() { return {"onednn", "ref"}; }

std::unique_ptr<Backend> make_backend(std::string_view name) {
    if (name == "onednn") return make_onednn_backend();
    if (name == "ref") return std::make_unique<RefBackend>();
    return make_test_backend(name);  // test-only kinds ("test:*"), not in backend_names()
}

}  // namespace sdpa
