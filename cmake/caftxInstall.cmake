# `cmake --install`: caftx's libraries, its public headers with their
# directory layout (#include "actors/client/producer.hpp" works from the
# include directory), the programs, and a CMake package exporting
# caftx::caftx with its dependencies, so an application does
#   find_package(caftx 0.1 REQUIRED)
#   target_link_libraries(app PRIVATE caftx::caftx)
# (README.md §Embedding).
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(caftx_install_cmakedir "${CMAKE_INSTALL_LIBDIR}/cmake/caftx")

install(TARGETS caftx_runtime caftx_config caftx_storage caftx_cores caftx_txn_load caftx
  EXPORT caftxTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(DIRECTORY actors runtime storage config
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
  FILES_MATCHING PATTERN "*.hpp")
install(EXPORT caftxTargets NAMESPACE caftx:: DESTINATION ${caftx_install_cmakedir})

configure_package_config_file(cmake/caftxConfig.cmake.in
  "${CMAKE_CURRENT_BINARY_DIR}/caftxConfig.cmake"
  INSTALL_DESTINATION ${caftx_install_cmakedir})
# 0.x: a minor version may break the API.
write_basic_package_version_file("${CMAKE_CURRENT_BINARY_DIR}/caftxConfigVersion.cmake"
  COMPATIBILITY SameMinorVersion)
install(FILES "${CMAKE_CURRENT_BINARY_DIR}/caftxConfig.cmake"
  "${CMAKE_CURRENT_BINARY_DIR}/caftxConfigVersion.cmake"
  cmake/FindCAF.cmake
  DESTINATION ${caftx_install_cmakedir})

# Programs: each one in this list is installed to bin/ if its target exists
# once the whole project is configured (a program added later needs only
# its name here).
set(caftx_programs caftx-node caftx-sim caftx-topics caftx-transactions
  caftx-console-producer caftx-console-consumer caftx-consumer-groups caftx-drill)
function(caftx_install_programs)
  foreach(program IN LISTS caftx_programs)
    if(TARGET ${program})
      install(TARGETS ${program} RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
    endif()
  endforeach()
endfunction()
cmake_language(DEFER DIRECTORY ${PROJECT_SOURCE_DIR} CALL caftx_install_programs)
