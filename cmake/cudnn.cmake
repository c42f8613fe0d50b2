# The cuDNN backend's dependencies: CUDA Toolkit (CMake's CUDAToolkit), cuDNN 9 headers and
# libraries (version read from cudnn_version.h), and the header-only cuDNN frontend from the
# nvidia-cudnn-frontend wheel that scripts/setup.sh installs. SDPABENCH_CUDNN defaults to ON when
# the toolkit is found; without it the backend is simply not compiled in.
# Defines: SDPABENCH_CUDNN (option) and, when ON, the imported target sdpabench::cudnn.
find_package(CUDAToolkit QUIET)
set(_cudnn_default OFF)
if(CUDAToolkit_FOUND)
  set(_cudnn_default ON)
endif()
option(SDPABENCH_CUDNN "Build the cuDNN backend (needs the CUDA Toolkit, cuDNN 9 and the cuDNN frontend)" ${_cudnn_default})
set(SDPABENCH_CUDNN_FRONTEND_ROOT "/opt/sdpabench-deps/cudnn-frontend-1.19.1" CACHE PATH
    "Prefix holding include/cudnn_frontend.h (scripts/setup.sh installs the pinned wheel here)")
# A cuDNN outside the toolkit, e.g. the one PyTorch's pip wheels bring (site-packages/nvidia/cudnn,
# with include/ and lib/libcudnn.so.9 but no unversioned libcudnn.so; scripts/device_check.sh finds it).
set(SDPABENCH_CUDNN_ROOT "" CACHE PATH "Prefix holding include/cudnn_version.h and lib/libcudnn.so.9 (optional)")
if(NOT SDPABENCH_CUDNN)
  if(CUDAToolkit_FOUND)
    message(STATUS "sdpabench: cuDNN backend off (SDPABENCH_CUDNN=OFF)")
  else()
    message(STATUS "sdpabench: cuDNN backend off (no CUDA Toolkit found; set CUDAToolkit_ROOT)")
  endif()
  return()
endif()
if(NOT CUDAToolkit_FOUND)
  message(FATAL_ERROR "SDPABENCH_CUDNN=ON but CMake's CUDAToolkit was not found (set CUDAToolkit_ROOT).")
endif()

find_path(SDPABENCH_CUDNN_INCLUDE cudnn_version.h
  HINTS "${SDPABENCH_CUDNN_ROOT}/include" ${CUDAToolkit_INCLUDE_DIRS} "${CUDAToolkit_LIBRARY_ROOT}/include"
        /usr/local/include /usr/include)
# NAMES_PER_DIR: the first directory with either name wins, so a SDPABENCH_CUDNN_ROOT holding only
# libcudnn.so.9 (a pip wheel) is taken before a toolkit's unversioned libcudnn.so further down the list.
find_library(SDPABENCH_CUDNN_LIB NAMES cudnn libcudnn.so.9 NAMES_PER_DIR
  HINTS "${SDPABENCH_CUDNN_ROOT}/lib" ${CUDAToolkit_LIBRARY_DIR} "${CUDAToolkit_LIBRARY_ROOT}/lib64" /usr/lib/x86_64-linux-gnu)
find_path(SDPABENCH_CUDNN_FRONTEND_INCLUDE cudnn_frontend.h
  HINTS "${SDPABENCH_CUDNN_FRONTEND_ROOT}/include" NO_DEFAULT_PATH)
if(NOT SDPABENCH_CUDNN_INCLUDE OR NOT SDPABENCH_CUDNN_LIB)
  message(FATAL_ERROR "cuDNN 9 (cudnn_version.h, libcudnn.so) was not found next to the CUDA Toolkit at "
    "${CUDAToolkit_LIBRARY_ROOT}; install cuDNN 9 or configure with -DSDPABENCH_CUDNN=OFF.")
endif()
if(NOT SDPABENCH_CUDNN_FRONTEND_INCLUDE)
  message(FATAL_ERROR "The cuDNN frontend headers were not found under ${SDPABENCH_CUDNN_FRONTEND_ROOT}: "
    "run scripts/setup.sh (it installs the pinned nvidia-cudnn-frontend wheel), point "
    "-DSDPABENCH_CUDNN_FRONTEND_ROOT=<prefix> at another copy, or configure with -DSDPABENCH_CUDNN=OFF.")
endif()

sdpabench_header_version(SDPABENCH_CUDNN_VERSION "${SDPABENCH_CUDNN_INCLUDE}/cudnn_version.h"
  CUDNN_MAJOR CUDNN_MINOR CUDNN_PATCHLEVEL)
if(SDPABENCH_CUDNN_VERSION VERSION_LESS 9 OR SDPABENCH_CUDNN_VERSION VERSION_GREATER_EQUAL 10)
  message(FATAL_ERROR "cuDNN ${SDPABENCH_CUDNN_VERSION} at ${SDPABENCH_CUDNN_INCLUDE}: sdpabench needs cuDNN 9.")
endif()

get_filename_component(_cudnn_libdir "${SDPABENCH_CUDNN_LIB}" REALPATH)
get_filename_component(_cudnn_libdir "${_cudnn_libdir}" DIRECTORY)
add_library(sdpabench::cudnn INTERFACE IMPORTED)
# The frontend headers and cuDNN's are third-party: no warnings from them.
target_include_directories(sdpabench::cudnn SYSTEM INTERFACE "${SDPABENCH_CUDNN_FRONTEND_INCLUDE}"
  "${SDPABENCH_CUDNN_INCLUDE}" ${CUDAToolkit_INCLUDE_DIRS})
# libcudnn is dlopen'ed (frontend dynamic loading); the CUDA runtime is static (it dlopens
# libcuda.so.1 itself), so the binary starts without a driver. The frontend dlopens
# libcudart.so.12/13 and our code dlopens libcudnn.so.9: an RPATH (not RUNPATH, which dlopen from
# a library ignores) to both directories finds them without LD_LIBRARY_PATH.
target_link_libraries(sdpabench::cudnn INTERFACE CUDA::cudart_static ${CMAKE_DL_LIBS}
  "-Wl,-rpath,${CUDAToolkit_LIBRARY_DIR}:${_cudnn_libdir}" "-Wl,--disable-new-dtags")
target_compile_definitions(sdpabench::cudnn INTERFACE NV_CUDNN_FRONTEND_USE_DYNAMIC_LOADING
  SDPABENCH_CUDNN_LIBDIR="${_cudnn_libdir}")
message(STATUS "sdpabench: cuDNN ${SDPABENCH_CUDNN_VERSION} (${_cudnn_libdir}), frontend ${SDPABENCH_CUDNN_FRONTEND_INCLUDE}, CUDA ${CUDAToolkit_VERSION}")
