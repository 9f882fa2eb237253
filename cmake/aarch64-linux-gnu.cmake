# CMake toolchain file: cross-compile linerate for aarch64 (BlueField-3 Arm cores) on an
# x86-64 Debian host, against an arm64 sysroot made of unpacked Debian packages.
#
#   scripts/cross-arm64                      # makes the sysroot, builds, tests under qemu
#   cmake -S . -B build-arm64 \
#         -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake \
#         -DLINERATE_ARM64_SYSROOT=/var/cache/linerate/arm64-sysroot \
#         -DLINERATE_ARM_CPU=cortex-a78ae    # optional, see cmake/LinerateCpu.cmake
#
# Inputs (cache variable first, then environment variable, then default):
#   LINERATE_ARM64_SYSROOT       the sysroot (default /var/cache/linerate/arm64-sysroot)
#   LINERATE_ARM64_CROSS_PREFIX  compiler prefix (default aarch64-linux-gnu-)
#   LINERATE_ARM64_EMULATOR      emulator for running target binaries (default qemu-aarch64-static)
# ctest runs the target's test binaries through "<emulator> -L <sysroot>".

set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)

# The toolchain file is read again for every try_compile project: pass our variables along
# (cache variables do not reach those projects, the environment and this list do).
foreach(_var LINERATE_ARM64_SYSROOT LINERATE_ARM64_CROSS_PREFIX LINERATE_ARM64_EMULATOR)
  if(NOT ${_var} AND DEFINED ENV{${_var}} AND NOT "$ENV{${_var}}" STREQUAL "")
    set(${_var} "$ENV{${_var}}")
  endif()
endforeach()
if(NOT LINERATE_ARM64_SYSROOT)
  set(LINERATE_ARM64_SYSROOT /var/cache/linerate/arm64-sysroot)
endif()
if(NOT LINERATE_ARM64_CROSS_PREFIX)
  set(LINERATE_ARM64_CROSS_PREFIX aarch64-linux-gnu-)
endif()
if(NOT LINERATE_ARM64_EMULATOR)
  set(LINERATE_ARM64_EMULATOR qemu-aarch64-static)
endif()
set(LINERATE_ARM64_SYSROOT "${LINERATE_ARM64_SYSROOT}" CACHE PATH "arm64 sysroot (scripts/cross-arm64 makes one)")
set(LINERATE_ARM64_CROSS_PREFIX "${LINERATE_ARM64_CROSS_PREFIX}" CACHE STRING "cross compiler prefix")
set(LINERATE_ARM64_EMULATOR "${LINERATE_ARM64_EMULATOR}" CACHE STRING "emulator for aarch64 binaries")
foreach(_var LINERATE_ARM64_SYSROOT LINERATE_ARM64_CROSS_PREFIX LINERATE_ARM64_EMULATOR)
  set(ENV{${_var}} "${${_var}}")
  list(APPEND CMAKE_TRY_COMPILE_PLATFORM_VARIABLES ${_var})
endforeach()
list(REMOVE_DUPLICATES CMAKE_TRY_COMPILE_PLATFORM_VARIABLES)

if(NOT EXISTS "${LINERATE_ARM64_SYSROOT}/usr/include/aarch64-linux-gnu")
  message(FATAL_ERROR "arm64 sysroot not found at '${LINERATE_ARM64_SYSROOT}': run scripts/cross-arm64 "
                      "(as root) or set LINERATE_ARM64_SYSROOT")
endif()

set(CMAKE_C_COMPILER ${LINERATE_ARM64_CROSS_PREFIX}gcc)
set(CMAKE_CXX_COMPILER ${LINERATE_ARM64_CROSS_PREFIX}g++)
set(CMAKE_SYSROOT "${LINERATE_ARM64_SYSROOT}")

# Headers, libraries and CMake package files come from the sysroot only; programs run on the host.
set(CMAKE_FIND_ROOT_PATH "${LINERATE_ARM64_SYSROOT}")
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)

# pkg-config (the host's) reads only the sysroot's .pc files and prefixes their -I/-L with it.
set(ENV{PKG_CONFIG_SYSROOT_DIR} "${LINERATE_ARM64_SYSROOT}")
set(ENV{PKG_CONFIG_LIBDIR}
    "${LINERATE_ARM64_SYSROOT}/usr/lib/aarch64-linux-gnu/pkgconfig:${LINERATE_ARM64_SYSROOT}/usr/lib/pkgconfig:${LINERATE_ARM64_SYSROOT}/usr/share/pkgconfig")
set(ENV{PKG_CONFIG_PATH} "")

# Run target binaries (gtest_discover_tests, ctest) under user-mode qemu with the sysroot's
# dynamic loader and libraries.
find_program(LINERATE_ARM64_EMULATOR_PATH NAMES ${LINERATE_ARM64_EMULATOR} qemu-aarch64-static qemu-aarch64)
if(LINERATE_ARM64_EMULATOR_PATH)
  set(CMAKE_CROSSCOMPILING_EMULATOR "${LINERATE_ARM64_EMULATOR_PATH};-L;${LINERATE_ARM64_SYSROOT}")
endif()
