# sdpabench_header_version(<out-var> <header> <major> <minor> <patch>): sets <out-var> to
# "MAJOR.MINOR.PATCH" read from the "#define <major> N" (and <minor>, <patch>) lines of a library's
# version header (cudnn_version.h, dnnl_version.h, torch's version.h). A header without one of
# the three defines is a configure error naming the header and the define.
function(sdpabench_header_version out header major minor patch)
  file(STRINGS "${header}" _lines REGEX "#define +(${major}|${minor}|${patch}) +[0-9]+")
  set(_parts "")
  foreach(_name ${major} ${minor} ${patch})
    string(REGEX MATCH "#define +${_name} +([0-9]+)" _m "${_lines}")
    if(NOT _m)
      message(FATAL_ERROR "${header}: no '#define ${_name} <number>' line (expected the library's version header)")
    endif()
    list(APPEND _parts "${CMAKE_MATCH_1}")
  endforeach()
  list(JOIN _parts "." _v)
  set(${out} "${_v}" PARENT_SCOPE)
endfunction()
