# fairbench_defaults(target): warnings and sanitizers shared by every target.
function(fairbench_defaults target)
  target_compile_options(${target} PRIVATE
    -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor -Wold-style-cast
    -Wcast-align -Woverloaded-virtual -Wconversion -Wno-sign-conversion
    -Wimplicit-fallthrough -Wnull-dereference -Wformat=2)
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    # GCC 12 reports false positives inside std::string (GCC bug 105329).
    target_compile_options(${target} PRIVATE -Wno-restrict)
  endif()
  if(CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    # Members GUARDED_BY a Mutex (common/mutex.h) read or written without it,
    # a REQUIRES function called without it: errors in every build.
    target_compile_options(${target} PRIVATE -Wthread-safety -Werror=thread-safety)
  endif()
  if(FAIRBENCH_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
  # With TSan's instrumentation GCC's flow-based warnings fire inside
  # libstdc++, CLI11 and nlohmann-json after inlining in these targets (the
  # other builds keep them), and -Wtsan on Boost.Asio's fenced blocks in the
  # Beast target (Asio hands handlers over through its scheduler's mutex
  # too, which TSan sees).
  set(tsan_noisy fairbench-target-beast fairbench-target-nginx
    fairbench_kube_testing fairbench_test_kubelet chart_test fairbench_controller_cli prometheus_e2e_test operator_e2e_test)
  if(FAIRBENCH_SANITIZE STREQUAL "thread" AND target IN_LIST tsan_noisy)
    target_compile_options(${target} PRIVATE -Wno-null-dereference -Wno-maybe-uninitialized -Wno-tsan)
  endif()
  # With ASan's, GCC 12 reports -Wmaybe-uninitialized inside libstdc++'s
  # std::regex (a std::function moved into its automaton) wherever a regex
  # is built: every file using std::regex would fail to build. The release
  # build keeps the warning.
  if(FAIRBENCH_SANITIZE AND NOT FAIRBENCH_SANITIZE STREQUAL "thread" AND CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    target_compile_options(${target} PRIVATE -Wno-maybe-uninitialized)
  endif()
endfunction()

if(FAIRBENCH_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "FAIRBENCH_FUZZ needs clang (libFuzzer): configure with the fuzz preset "
                        "or -DCMAKE_CXX_COMPILER=clang++-14 -DCMAKE_C_COMPILER=clang-14")
  endif()
  # The libraries get libFuzzer's coverage without its main(); each fuzzer
  # links -fsanitize=fuzzer (fuzz/CMakeLists.txt). Any UB report aborts, so
  # libFuzzer records it as a crash.
  add_compile_options(-fsanitize=fuzzer-no-link,address,undefined -fno-omit-frame-pointer
                      -fno-sanitize-recover=undefined)
  add_link_options(-fsanitize=address,undefined)
endif()

# Every test binary also links testing/sanitizers/child_reports.cc: the
# reports of the processes a test starts fail that test (see there).
if(FAIRBENCH_SANITIZE STREQUAL "thread")
  add_compile_options(-fsanitize=thread -fno-omit-frame-pointer)
  add_link_options(-fsanitize=thread)
elseif(FAIRBENCH_SANITIZE STREQUAL "address" OR FAIRBENCH_SANITIZE)
  add_compile_options(-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined)
  add_link_options(-fsanitize=address,undefined)
  # GCC links the two runtimes as separate shared libraries by default, and
  # then UBSan's copy of the common flags ignores log_path: a child's UB
  # report went to its stderr, never to the test that started it. Linked
  # statically, each honours its own log_path (every binary here is an
  # executable over static libraries, as static runtimes require).
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    add_link_options(-static-libasan -static-libubsan)
  endif()
endif()

# fairbench_test(name SOURCES ... LIBS ... [LABELS ...] [NO_DISCOVERY]): one GoogleTest binary, registered with
# CTest. NO_DISCOVERY: built and linked the same, but its tests are the caller's to register with CTest (the
# timeout, stretched for sanitizers, is left in ${name}_TIMEOUT).
function(fairbench_test name)
  cmake_parse_arguments(T "NO_DISCOVERY" "TIMEOUT" "SOURCES;LIBS;LABELS" ${ARGN})
  add_executable(${name} ${T_SOURCES})
  fairbench_defaults(${name})
  target_link_libraries(${name} PRIVATE ${T_LIBS} GTest::gtest GTest::gtest_main Threads::Threads)
  if(FAIRBENCH_SANITIZE)
    target_link_libraries(${name} PRIVATE fairbench_sanitizer_child_reports)
  endif()
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 120)
  endif()
  # Sanitizers slow everything down (TSan most): CTest's limit stretches like
  # the tests' own waits (FAIRBENCH_TIME_SCALE in the presets).
  if(FAIRBENCH_SANITIZE STREQUAL "thread")
    math(EXPR T_TIMEOUT "${T_TIMEOUT} * 5")
  elseif(FAIRBENCH_SANITIZE)
    math(EXPR T_TIMEOUT "${T_TIMEOUT} * 3")
  endif()
  if(T_NO_DISCOVERY)
    set(${name}_TIMEOUT ${T_TIMEOUT} PARENT_SCOPE)
    return()
  endif()
  gtest_discover_tests(${name}
    PROPERTIES TIMEOUT ${T_TIMEOUT} LABELS "${T_LABELS}"
    DISCOVERY_TIMEOUT 30)
  # gtest_discover_tests flattens a list of labels into separate arguments
  # (only the first survives); a script that runs after its own sets them
  # all on the tests it discovered (the list ${name}_TESTS).
  list(LENGTH T_LABELS label_count)
  if(label_count GREATER 1)
    set(script "${CMAKE_CURRENT_BINARY_DIR}/${name}_labels.cmake")
    file(WRITE "${script}"
      "foreach(test IN LISTS ${name}_TESTS)\n  set_tests_properties(\"\${test}\" PROPERTIES LABELS \"${T_LABELS}\")\nendforeach()\n")
    set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES "${script}")
  endif()
endfunction()

# Kubernetes tests (tests/CMakeLists.txt defines the fixtures).
# Every test gtest finds in `target` needs the control plane built (its only
# fixture: tests/containers names its own list).
function(fairbench_requires_kubernetes target)
  set(script "${CMAKE_CURRENT_BINARY_DIR}/${target}_kubernetes.cmake")
  file(WRITE "${script}"
    "foreach(test IN LISTS ${target}_TESTS)\n"
    "  set_tests_properties(\"\${test}\" PROPERTIES FIXTURES_REQUIRED kubernetes_binaries)\n"
    "endforeach()\n")
  set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES "${script}")
