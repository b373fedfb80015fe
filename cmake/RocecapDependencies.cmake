# Third-party dependencies, all from Debian 12 packages (scripts/install-deps.sh).
find_package(PkgConfig REQUIRED)
find_package(Threads REQUIRED)
find_package(GTest REQUIRED)
find_package(CLI11 CONFIG REQUIRED)
find_package(nlohmann_json 3 REQUIRED)
find_package(fmt REQUIRED)
find_package(spdlog REQUIRED)
find_package(yaml-cpp CONFIG REQUIRED)
# fleet/: etcd's v3 JSON gateway over HTTP(S) (fleet/README.md says why not gRPC).
find_package(CURL REQUIRED)
# Debian 12 ships prometheus-cpp 1.0.1 without a version file: no version may be asked for.
# Only its core (metric families, TextSerializer): the metrics listener is our own event-driven
# HTTP server (daemon/lib/listeners/http_listener.hpp). The package's config still finds civetweb for its
# pull library, so libcivetweb-dev stays installed.
find_package(prometheus-cpp CONFIG REQUIRED)
pkg_check_modules(PCAP REQUIRED IMPORTED_TARGET libpcap)
pkg_check_modules(SYSTEMD REQUIRED IMPORTED_TARGET libsystemd)
# io_uring for O_DIRECT output files (writers/uring_queue.hpp); optional: without it those
# files are written with write(), and the run log says why.
pkg_check_modules(URING IMPORTED_TARGET liburing)
if(URING_FOUND)
  message(STATUS "rocecap: liburing ${URING_VERSION}: O_DIRECT output through io_uring")
else()
  message(STATUS "rocecap: liburing not found (apt-get install liburing-dev): O_DIRECT output "
                 "files use write()")
endif()

# yaml-cpp 0.7 (Debian 12) names its target yaml-cpp; 0.8 renames it yaml-cpp::yaml-cpp.
if(TARGET yaml-cpp AND NOT TARGET yaml-cpp::yaml-cpp)
  add_library(yaml-cpp::yaml-cpp ALIAS yaml-cpp)
endif()

set(ROCECAP_HAVE_VERBS OFF)
if(NOT ROCECAP_WITH_VERBS STREQUAL "OFF")
  pkg_check_modules(IBVERBS IMPORTED_TARGET libibverbs)
  if(IBVERBS_FOUND)
    set(ROCECAP_HAVE_VERBS ON)
  elseif(ROCECAP_WITH_VERBS STREQUAL "ON")
    message(FATAL_ERROR "ROCECAP_WITH_VERBS=ON but libibverbs was not found (apt-get install libibverbs-dev)")
  endif()
endif()

set(ROCECAP_HAVE_CUDA OFF)
if(NOT ROCECAP_WITH_CUDA STREQUAL "OFF")
  # Which toolkit: CUDAToolkit_ROOT (or an nvcc on PATH, then /usr/local/cuda) decides, as in
  # CMake's FindCUDAToolkit. Debian's own toolkit (nvidia-cuda-toolkit, CUDA 11.8: nvcc in
  # /usr/bin, headers in /usr/include) is chosen with -DCUDAToolkit_ROOT=/usr; scripts/test.sh
  # builds that way too, next to the CUDA in /usr/local/cuda and a build without CUDA.
  find_package(CUDAToolkit QUIET)
  # Only the runtime is linked (statically, so no libcudart.so is needed at run time); the one
  # driver call goes through dlopen("libcuda.so.1") (capture/memory/cuda_driver.hpp).
  # CUDA::cuda_driver (the libcuda.so stub) must never be linked: such a binary does not start
  # on a host without the NVIDIA driver.
  # The minimum is 11.7, the first with cuMemGetHandleForAddressRange (dma-buf export). An
  # older toolkit is no error with AUTO: the build goes on without CUDA (host payload memory),
  # as it does where no toolkit is found; ON insists on CUDA and refuses it.
  set(_rocecap_cuda_min 11.7)
  if(CUDAToolkit_FOUND AND TARGET CUDA::cudart_static AND
     CUDAToolkit_VERSION VERSION_LESS _rocecap_cuda_min)
    string(CONCAT _rocecap_why "CUDA toolkit ${CUDAToolkit_VERSION} is older than "
           "${_rocecap_cuda_min}, the first with dma-buf export (Debian 12's "
           "nvidia-cuda-toolkit is 11.8)")
    if(ROCECAP_WITH_CUDA STREQUAL "ON")
      message(FATAL_ERROR "ROCECAP_WITH_CUDA=ON: ${_rocecap_why}")
    endif()
    message(STATUS "rocecap: ${_rocecap_why}: building without CUDA (GPU payload memory off; "
                   "-DCUDAToolkit_ROOT=<a newer toolkit> to build it)")
  elseif(CUDAToolkit_FOUND AND TARGET CUDA::cudart_static)
    set(ROCECAP_HAVE_CUDA ON)
    get_target_property(_rocecap_cudart CUDA::cudart_static IMPORTED_LOCATION)
    message(STATUS "rocecap: CUDA toolkit ${CUDAToolkit_VERSION} (nvcc ${CUDAToolkit_NVCC_EXECUTABLE}, "
                   "headers ${CUDAToolkit_INCLUDE_DIRS}, runtime ${_rocecap_cudart}): "
                   "GPU payload memory built (CUDA::cudart_static)")
  elseif(ROCECAP_WITH_CUDA STREQUAL "ON")
    message(FATAL_ERROR "ROCECAP_WITH_CUDA=ON but the CUDA toolkit was not found")
  endif()
endif()

set(ROCECAP_HAVE_BENCH OFF)
if(ROCECAP_BUILD_BENCH)
  find_package(benchmark QUIET)
  if(benchmark_FOUND)
    set(ROCECAP_HAVE_BENCH ON)
  else()
    set(ROCECAP_BUILD_BENCH OFF)
  endif()
endif()

function(rocecap_summary)
  set(_cuda ${ROCECAP_HAVE_CUDA})
  if(ROCECAP_HAVE_CUDA)
    set(_cuda "ON(${CUDAToolkit_VERSION})")
  endif()
  message(STATUS "rocecap ${PROJECT_VERSION}: verbs=${ROCECAP_HAVE_VERBS} cuda=${_cuda} "
                 "bench=${ROCECAP_BUILD_BENCH} sanitize=${ROCECAP_SANITIZE} fuzz=${ROCECAP_FUZZ} "
                 "werror=${ROCECAP_WERROR}")
endfunction()
