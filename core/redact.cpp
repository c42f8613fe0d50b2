#include "core/redact.hpp"

#include <regex>

namespace sdpa {

std::string redact_secrets(std::string_view text) {
    // A URL's userinfo "user:password@" (the user part has no ':', '/', '@' or blank).
    static const std::regex userinfo(R"(([A-Za-z][A-Za-z0-9+.-]*://[^:/@\s]*):[^@/\s]*@)");
    // NAME=VALUE with NAME ending in a secret's word; VALUE quoted (libpq's '...' with \-escapes)
    // or up to a blank, '&' or a quote.
    static const std::regex assignment(R"(([A-Za-z_]*(password|passwd|secret|token)\s*=\s*)('(?:[^'\\]|\\.)*'?|[^\s&'"]*))",
            std::regex::icase);
    std::string s(text);
    s = std::regex_replace(s, userinfo, "$1:" + std::string(kRedacted) + "@");
    s = std::regex_replace(s, assignment, "$1" + std::string(kRedacted));
    return s;
}

}  // namespace sdpa
