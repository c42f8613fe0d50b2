#include "reports/escape.hpp"

#include <fmt/format.h>

namespace sdpa {

std::string csv_field(std::string_view s) {
    if (s.find_first_of(",\"\r\n") == std::string_view::npos) return std::string(s);
    std::string out = "\"";
    for (char c : s) {
        if (c == '"') out += '"';
        out += c;
    }
    out += '"';
    return out;
}

namespace {

/// Length of the valid UTF-8 sequence starting at s[i] (1-4), or 0 when it is invalid
/// (bad lead byte, missing continuation, overlong form, surrogate, > U+10FFFF).
std::size_t utf8_length(std::string_view s, std::size_t i) {
    const auto b = [&](std::size_t k) { return static_cast<unsigned char>(s[i + k]); };
    const unsigned char c = b(0);
    std::size_t n = 0;
    if (c < 0x80) return 1;
    if (c >= 0xC2 && c <= 0xDF) n = 2;
    else if (c >= 0xE0 && c <= 0xEF) n = 3;
    else if (c >= 0xF0 && c <= 0xF4) n = 4;
    else return 0;
    if (i + n > s.size()) return 0;
    for (std::size_t k = 1; k < n; ++k)
        if ((b(k) & 0xC0) != 0x80) return 0;
    if (n == 3 && c == 0xE0 && b(1) < 0xA0) return 0;  // overlong
    if (n == 3 && c == 0xED && b(1) >= 0xA0) return 0;  // surrogates
    if (n == 4 && c == 0xF0 && b(1) < 0x90) return 0;  // overlong
    if (n == 4 && c == 0xF4 && b(1) >= 0x90) return 0;  // > U+10FFFF
    return n;
}

}  // namespace

std::string xml_escape(std::string_view s) {
    std::string out;
    out.reserve(s.size());
    for (std::size_t i = 0; i < s.size();) {
        const char c = s[i];
        switch (c) {
            case '&': out += "&amp;"; ++i; continue;
            case '<': out += "&lt;"; ++i; continue;
            case '>': out += "&gt;"; ++i; continue;
            case '"': out += "&quot;"; ++i; continue;
            case '\'': out += "&apos;"; ++i; continue;
            case '\n': out += "&#10;"; ++i; continue;
            case '\r': out += "&#13;"; ++i; continue;
            case '\t': out += "&#9;"; ++i; continue;
            default: break;
        }
        const std::size_t n = utf8_length(s, i);
        if (n == 0 || static_cast<unsigned char>(c) < 0x20 || c == 0x7F) {
            out += "\xEF\xBF\xBD";  // U+FFFD
            ++i;
            continue;
        }
        out.append(s.substr(i, n));
        i += n;
    }
    return out;
}

std::string escape_for_message(std::string_view text) {
    // fmt's debug format escapes control bytes and invalid UTF-8 as \xNN; drop its quotes and
    // its escaping of '"' (messages quote with '...', so a double quote needs no escape).
    const std::string quoted = fmt::format("{:?}", text);
    std::string out;
    for (std::size_t i = 1; i + 1 < quoted.size(); ++i) {
        if (quoted[i] == '\\' && i + 2 < quoted.size() && quoted[i + 1] == '"') continue;  // \" -> "
        if (quoted[i] == '\\' && i + 2 < quoted.size() && quoted[i + 1] == '\\') out += quoted[i++];  // keep \\ as is
        out += quoted[i];
    }
    return out;
}

std::string shell_word(std::string_view s) {
    std::string out = "'";
    for (const char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return out + "'";
}

}  // namespace sdpa
