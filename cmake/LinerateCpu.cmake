# Target CPU flags on aarch64 (BlueField-3 Arm cores, natively or cross-compiled).
#
# libdpdk.pc on arm64 puts -march=armv8-a+crc in its Cflags, so every target linking
# PkgConfig::DPDK gets it. A user's -mcpu (say cortex-a78ae, the BlueField-3 core) would then
# meet that -march on the same command line: GCC warns "switch -mcpu=... conflicts with
# -march=..." and generates code for the -march architecture, the plain ARMv8.0 baseline.
#
#   -DLINERATE_ARM_CPU=cortex-a78ae   drop DPDK's -march, compile everything with -mcpu=cortex-a78ae
#   -DLINERATE_ARM_CPU=native         same with -mcpu=native (building on the DPU itself)
#   (unset, the default)              keep DPDK's -march=armv8-a+crc baseline: runs on any ARMv8 CPU
#
# The CPU must have the CRC32 extension DPDK's baseline asks for (every ARMv8.1+ core does).
# Included by the top-level CMakeLists.txt after pkg_check_modules(DPDK ...); does nothing on x86.

set(LINERATE_ARM_CPU "" CACHE STRING
    "aarch64: -mcpu value (e.g. cortex-a78ae for BlueField-3, native) that replaces libdpdk.pc's -march")

if(CMAKE_SYSTEM_PROCESSOR MATCHES "^(aarch64|arm64|ARM64)$" AND TARGET PkgConfig::DPDK)
  get_target_property(_lr_dpdk_opts PkgConfig::DPDK INTERFACE_COMPILE_OPTIONS)
  if(NOT _lr_dpdk_opts)
    set(_lr_dpdk_opts "")
  endif()
  set(_lr_dpdk_arch ${_lr_dpdk_opts})
  list(FILTER _lr_dpdk_arch INCLUDE REGEX "^-m(arch|cpu|tune)=")
  if(LINERATE_ARM_CPU)
    list(FILTER _lr_dpdk_opts EXCLUDE REGEX "^-m(arch|cpu|tune)=")
    set_property(TARGET PkgConfig::DPDK PROPERTY INTERFACE_COMPILE_OPTIONS "${_lr_dpdk_opts}")
    add_compile_options(-mcpu=${LINERATE_ARM_CPU})
    message(STATUS "linerate: compiling with -mcpu=${LINERATE_ARM_CPU} "
                   "(dropped '${_lr_dpdk_arch}' from libdpdk's flags)")
  else()
    message(STATUS "linerate: aarch64 baseline from libdpdk: '${_lr_dpdk_arch}' "
                   "(-DLINERATE_ARM_CPU=cortex-a78ae tunes for BlueField-3)")
    if(_lr_dpdk_arch AND "${CMAKE_C_FLAGS} ${CMAKE_CXX_FLAGS}" MATCHES "-m(cpu|arch)=")
      message(WARNING "CMAKE_C(XX)_FLAGS set -mcpu/-march but libdpdk.pc also adds '${_lr_dpdk_arch}', "
                      "which wins for the architecture (GCC only warns). Use -DLINERATE_ARM_CPU=<cpu> "
                      "instead, which removes libdpdk's -march.")
    endif()
  endif()
  unset(_lr_dpdk_opts)
  unset(_lr_dpdk_arch)
endif()
