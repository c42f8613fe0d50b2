// The only place that knows which backends are compiled in.
#include "backends/backend.hpp"
#include "backends/faulty/faulty_backend.hpp"
#include "backends/onednn/onednn_backend.hpp"
#include "backends/ref/ref_backend.hpp"

namespace sdpa {

std::vector<std::string> backend_names() { return {"onednn", "ref"}; }

std::unique_ptr<Backend> make_backend(std::string_view name) {
    if (name == "onednn") return make_onednn_backend();
    if (name == "ref") return std::make_unique<RefBackend>();
    return make_faulty_backend(name);  // "faulty:KIND", else nullptr
}

}  // namespace sdpa
