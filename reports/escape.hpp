// Escaping of free text (reasons, repro lines, messages about user input) for the file formats the
// reporters write and for one-line messages.
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

/// One word for a POSIX shell (a command to paste): `s` in single quotes, each ' inside written '\''
/// (POSIX.1-2017 XCU 2.2.2: nothing is special inside single quotes but the quote itself).
std::string shell_word(std::string_view s);

/// `text` with control bytes, quotes, backslashes and invalid UTF-8 escaped (\xNN, \n, \", ...) so
/// that error messages about binary garbage stay one printable line. Valid UTF-8 is kept.
std::string escape_for_message(std::string_view text);

}  // namespace sdpa
