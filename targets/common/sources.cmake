# The sources of fairbench_target_common, for fairbench's build
# (targets/common/CMakeLists.txt) and the study's framework servers
# (framework.cmake) alike.
set(fairbench_target_common_sources
  ${CMAKE_CURRENT_LIST_DIR}/request_counter.cc
  ${CMAKE_CURRENT_LIST_DIR}/request_log.cc
  ${CMAKE_CURRENT_LIST_DIR}/target_flags.cc
  ${CMAKE_CURRENT_LIST_DIR}/target_main.cc)
