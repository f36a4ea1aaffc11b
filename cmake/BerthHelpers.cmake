# One helper per kind of target.
#   berth_library(NAME berth_common SRCS a.cc b.cc DEPS ...)
#   berth_test(NAME common_test SRCS status_test.cc DEPS berth_common)

function(berth_library)
  cmake_parse_arguments(ARG "" "NAME" "SRCS;DEPS" ${ARGN})
  add_library(${ARG_NAME} STATIC ${ARG_SRCS})
  target_include_directories(${ARG_NAME} PUBLIC ${PROJECT_SOURCE_DIR}/src)
  target_link_libraries(${ARG_NAME} PUBLIC ${ARG_DEPS})
endfunction()

function(berth_test)
  cmake_parse_arguments(ARG "" "NAME" "SRCS;DEPS" ${ARGN})
  if(NOT BERTH_BUILD_TESTS)
    return()
  endif()
  add_executable(${ARG_NAME} ${ARG_SRCS})
  target_link_libraries(${ARG_NAME} PRIVATE ${ARG_DEPS} GTest::gtest GTest::gtest_main)
  target_compile_definitions(${ARG_NAME} PRIVATE
      BERTH_SOURCE_DIR="${PROJECT_SOURCE_DIR}"
      BERTH_DATA_DIR="${PROJECT_SOURCE_DIR}/../shared/data")
  gtest_discover_tests(${ARG_NAME} DISCOVERY_TIMEOUT 60
      PROPERTIES ENVIRONMENT "BERTH_SOURCE_DIR=${PROJECT_SOURCE_DIR}")
endfunction()
