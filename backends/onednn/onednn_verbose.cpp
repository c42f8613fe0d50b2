#include "backends/onednn/onednn_verbose.hpp"

#include <unistd.h>

#include <algorithm>
#include <charconv>

namespace sdpa::onednn {

namespace {

/// `line` split at every ',' (oneDNN's verbose records quote nothing).
std::vector<std::string_view> fields(std::string_view line) {
    std::vector<std::string_view> out;
    std::size_t pos = 0;
    while (true) {
        const std::size_t comma = line.find(',', pos);
        out.push_back(line.substr(pos, comma == line.npos ? line.npos : comma - pos));
        if (comma == line.npos) return out;
        pos = comma + 1;
    }
}

/// The number in `s`, or -1.
double number(std::string_view s) {
    double v = -1;
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    return ec == std::errc() && end == s.data() + s.size() ? v : -1;
}

}  // namespace

std::vector<VerbosePartition> parse_verbose(std::string_view text) {
    std::vector<VerbosePartition> out;
    std::vector<ImplPart> pending;  // primitives printed since the last graph line
    std::size_t pos = 0;
    while (pos < text.size()) {
        const std::size_t nl = text.find('\n', pos);
        std::string_view line = text.substr(pos, nl == text.npos ? text.npos : nl - pos);
        pos = nl == text.npos ? text.size() : nl + 1;
        if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
        if (!line.starts_with("onednn_verbose,")) continue;
        const auto f = fields(line);
        // The component word, after the marker and the optional version and timestamp columns.
        const auto comp = std::find_if(f.begin() + 1, f.end(), [](std::string_view w) {
            return w == "primitive" || w == "graph";
        });
        if (comp == f.end() || comp + 1 == f.end()) continue;
        const std::string_view op = *(comp + 1);
        const bool exec = op == "exec";
        const std::size_t at = static_cast<std::size_t>(comp - f.begin()) + 2;  // the engine
        if (*comp == "primitive") {
            if (!exec && !op.starts_with("create")) continue;
            // engine, primitive kind, implementation, ..., problem description, time
            if (f.size() < at + 4) continue;
            pending.push_back(ImplPart{"", std::string(f[at + 1]), std::string(f[at + 2]),
                std::string(f[f.size() - 2]), exec ? number(f.back()) : -1.0});
            continue;
        }
        if (!exec && !op.starts_with("compile")) continue;
        // engine, partition id, partition kind, op names, ..., implementation, backend, time
        if (f.size() < at + 6 || !f[f.size() - 2].ends_with("_backend")) continue;
        out.push_back(VerbosePartition{std::string(f[f.size() - 3]), std::string(f[at + 2]), std::move(pending)});
        pending.clear();
    }
    return out;
}

StdoutCapture::StdoutCapture() {
    std::fflush(stdout);
    file_ = std::tmpfile();
    if (!file_) return;
    saved_ = ::dup(STDOUT_FILENO);
    if (saved_ < 0 || ::dup2(::fileno(file_), STDOUT_FILENO) < 0) {
        if (saved_ >= 0) ::close(saved_);
        saved_ = -1;
        std::fclose(file_);
        file_ = nullptr;
    }
}

StdoutCapture::~StdoutCapture() { finish(); }

std::string StdoutCapture::finish() {
    if (!file_) return {};
    std::fflush(stdout);  // what printf buffered goes to the capture, not to the restored stdout
    ::dup2(saved_, STDOUT_FILENO);
    ::close(saved_);
    saved_ = -1;
    std::string text;
    std::rewind(file_);
    constexpr std::size_t kMax = std::size_t{16} << 20;
    char buf[65536];
    for (std::size_t n; text.size() < kMax && (n = std::fread(buf, 1, sizeof buf, file_)) > 0;)
        text.append(buf, std::min(n, kMax - text.size()));
    std::fclose(file_);
    file_ = nullptr;
    return text;
}

}  // namespace sdpa::onednn
