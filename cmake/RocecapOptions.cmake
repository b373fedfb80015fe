# Build options. Optional backends are detected (AUTO) and can be forced ON or OFF.
set(ROCECAP_WITH_VERBS AUTO CACHE STRING "libibverbs backend: AUTO, ON or OFF")
set(ROCECAP_WITH_CUDA AUTO CACHE STRING "CUDA runtime for GPU payload memory: AUTO, ON or OFF")
set_property(CACHE ROCECAP_WITH_VERBS PROPERTY STRINGS AUTO ON OFF)
set_property(CACHE ROCECAP_WITH_CUDA PROPERTY STRINGS AUTO ON OFF)
option(ROCECAP_WERROR "Treat warnings as errors (CI)" OFF)
option(ROCECAP_SANITIZE "Build with AddressSanitizer and UndefinedBehaviorSanitizer" OFF)
option(ROCECAP_FUZZ "Build libFuzzer targets (needs clang)" OFF)
option(ROCECAP_BUILD_BENCH "Build benchmarks (needs Google Benchmark)" ON)
set(ROCECAP_FUZZ_SECONDS 20 CACHE STRING "Seconds each fuzz target runs under ctest")

add_library(rocecap_warnings INTERFACE)
target_compile_options(rocecap_warnings INTERFACE
  -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor -Wcast-align -Woverloaded-virtual
  -Wnull-dereference -Wimplicit-fallthrough -Wformat=2)
if(ROCECAP_WERROR)
  target_compile_options(rocecap_warnings INTERFACE -Werror)
endif()

if(ROCECAP_SANITIZE)
  add_compile_options(-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined)
  add_link_options(-fsanitize=address,undefined)
endif()

if(ROCECAP_FUZZ AND NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
  message(FATAL_ERROR "ROCECAP_FUZZ needs clang (e.g. -DCMAKE_CXX_COMPILER=clang++-14)")
endif()
