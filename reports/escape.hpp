// Escaping of free text (reasons, repro lines) for the file formats the reporters write.
#pragma once

#include <string>
#include <string_view>

namespace sdpa {

/// One CSV field (RFC 4180): quoted, with inner '"' doubled, when it contains a comma, a quote,
/// CR or LF; unchanged otherwise.
std::string csv_field(std::string_view s);

/// Text for XML 1.0 character data and attribute values: & < > " ' as entities; LF, CR and TAB
/// as character references (so attribute values keep them); other control characters and
/// invalid UTF-8 sequences become U+FFFD (they are not allowed in XML 1.0).
std::string xml_escape(std::string_view s);

}  // namespace sdpa
