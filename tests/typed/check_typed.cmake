# cmake -DCXX=<compiler> -DROOT=<source dir> -P check_typed.cmake
# wrong_message.cpp must compile as it is and fail to compile in each case
# that sends an actor a message outside its typed interface.
set(src ${ROOT}/tests/typed/wrong_message.cpp)
set(flags -std=c++17 -fsyntax-only -I${ROOT})
execute_process(COMMAND ${CXX} ${flags} ${src} RESULT_VARIABLE rc ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "the well-typed requests do not compile:\n${err}")
endif()
foreach(case 1 2 3 4 5 6 7 8)
  execute_process(COMMAND ${CXX} ${flags} -DCAFTX_CASE=${case} ${src}
                  RESULT_VARIABLE rc ERROR_VARIABLE err)
  if(rc EQUAL 0)
    message(FATAL_ERROR "case ${case}: a request outside the interface compiled")
  endif()
  # CAF refuses it through its response_type of the handle's signatures.
  if(NOT err MATCHES "caf::response_type")
    message(FATAL_ERROR "case ${case}: failed for another reason:\n${err}")
  endif()
  message(STATUS "case ${case}: refused at compile time")
endforeach()
