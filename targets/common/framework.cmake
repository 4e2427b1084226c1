# What every server of the study's frameworks (targets/<framework>/) builds
# the same way. Each is a CMake project of its own, outside fairbench's
# build, configured against a framework the user has installed (or whose
# headers the user names): it finds the framework and builds nothing of
# the framework's own. Its CMakeLists.txt includes this file after
# project(), finds its framework (fairbench_require_package, or a header
# folder) and then calls
#
#   fairbench_framework_server(<framework> BUILD "<how the framework is built>" [VERSION <version>])
#
# which makes fairbench-target-<framework> from <framework>_main.cc (C++20, -Wall
# -Wextra, installed to bin/), linked with fairbench_target_common: the
# command line, --describe, the request log and the signal handling every
# fairbench target shares (targets/common/target_main.h), compiled from this
# repository's own files. --describe states the facts the build knows, as
# macros: FAIRBENCH_CXX_FLAGS (the flags the server is compiled with),
# FAIRBENCH_FRAMEWORK_REVISION (-D of the same name: the framework's tag and
# commit, as the user states them), FAIRBENCH_FRAMEWORK_BUILD (BUILD, or -D
# of the same name) and FAIRBENCH_FRAMEWORK_VERSION (VERSION: for a
# framework whose source has no version macro). The framework's own include
# folders and libraries are the caller's to add to the target.
if(NOT CMAKE_BUILD_TYPE)
  set(CMAKE_BUILD_TYPE Release CACHE STRING "Build type" FORCE)
endif()
set(CMAKE_CXX_STANDARD 20)
set(CMAKE_CXX_STANDARD_REQUIRED ON)
set(CMAKE_CXX_EXTENSIONS OFF)

set(FAIRBENCH_ROOT ${CMAKE_CURRENT_LIST_DIR}/../..)
find_package(Threads REQUIRED)
find_package(CLI11 CONFIG REQUIRED)
include(${CMAKE_CURRENT_LIST_DIR}/sources.cmake)
add_library(fairbench_target_common STATIC
  ${FAIRBENCH_ROOT}/common/signals.cc
  ${FAIRBENCH_ROOT}/common/status.cc
  ${fairbench_target_common_sources})
target_include_directories(fairbench_target_common PUBLIC ${FAIRBENCH_ROOT})
target_link_libraries(fairbench_target_common PUBLIC CLI11::CLI11 Threads::Threads)

set(FAIRBENCH_FRAMEWORK_REVISION "not given" CACHE STRING "the framework's tag and commit, for --describe")

# fairbench_require_package(<package> <name> [<version>]): the installed
# framework's CMake package (<package>Config.cmake; exactly <version> when
# given), or one error saying what was not found and what to pass.
macro(fairbench_require_package package name)
  set(fairbench_wanted "${name}")
  if(${ARGC} GREATER 2)
    find_package(${package} ${ARGV2} EXACT CONFIG QUIET)
    set(fairbench_wanted "${name} ${ARGV2}")
  else()
    find_package(${package} CONFIG QUIET)
  endif()
  if(NOT ${package}_FOUND)
    set(fairbench_seen "")
    if(${package}_CONSIDERED_CONFIGS)
      set(fairbench_seen "; found only ${${package}_CONSIDERED_CONFIGS} (version ${${package}_CONSIDERED_VERSIONS})")
    endif()
    message(FATAL_ERROR "${fairbench_wanted} is not installed where CMake looks (${package}Config.cmake"
                        "${fairbench_seen}): install it, and pass -DCMAKE_PREFIX_PATH=<its install prefix> "
                        "unless that is a default one (targets/README.md)")
  endif()
endmacro()

function(fairbench_framework_server framework)
  cmake_parse_arguments(S "" "BUILD;VERSION" "" ${ARGN})
  set(FAIRBENCH_FRAMEWORK_BUILD "${S_BUILD}" CACHE STRING "how the framework was built, for --describe")
  set(server fairbench-target-${framework})
  string(REPLACE "-" "_" main_file "${framework}_main.cc")
  add_executable(${server} ${main_file})
  target_link_libraries(${server} PRIVATE fairbench_target_common)
  target_compile_options(${server} PRIVATE -Wall -Wextra)
  string(TOUPPER "${CMAKE_BUILD_TYPE}" build_type)
  string(STRIP "${CMAKE_CXX_FLAGS} ${CMAKE_CXX_FLAGS_${build_type}} -std=c++20 ${CMAKE_EXE_LINKER_FLAGS}" cxx_flags)
  target_compile_definitions(${server} PRIVATE
    "FAIRBENCH_CXX_FLAGS=\"${cxx_flags}\""
    "FAIRBENCH_FRAMEWORK_REVISION=\"${FAIRBENCH_FRAMEWORK_REVISION}\""
    "FAIRBENCH_FRAMEWORK_BUILD=\"${FAIRBENCH_FRAMEWORK_BUILD}\"")
  if(S_VERSION)
    target_compile_definitions(${server} PRIVATE "FAIRBENCH_FRAMEWORK_VERSION=\"${S_VERSION}\"")
  endif()
  install(TARGETS ${server} RUNTIME DESTINATION bin)
endfunction()
