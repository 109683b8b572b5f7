# Installs the build tree into a temporary prefix, then configures, builds
# and runs examples/find-package against it with find_package(caftx); the
# prefix and the example's build are removed afterwards, pass or fail.
# cmake -DBUILD_DIR=... -DSOURCE_DIR=... -DWORK_DIR=... -P check_find_package.cmake
foreach(v BUILD_DIR SOURCE_DIR WORK_DIR)
  if(NOT DEFINED ${v})
    message(FATAL_ERROR "${v} is not set")
  endif()
endforeach()

function(step what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    file(REMOVE_RECURSE "${WORK_DIR}")
    message(FATAL_ERROR "${what} failed (${rc}):\n${out}\n${err}")
  endif()
  set(step_output "${out}" PARENT_SCOPE)
endfunction()

file(REMOVE_RECURSE "${WORK_DIR}")
set(prefix "${WORK_DIR}/prefix")
step("cmake --install" ${CMAKE_COMMAND} --install "${BUILD_DIR}" --prefix "${prefix}")
foreach(f include/actors/client/producer.hpp include/runtime/status.hpp
          lib/cmake/caftx/caftxConfig.cmake lib/cmake/caftx/caftxConfigVersion.cmake)
  if(NOT EXISTS "${prefix}/${f}")
    file(REMOVE_RECURSE "${WORK_DIR}")
    message(FATAL_ERROR "the install lacks ${f}")
  endif()
endforeach()
set(launcher "")
find_program(ccache ccache)
if(ccache)
  set(launcher "-DCMAKE_CXX_COMPILER_LAUNCHER=${ccache}")
endif()
# Only the prefix: the example must not see caftx's source tree.
step("configuring the example" ${CMAKE_COMMAND} -S "${SOURCE_DIR}/examples/find-package"
  -B "${WORK_DIR}/build" -DCMAKE_BUILD_TYPE=Release "-DCMAKE_PREFIX_PATH=${prefix}" ${launcher})
step("building the example" ${CMAKE_COMMAND} --build "${WORK_DIR}/build" -j2)
# Its data directory goes under WORK_DIR, removed whatever the example does.
file(MAKE_DIRECTORY "${WORK_DIR}/tmp")
step("running the example" ${CMAKE_COMMAND} -E env "TMPDIR=${WORK_DIR}/tmp"
  "${WORK_DIR}/build/find-package-example")
message(STATUS "${step_output}")
if(NOT step_output MATCHES "committed and read: customer-7 debit 10.00")
  file(REMOVE_RECURSE "${WORK_DIR}")
  message(FATAL_ERROR "unexpected output: ${step_output}")
endif()
file(REMOVE_RECURSE "${WORK_DIR}")
