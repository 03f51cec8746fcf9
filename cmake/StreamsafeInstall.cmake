include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

install(TARGETS streamsafe EXPORT streamsafeTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(TARGETS streamsafe_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(DIRECTORY include/streamsafe DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/include/streamsafe/config.hpp
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/streamsafe)
install(EXPORT streamsafeTargets NAMESPACE streamsafe::
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/streamsafe)
set(STREAMSAFE_CONFIG_HAVE_CUDA ${STREAMSAFE_HAVE_CUDA})
configure_package_config_file(cmake/streamsafeConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/streamsafeConfig.cmake
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/streamsafe)
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/streamsafeConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/streamsafeConfig.cmake
              ${CMAKE_CURRENT_BINARY_DIR}/streamsafeConfigVersion.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/streamsafe)
