# SPDX-License-Identifier: GPL-2.0-or-later
# The unit tests: one GoogleTest binary per area (an executable target named
# *_tests), declared in the area's own CMakeLists.txt.
#
# TOPOLAB_UNIT_TESTS=OFF leaves them out of the default build and out of
# ctest: tools/test.sh builds them once, under ASan+UBSan, in the sanitized
# build (tools/sanitize_units.sh), rather than a second time in build/.
option(TOPOLAB_UNIT_TESTS "Build the unit tests by default and list them in ctest" ON)

# An area's test binary: in ctest (one test per TEST) when unit tests are
# on; otherwise built only by the `unit_tests` target.
# The fuzz build instruments everything for libFuzzer's coverage; the test
# binaries never run under it, and the instrumentation is a quarter of their
# compile time. They stay under ASan+UBSan.
set(TOPOLAB_UNIT_TEST_OPTIONS)
if(TOPOLAB_FUZZ)
  set(TOPOLAB_UNIT_TEST_OPTIONS -fno-sanitize=fuzzer-no-link)
endif()
function(topolab_unit_test_options target)
  if(TOPOLAB_UNIT_TEST_OPTIONS)
    target_compile_options(${target} PRIVATE ${TOPOLAB_UNIT_TEST_OPTIONS})
  endif()
endfunction()

function(topolab_unit_tests target)
  topolab_unit_test_options(${target})
  if(TOPOLAB_UNIT_TESTS)
    gtest_discover_tests(${target} DISCOVERY_TIMEOUT 60)
  else()
    set_target_properties(${target} PROPERTIES EXCLUDE_FROM_ALL ON)
  endif()
endfunction()

# Every test binary, found rather than listed, so that a new area's tests
# cannot be left out of the sanitized run. The target `unit_tests` builds
# them all; unit_tests.txt in the build directory names each with its path,
# for tools/sanitize_units.sh.
function(topolab_find_unit_tests dir out)
  get_property(targets DIRECTORY ${dir} PROPERTY BUILDSYSTEM_TARGETS)
  get_property(subdirs DIRECTORY ${dir} PROPERTY SUBDIRECTORIES)
  set(found)
  foreach(target IN LISTS targets)
    get_target_property(type ${target} TYPE)
    if(target MATCHES "_tests$" AND type STREQUAL "EXECUTABLE")
      list(APPEND found ${target})
    endif()
  endforeach()
  foreach(subdir IN LISTS subdirs)
    topolab_find_unit_tests(${subdir} below)
    list(APPEND found ${below})
  endforeach()
  set(${out} ${found} PARENT_SCOPE)
endfunction()

function(topolab_collect_unit_tests)
  topolab_find_unit_tests(${PROJECT_SOURCE_DIR} tests)
  add_custom_target(unit_tests DEPENDS ${tests})
  set(lines)
  foreach(target IN LISTS tests)
    list(APPEND lines "${target} $<TARGET_FILE:${target}>")
  endforeach()
  string(REPLACE ";" "\n" lines "${lines}")
  file(GENERATE OUTPUT ${CMAKE_BINARY_DIR}/unit_tests.txt CONTENT "${lines}\n")
endfunction()
