#include <gtest/gtest.h>

#include "core/redact.hpp"

namespace sdpa {
namespace {

TEST(Redact, UrlUserinfoPassword) {
    EXPECT_EQ(redact_secrets("--report=postgresql:postgresql://u:Pa55w0rd@db.example:5432/results --dir=bwd"),
            "--report=postgresql:postgresql://u:****@db.example:5432/results --dir=bwd");
    // A user without a password, and a plain path, are left as they are.
    EXPECT_EQ(redact_secrets("postgresql://postgres@127.0.0.1:5432/sdpabench"), "postgresql://postgres@127.0.0.1:5432/sdpabench");
    EXPECT_EQ(redact_secrets("--report=sqlite:/tmp/a:b@c.db"), "--report=sqlite:/tmp/a:b@c.db");
}

TEST(Redact, RawSlashOrAtInThePasswordAndNoScheme) {
    // Characters that should have been percent-encoded still belong to the password.
    EXPECT_EQ(redact_secrets("postgresql://postgres:pa/ss@127.0.0.1:5/db x"), "postgresql://postgres:****@127.0.0.1:5/db x");
    EXPECT_EQ(redact_secrets("postgresql://postgres:pa@LEAK@127.0.0.1:5/db"), "postgresql://postgres:****@127.0.0.1:5/db");
    // "--report=postgresql://u:p@h" (the KIND: prefix forgotten) reaches libpq as "//u:p@h".
    EXPECT_EQ(redact_secrets("'//postgres:LEAKJ@127.0.0.1:5/db'"), "'//postgres:****@127.0.0.1:5/db'");
}

TEST(Redact, KeywordsQueryAndEnvironment) {
    EXPECT_EQ(redact_secrets("host=h port=5 dbname=d user=u password=s3cret"), "host=h port=5 dbname=d user=u password=****");
    EXPECT_EQ(redact_secrets("host=h password = 'with blank \\' quote' dbname=d"), "host=h password = **** dbname=d");
    EXPECT_EQ(redact_secrets("postgresql://h/d?user=u&password=s3cret&sslmode=require"),
            "postgresql://h/d?user=u&password=****");
    // libpq keeps '&' and quotes inside an unquoted keyword value.
    EXPECT_EQ(redact_secrets("host=h password=ab&c\"d'e dbname=d"), "host=h password=**** dbname=d");
    EXPECT_EQ(redact_secrets("PGPASSWORD=s3cret sdpabench"), "PGPASSWORD=**** sdpabench");
    EXPECT_EQ(redact_secrets("API_TOKEN=abc MY_SECRET=def Passwd=ghi"), "API_TOKEN=**** MY_SECRET=**** Passwd=****");
    // Nothing secret: unchanged.
    EXPECT_EQ(redact_secrets("--dir=bwd --dt=bf16 b1hq4sq256d64"), "--dir=bwd --dt=bf16 b1hq4sq256d64");
}

TEST(Redact, Idempotent) {
    const std::string once = redact_secrets("postgresql://u:p@h/d?password=x PGPASSWORD=y");
    EXPECT_EQ(redact_secrets(once), once);
    EXPECT_EQ(once, "postgresql://u:****@h/d?password=**** PGPASSWORD=****");
}

}  // namespace
}  // namespace sdpa
