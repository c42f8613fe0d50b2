// Secrets kept out of everything sdpabench writes: the passwords a results store's URL may carry
// are replaced by "****" wherever a command line, a run context or a message is written
// (console, every report format, both stores, the history page: docs/tracking.md#passwords).
#pragma once

#include <string>
#include <string_view>

namespace sdpa {

/// The mask a redacted secret is replaced with.
inline constexpr std::string_view kRedacted = "****";

/// `text` with every secret replaced by kRedacted, all else unchanged:
///  - the password of a URL's userinfo: "postgresql://user:PASS@host/db" -> "postgresql://user:****@host/db"
///    (RFC 3986 section 3.2.1: userinfo is "user:password" before '@'), up to the last '@' of the
///    blank-free token (a raw '/' or '@' in the password is masked too), the scheme optional;
///  - the value of every NAME=VALUE whose NAME ends in password, passwd, secret or token in any
///    case, up to a blank: libpq's "password=PASS" keyword (quoted values 'with blanks' included:
///    libpq's connection-string syntax), a URI's "?password=PASS" (with the parameters after it),
///    an environment assignment such as "PGPASSWORD=PASS" in a recorded command.
/// More may be masked than the secret; never less.
/// Idempotent: redacting twice gives the same text.
std::string redact_secrets(std::string_view text);

}  // namespace sdpa
