#include "core/redact.hpp"

#include <regex>

namespace sdpa {

std::string redact_secrets(std::string_view text) {
    // A URL's userinfo "user:password@" (the scheme may be missing: "//user:password@host"; the
    // user part has no ':', '/', '@' or blank), up to the token's last '@': a password with a raw
    // '/' or '@' (which should be percent-encoded) is masked whole, and more rather than less.
    static const std::regex userinfo(R"(((?:[A-Za-z][A-Za-z0-9+.-]*:)?//[^:/@\s]*):\S*@)");
    // NAME=VALUE with NAME ending in a secret's word; VALUE quoted (libpq's '...' with \-escapes)
    // or up to a blank (libpq's keyword values hold '&' and quotes; in a URI's query the
    // parameters after the password are masked with it).
    static const std::regex assignment(R"(([A-Za-z_]*(password|passwd|secret|token)\s*=\s*)('(?:[^'\\]|\\.)*'?|\S*))",
            std::regex::icase);
    std::string s(text);
    s = std::regex_replace(s, userinfo, "$1:" + std::string(kRedacted) + "@");
    s = std::regex_replace(s, assignment, "$1" + std::string(kRedacted));
    return s;
}

}  // namespace sdpa
