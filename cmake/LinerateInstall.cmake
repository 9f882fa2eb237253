# What `cmake --install` puts where (GNUInstallDirs), the CMake package users find with
# find_package(linerate), and the Debian package (cpack -G DEB).

# Programs.
install(TARGETS l2reflect nfv kvagg clocksync linerate-tt gen kvagg_load
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})

# The runtime as a library: static archives, public headers, the exported targets.
install(TARGETS linerate_core linerate EXPORT linerateTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/lib/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/linerate
        FILES_MATCHING PATTERN "*.hpp")
install(FILES ${PROJECT_SOURCE_DIR}/bpf/steer_abi.h ${PROJECT_SOURCE_DIR}/bpf/reflect_abi.h
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/linerate)
# The C/C++ headers of the services (truetime.h, kvagg_client.hpp, kvagg_wire.h):
# #include <linerate/...>.
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/linerate DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(EXPORT linerateTargets NAMESPACE linerate::
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/linerate)
include(CMakePackageConfigHelpers)
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/linerateConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/linerateConfig.cmake
                              INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/linerate)
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

# Debian package: the libraries the programs link come from dpkg-shlibdeps; the PMDs are plugins
# DPDK loads at run time, so the ones the apps are used with are listed by hand.
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
    "librte-net-af-xdp23, librte-net-af-packet23, librte-net-pcap23, librte-net-ring23, librte-net-null23, librte-net-memif23, librte-net-tap23, librte-net-virtio23, librte-net-vhost23")
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "dpdk")
include(CPack)