endfunction()
# Every test gtest finds in `target` holds CTest's lock `lock`: for tests
# that share something of the machine's outside their own folders (a real
# kubelet's node cgroups are named after the node, machine-wide).
function(fairbench_resource_lock target lock)
  set(script "${CMAKE_CURRENT_BINARY_DIR}/${target}_lock.cmake")
  file(WRITE "${script}"
    "foreach(test IN LISTS ${target}_TESTS)\n"
    "  set_tests_properties(\"\${test}\" PROPERTIES RESOURCE_LOCK ${lock})\n"
    "endforeach()\n")
  set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES "${script}")
endfunction()
# Every test gtest finds in `target` runs in the shared cluster. (CTest's
# scripts know set_tests_properties, not set_property(TEST).)
function(fairbench_uses_kubernetes_cluster target)
  set(script "${CMAKE_CURRENT_BINARY_DIR}/${target}_kubernetes_cluster.cmake")
  file(WRITE "${script}"
    "foreach(test IN LISTS ${target}_TESTS)\n"
    "  set_tests_properties(\"\${test}\" PROPERTIES\n"
    "    FIXTURES_REQUIRED \"kubernetes_binaries;kubernetes_cluster\"\n"
    "    ENVIRONMENT \"FAIRBENCH_KUBE_CLUSTER=${CMAKE_BINARY_DIR}/kube-cluster\")\n"
    "endforeach()\n")
  set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES "${script}")
endfunction()
