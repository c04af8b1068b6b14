# `cmake --install <build> [--prefix P]` installs what a C++ user links:
#   lib/libmlakit_{core,kernels,runtime}.a            the library (host code + device code)
#   include/mlakit/*.h                                the public API, version.h included
#   lib/cmake/mlakit/mlakitConfig*.cmake              find_package(mlakit CONFIG) -> mlakit::mlakit
#   bin/mlakit                                        the CLI
#   share/doc/mlakit/{LICENSE,THIRD_PARTY_NOTICES}    the licences of what the binaries contain
# Components: "dev" (library, headers, package config) and "cli"; `pip install .` installs only
# the "python" component (python/CMakeLists.txt), so none of this reaches the wheel.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(MLAKIT_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/mlakit)

set_target_properties(mlakit_core PROPERTIES EXPORT_NAME core)
set_target_properties(mlakit_kernels PROPERTIES EXPORT_NAME kernels)
set_target_properties(mlakit_runtime PROPERTIES EXPORT_NAME runtime)
install(TARGETS mlakit_core mlakit_kernels mlakit_runtime mlakit
        EXPORT mlakitTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT dev
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/mlakit
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} COMPONENT dev)
install(FILES ${CMAKE_BINARY_DIR}/include/mlakit/version.h
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/mlakit COMPONENT dev)
install(EXPORT mlakitTargets
        NAMESPACE mlakit::
        DESTINATION ${MLAKIT_INSTALL_CMAKEDIR} COMPONENT dev)

configure_package_config_file(
  ${PROJECT_SOURCE_DIR}/cmake/mlakitConfig.cmake.in
  ${CMAKE_BINARY_DIR}/cmake/mlakitConfig.cmake
  INSTALL_DESTINATION ${MLAKIT_INSTALL_CMAKEDIR})
# 0.x: a minor version may break the API, so only the same major.minor satisfies a request.
write_basic_package_version_file(
  ${CMAKE_BINARY_DIR}/cmake/mlakitConfigVersion.cmake
  VERSION ${PROJECT_VERSION}
  COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_BINARY_DIR}/cmake/mlakitConfig.cmake
              ${CMAKE_BINARY_DIR}/cmake/mlakitConfigVersion.cmake
        DESTINATION ${MLAKIT_INSTALL_CMAKEDIR} COMPONENT dev)

install(TARGETS mlakit_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT cli)

# The licences of what the installed binaries contain (CUTLASS, nlohmann/json, CLI11; nvml.h's
# notice), beside mlakit's own.
install(FILES ${PROJECT_SOURCE_DIR}/LICENSE ${PROJECT_SOURCE_DIR}/THIRD_PARTY_NOTICES
        DESTINATION ${CMAKE_INSTALL_DOCDIR} COMPONENT cli)
install(FILES ${PROJECT_SOURCE_DIR}/LICENSE ${PROJECT_SOURCE_DIR}/THIRD_PARTY_NOTICES
        DESTINATION ${CMAKE_INSTALL_DOCDIR} COMPONENT dev)
