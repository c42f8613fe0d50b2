# The PyTorch backend's plugin: libsdpabench_torch.so, the one translation unit that includes
# libtorch (backends/torch/torch_plugin.cpp), built when libtorch's CPU library is found. The
# sdpabench executable does not link libtorch: it dlopens the plugin on the first --backend=torch:*
# (backends/torch/torch_backend.cpp), so that every other run starts without loading 450 MB of
# libtorch and its OpenMP, and a machine without libtorch runs everything else.
# libtorch comes from PyPI's torch wheel, installed by scripts/setup.sh (pip --no-deps --target).
# Defines: SDPABENCH_TORCH (option) and, when ON, the target sdpabench_torch.
set(SDPABENCH_TORCH_ROOT "/opt/sdpabench-deps/torch-2.15.0/torch" CACHE PATH
    "The torch package folder of PyPI's torch wheel (include/, lib/libtorch_cpu.so); scripts/setup.sh installs it here")
set(_torch_default OFF)
if(EXISTS "${SDPABENCH_TORCH_ROOT}/lib/libtorch_cpu.so" AND EXISTS "${SDPABENCH_TORCH_ROOT}/include/ATen/ATen.h")
  set(_torch_default ON)
endif()
option(SDPABENCH_TORCH "Build the PyTorch backend plugin (needs libtorch from the torch wheel)" ${_torch_default})
if(NOT SDPABENCH_TORCH)
  message(STATUS "sdpabench: PyTorch backend off (no libtorch at ${SDPABENCH_TORCH_ROOT}; scripts/setup.sh installs it)")
  return()
endif()

# PyPI's wheel is built with CUDA: libtorch_cpu.so itself needs the CUDA runtime and CUPTI
# (libcudart.so.13, libcupti.so.13), which this machine kind has with its CUDA Toolkit. Without them
# the plugin would not load: say so now rather than at the first torch case.
execute_process(COMMAND ldd "${SDPABENCH_TORCH_ROOT}/lib/libtorch_cpu.so" OUTPUT_VARIABLE _torch_ldd ERROR_QUIET)
string(REGEX MATCHALL "[^\n\t ]+ => not found" _torch_missing "${_torch_ldd}")
if(_torch_missing)
  message(WARNING "sdpabench: PyTorch backend off: libtorch_cpu.so needs libraries this machine lacks: ${_torch_missing}")
  set(SDPABENCH_TORCH OFF CACHE BOOL "" FORCE)
  return()
endif()

# torch >= 2.8 keeps the version in torch/headeronly/version.h, earlier ones in torch/version.h
# (scripts/device_check.sh builds against whatever torch the GPU machine has).
set(_torch_version_h "${SDPABENCH_TORCH_ROOT}/include/torch/headeronly/version.h")
if(NOT EXISTS "${_torch_version_h}")
  set(_torch_version_h "${SDPABENCH_TORCH_ROOT}/include/torch/version.h")
endif()
sdpabench_header_version(SDPABENCH_TORCH_VERSION "${_torch_version_h}"
  TORCH_VERSION_MAJOR TORCH_VERSION_MINOR TORCH_VERSION_PATCH)
message(STATUS "sdpabench: PyTorch backend plugin with libtorch ${SDPABENCH_TORCH_VERSION} (${SDPABENCH_TORCH_ROOT})")

add_library(sdpabench_torch MODULE backends/torch/torch_plugin.cpp)
# Next to the executable, where backends/torch/torch_backend.cpp looks for it first.
set_target_properties(sdpabench_torch PROPERTIES LIBRARY_OUTPUT_DIRECTORY "${CMAKE_BINARY_DIR}"
  CXX_VISIBILITY_PRESET hidden)
# libtorch's headers are third-party: no warnings from them. The wheel uses the C++11 ABI.
target_include_directories(sdpabench_torch SYSTEM PRIVATE "${SDPABENCH_TORCH_ROOT}/include"
  "${SDPABENCH_TORCH_ROOT}/include/torch/csrc/api/include")
# The project headers it includes (backends/torch/torch_abi.hpp) come from the backends layer's
# include root, set in CMakeLists.txt once that layer is defined.
target_compile_definitions(sdpabench_torch PRIVATE _GLIBCXX_USE_CXX11_ABI=1)
# Glue around library calls, and libtorch's headers are heavy: -O1 keeps the build short.
target_compile_options(sdpabench_torch PRIVATE -O1)
# Only the CPU library and c10: the CUDA rows load libtorch_cuda.so at run time, when a case needs
# it (backends/torch/torch_plugin.cpp sdpabench_torch_cuda), so a machine without a GPU never does.
target_link_libraries(sdpabench_torch PRIVATE "${SDPABENCH_TORCH_ROOT}/lib/libtorch_cpu.so"
  "${SDPABENCH_TORCH_ROOT}/lib/libc10.so")
set_target_properties(sdpabench_torch PROPERTIES BUILD_RPATH "${SDPABENCH_TORCH_ROOT}/lib"
  INSTALL_RPATH "${SDPABENCH_TORCH_ROOT}/lib")
