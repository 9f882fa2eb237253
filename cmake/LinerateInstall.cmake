# What `cmake --install` puts where (GNUInstallDirs), the CMake package users find with
# find_package(linerate), and the Debian package (cpack -G DEB).

# Programs.
install(TARGETS l2reflect nfv kvagg clocksync linerate-regions linerate-tt gen kvagg_load
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})

# The runtime as a library: static archives, public headers, the exported targets.
install(TARGETS linerate_core linerate EXPORT linerateTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
# The headers find_package(linerate) users get: what an app on the runtime writes against (the
# runtime and its loops, the packet helpers a kernel uses, names and counters, options, pcap
# files) and what those include. The rest of lib/ is the runtime's inside and is not installed:
# how the EAL is started (eal/eal.hpp), AF_XDP vdevs (eal/af_xdp_ports.hpp), flow isolation, the
# feature objects (pcap mode, AF_XDP and steering, the exception path's side on the main lcore),
# XDP steering through libbpf, the summary texts, CPU affinity and pacing. A public header that
# includes a private one fails the configure step here.
set(LINERATE_PUBLIC_HEADERS
    cli/command_line.hpp
    eal/port.hpp
    mem/mempool.hpp mem/region.hpp mem/region_spec.hpp
    pcapio/pcap_file.hpp
    pkt/address.hpp pkt/build.hpp pkt/bytes.hpp pkt/checksum.hpp pkt/frame_walk.h pkt/headers.hpp
    pkt/ipv4_checksum.h pkt/mac_swap.h pkt/udp_payload.hpp
    ring/ring.hpp
    runtime/exception_path.hpp runtime/feature.hpp runtime/forward_loop.hpp
    runtime/forward_mode.hpp runtime/mbuf_frame.hpp runtime/runtime.hpp runtime/rx_step.hpp
    runtime/tx.hpp
    stats/counters.hpp stats/drop_list.h stats/figures.hpp stats/histogram.hpp stats/metrics.hpp
    stats/names.hpp
    stats/port_drops.hpp
    stats/telemetry.hpp
    worker/quiescence.hpp worker/stop.hpp worker/worker_map.hpp
    xdp/bpf_map.h xdp/bpf_object.hpp
    xdp/datapath/datapath.bpf.h xdp/datapath/datapath_abi.h xdp/datapath/datapath_program.hpp
    xdp/reflect/reflect_abi.h
    xdp/steer/rx_stamp.hpp xdp/steer/steer_abi.h xdp/steer/steer_match.h
    xdp/steer/steer_program.hpp)
foreach(header IN LISTS LINERATE_PUBLIC_HEADERS)
  file(STRINGS ${PROJECT_SOURCE_DIR}/lib/${header} includes REGEX "^#include \"")
  foreach(line IN LISTS includes)
    string(REGEX REPLACE "^#include \"([^\"]+)\".*" "\\1" included "${line}")
    if(EXISTS ${PROJECT_SOURCE_DIR}/lib/${included} AND NOT included IN_LIST LINERATE_PUBLIC_HEADERS)
      message(FATAL_ERROR "public header lib/${header} includes lib/${included}, which is not "
                          "public (LINERATE_PUBLIC_HEADERS)")
    endif()
  endforeach()
  get_filename_component(header_dir ${header} DIRECTORY)
  install(FILES ${PROJECT_SOURCE_DIR}/lib/${header}
          DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/linerate/${header_dir})
endforeach()
# The C/C++ headers of the services (truetime.h, kvagg_client.hpp, kvagg_wire.h):
# #include <linerate/...>.
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/linerate DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
# An app's XDP programs out of this tree (examples/ttl-forward): linerate_bpf_programs, and the
# steering program's source its STEER_HOOK compiles (the shared headers are public above).
install(FILES ${PROJECT_SOURCE_DIR}/cmake/LinerateBpf.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/linerate)
install(FILES ${PROJECT_SOURCE_DIR}/lib/xdp/steer/steer.bpf.c
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/linerate/xdp/steer)
install(EXPORT linerateTargets NAMESPACE linerate::
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/linerate)
include(CMakePackageConfigHelpers)
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/linerateConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/linerateConfig.cmake
                              INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/linerate
                              PATH_VARS CMAKE_INSTALL_INCLUDEDIR)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/linerateConfigVersion.cmake
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/linerateConfig.cmake
              ${PROJECT_BINARY_DIR}/linerateConfigVersion.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/linerate)

# Data: the Pktgen-DPDK scripts and their pcaps, the Python kvagg client, the documentation.
install(DIRECTORY ${PROJECT_SOURCE_DIR}/bench/pktgen/
        DESTINATION ${CMAKE_INSTALL_DATADIR}/linerate/pktgen USE_SOURCE_PERMISSIONS)
install(FILES ${PROJECT_SOURCE_DIR}/python/linerate_kvagg.py
        DESTINATION ${CMAKE_INSTALL_DATADIR}/linerate/python)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/docs/ DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(FILES ${PROJECT_SOURCE_DIR}/README.md ${PROJECT_SOURCE_DIR}/CHANGES.md
        DESTINATION ${CMAKE_INSTALL_DOCDIR})

# systemd units and their commented example configurations (dist/, docs/operations.md): made
# at install time, when the prefix the units name is known (`--prefix`, CPack's /usr).
install(CODE "set(LINERATE_SOURCE_DIR \"${PROJECT_SOURCE_DIR}\")
set(LINERATE_STAGE_DIR \"${PROJECT_BINARY_DIR}/systemd-units\")
set(LINERATE_BINDIR \"${CMAKE_INSTALL_BINDIR}\")
set(LINERATE_DOCDIR \"${CMAKE_INSTALL_DOCDIR}\")")
install(SCRIPT ${PROJECT_SOURCE_DIR}/cmake/LinerateSystemdUnits.cmake)

# Debian package: the libraries the programs link come from dpkg-shlibdeps; the PMDs are plugins
# DPDK loads at run time, so the ones the apps are used with are listed by hand, with the mempool
# driver every packet pool needs (librte-mempool-ring23: without it, on a system without the
# `dpdk` package, every app fails at its first pool with "Invalid argument"; tests/systemd/run).
set(CPACK_PACKAGE_NAME linerate)
set(CPACK_PACKAGE_VENDOR "linerate")
set(CPACK_PACKAGE_CONTACT "linerate developers <linerate@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "DPDK run-to-completion apps: l2reflect, nfv, kvagg, clocksync, and their runtime")
set(CPACK_GENERATOR DEB)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION net)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_DEPENDS
    "librte-mempool-ring23, librte-net-af-xdp23, librte-net-af-packet23, librte-net-pcap23, librte-net-ring23, librte-net-null23, librte-net-memif23, librte-net-tap23, librte-net-virtio23, librte-net-vhost23")
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "dpdk")
# The example configurations under /etc are conffiles (an edited one survives an upgrade); the
# maintainer scripts tell systemd about the units (none is enabled or started).
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA
    "${PROJECT_SOURCE_DIR}/dist/deb/conffiles;${PROJECT_SOURCE_DIR}/dist/deb/postinst;${PROJECT_SOURCE_DIR}/dist/deb/prerm;${PROJECT_SOURCE_DIR}/dist/deb/postrm")
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
include(CPack)
