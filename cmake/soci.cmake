# The results store's database library (reports/results_store.cpp): SOCI with its SQLite and
# PostgreSQL backends, from Debian's libsoci-dev (which ships no CMake package: found by path),
# with the client headers its backend headers include (libsqlite3-dev, libpq-dev). Defines the
# imported target sdpabench::soci. scripts/setup.sh installs all three.
find_path(SDPABENCH_SOCI_INCLUDE soci/soci.h)
find_path(SDPABENCH_SQLITE3_INCLUDE sqlite3.h)
find_path(SDPABENCH_LIBPQ_INCLUDE libpq-fe.h PATH_SUFFIXES postgresql)
find_library(SDPABENCH_SOCI_CORE soci_core)
find_library(SDPABENCH_SOCI_SQLITE3 soci_sqlite3)
find_library(SDPABENCH_SOCI_POSTGRESQL soci_postgresql)
find_library(SDPABENCH_LIBPQ pq)
foreach(v SDPABENCH_SOCI_INCLUDE SDPABENCH_SQLITE3_INCLUDE SDPABENCH_LIBPQ_INCLUDE SDPABENCH_SOCI_CORE
    SDPABENCH_SOCI_SQLITE3 SDPABENCH_SOCI_POSTGRESQL SDPABENCH_LIBPQ)
  if(NOT ${v})
    message(FATAL_ERROR "${v} was not found: the results store needs SOCI with its SQLite and PostgreSQL "
      "backends (Debian's libsoci-dev, libsqlite3-dev, libpq-dev): run scripts/setup.sh.")
  endif()
endforeach()
add_library(sdpabench::soci INTERFACE IMPORTED)
target_include_directories(sdpabench::soci SYSTEM INTERFACE ${SDPABENCH_SOCI_INCLUDE} ${SDPABENCH_SQLITE3_INCLUDE}
  ${SDPABENCH_LIBPQ_INCLUDE})
target_link_libraries(sdpabench::soci INTERFACE ${SDPABENCH_SOCI_SQLITE3} ${SDPABENCH_SOCI_POSTGRESQL}
  ${SDPABENCH_SOCI_CORE} ${SDPABENCH_LIBPQ})

# UBSan's vptr check (-fsanitize=undefined: the asan preset) makes every file that uses SOCI
# reference the typeinfo of SOCI's internal classes (soci::details::ref_counted_statement, ...),
# which Debian's libsoci does not export, so the link fails. The files that include SOCI's headers
# are built with -fno-sanitize=vptr (SDPABENCH_SOCI_SOURCE_OPTIONS; every other UBSan check stays).
set(SDPABENCH_SOCI_SOURCE_OPTIONS "")
if(CMAKE_CXX_FLAGS MATCHES "-fsanitize=[^ ]*undefined")
  set(SDPABENCH_SOCI_SOURCE_OPTIONS -fno-sanitize=vptr)
endif()
