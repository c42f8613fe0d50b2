# Finds oneDNN >= 3.9 with the Graph API and defines the imported target sdpabench::onednn.
# Order: a dnnl CMake package (dnnl_DIR / CMAKE_PREFIX_PATH, e.g. a source build), then the
# wheel prefix that scripts/setup.sh installs (SDPABENCH_ONEDNN_ROOT).
option(SDPABENCH_ONEDNN "Build the oneDNN backend (OFF only for GPU-only builds, e.g. scripts/device_check.sh)" ON)
if(NOT SDPABENCH_ONEDNN)
  message(STATUS "sdpabench: oneDNN backend off")
  set(SDPABENCH_ONEDNN_OCL_ICD "")
  return()
endif()
set(SDPABENCH_ONEDNN_MIN 3.9)
set(SDPABENCH_ONEDNN_ROOT "/opt/sdpabench-deps/onednn-2026.1.0" CACHE PATH
    "Prefix holding include/oneapi/dnnl and lib/libdnnl.so (scripts/setup.sh installs it here)")

find_package(dnnl ${SDPABENCH_ONEDNN_MIN} CONFIG QUIET)
if(dnnl_FOUND)
  add_library(sdpabench::onednn INTERFACE IMPORTED)
  target_link_libraries(sdpabench::onednn INTERFACE DNNL::dnnl)
  set(SDPABENCH_ONEDNN_SOURCE "dnnl package ${dnnl_DIR} (${dnnl_VERSION})")
  set(SDPABENCH_ONEDNN_OCL_ICD "")
  return()
endif()

find_path(SDPABENCH_ONEDNN_INCLUDE oneapi/dnnl/dnnl_graph.hpp
  HINTS "${SDPABENCH_ONEDNN_ROOT}/include" NO_DEFAULT_PATH)
find_library(SDPABENCH_ONEDNN_LIB NAMES dnnl
  HINTS "${SDPABENCH_ONEDNN_ROOT}/lib" NO_DEFAULT_PATH)
if(NOT SDPABENCH_ONEDNN_INCLUDE OR NOT SDPABENCH_ONEDNN_LIB)
  message(FATAL_ERROR
    "oneDNN >= ${SDPABENCH_ONEDNN_MIN} with the Graph API was not found.\n"
    "Run scripts/setup.sh (installs the pinned oneDNN wheels into ${SDPABENCH_ONEDNN_ROOT}),\n"
    "or point CMake at another build: -Ddnnl_DIR=<prefix>/lib/cmake/dnnl or "
    "-DSDPABENCH_ONEDNN_ROOT=<prefix>.")
endif()

sdpabench_header_version(_onednn_version "${SDPABENCH_ONEDNN_INCLUDE}/oneapi/dnnl/dnnl_version.h"
  DNNL_VERSION_MAJOR DNNL_VERSION_MINOR DNNL_VERSION_PATCH)
if(_onednn_version VERSION_LESS SDPABENCH_ONEDNN_MIN)
  message(FATAL_ERROR "oneDNN ${_onednn_version} at ${SDPABENCH_ONEDNN_ROOT} is older than "
    "${SDPABENCH_ONEDNN_MIN}; run scripts/setup.sh or point SDPABENCH_ONEDNN_ROOT at a newer one.")
endif()

get_filename_component(_libdir "${SDPABENCH_ONEDNN_LIB}" DIRECTORY)
add_library(sdpabench::onednn INTERFACE IMPORTED)
target_include_directories(sdpabench::onednn INTERFACE "${SDPABENCH_ONEDNN_INCLUDE}")
# RPATH (not RUNPATH) so the wheel's SYCL/TBB libraries resolve without LD_LIBRARY_PATH.
target_link_libraries(sdpabench::onednn INTERFACE "${SDPABENCH_ONEDNN_LIB}"
  "-Wl,-rpath,${_libdir}" "-Wl,--disable-new-dtags")
set(SDPABENCH_ONEDNN_SOURCE "${SDPABENCH_ONEDNN_ROOT} (${_onednn_version})")
# The wheel's SYCL CPU device is Intel's OpenCL CPU runtime; its bundled .icd file carries an
# unresolved install prefix, so the backend points the ICD loader at the library directly.
if(EXISTS "${_libdir}/libintelocl.so")
  set(SDPABENCH_ONEDNN_OCL_ICD "${_libdir}/libintelocl.so")
else()
  set(SDPABENCH_ONEDNN_OCL_ICD "")
endif()
message(STATUS "sdpabench: oneDNN ${_onednn_version} from ${SDPABENCH_ONEDNN_ROOT}")
