# Registers framework_servers_test's tests with CTest, each time ctest
# starts (a TEST_INCLUDE_FILES script; targets/CMakeLists.txt sets
# FAIRBENCH_SERVERS_TEST, _LABELS and _TIMEOUT before including it).
#
# The tests are there only when FAIRBENCH_FRAMEWORK_BIN_DIR names the
# folder of the framework servers a user built: the binary registers them
# from that variable, so this script asks it for its tests with ctest's
# own environment, as it is now. gtest_discover_tests cannot: it lists a
# binary's tests once, after the build (or caches the list), so the
# variable of a later ctest run would be ignored. Without the variable the
# binary is not run and no test is added.
if("$ENV{FAIRBENCH_FRAMEWORK_BIN_DIR}" STREQUAL "")
  return()
endif()
if(NOT EXISTS "${FAIRBENCH_SERVERS_TEST}")
  # A test of a name no executable has: ctest reports it "Not Run".
  add_test(framework_servers_test_NOT_BUILT framework_servers_test_NOT_BUILT)
  return()
endif()
execute_process(COMMAND "${FAIRBENCH_SERVERS_TEST}" --gtest_list_tests
  OUTPUT_VARIABLE listing ERROR_VARIABLE listing_error RESULT_VARIABLE listed TIMEOUT 30)
if(NOT listed EQUAL 0)
  message(WARNING "${FAIRBENCH_SERVERS_TEST} --gtest_list_tests failed (${listed}): ${listing_error}")
  add_test(framework_servers_test_NOT_LISTED framework_servers_test_NOT_LISTED)
  return()
endif()
# --gtest_list_tests: "Suite." on a line of its own, then "  Test" for each
# of its tests.
string(REPLACE "\n" ";" lines "${listing}")
set(suite "")
foreach(line IN LISTS lines)
  string(REGEX REPLACE " *#.*" "" line "${line}")
  if(line MATCHES "^([^ ]+)\\.$")
    set(suite "${CMAKE_MATCH_1}")
  elseif(line MATCHES "^  ([^ ]+)$" AND NOT suite STREQUAL "")
    set(test "${suite}.${CMAKE_MATCH_1}")
    add_test("${test}" "${FAIRBENCH_SERVERS_TEST}" "--gtest_filter=${test}")
    set_tests_properties("${test}" PROPERTIES
      LABELS "${FAIRBENCH_SERVERS_TEST_LABELS}" TIMEOUT "${FAIRBENCH_SERVERS_TEST_TIMEOUT}")
  endif()
endforeach()
