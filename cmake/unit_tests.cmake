# SPDX-License-Identifier: GPL-2.0-or-later
# The unit tests: one GoogleTest binary per area (an executable target named
# *_tests), declared in the area's own CMakeLists.txt.
#
# Two kinds. Most test the layers that take untrusted input or model the
# hardware (base, model, arch, debug, emu, devices, firmware, and the QEMU
# command line's parser): CI builds and runs those only under ASan+UBSan, in
# the sanitized build (tools/sanitize_units.sh). The formatting and driver
# layers' (report/, lab/, cli/: topolab_unit_tests(... DRIVER)) are built in
# the Release build instead and run by its ctest: the sanitized build then
# compiles none of report/ and lab/ (docs/reliability.md, "The CI budget").
#
# TOPOLAB_UNIT_TESTS says which are in the default build and in ctest: ON
# (all), OFF (none: the sanitized build, which runs them itself) or DRIVER
# (the driver layers': tools/test.sh's build/).
set(TOPOLAB_UNIT_TESTS ON CACHE STRING "Which unit tests to build by default and list in ctest: ON, OFF or DRIVER")
set_property(CACHE TOPOLAB_UNIT_TESTS PROPERTY STRINGS ON OFF DRIVER)
string(TOUPPER "${TOPOLAB_UNIT_TESTS}" TOPOLAB_UNIT_TESTS_LISTED)
if(NOT TOPOLAB_UNIT_TESTS_LISTED STREQUAL "DRIVER")
  if(TOPOLAB_UNIT_TESTS)
    set(TOPOLAB_UNIT_TESTS_LISTED ALL)
  else()
    set(TOPOLAB_UNIT_TESTS_LISTED NONE)
  endif()
endif()

# An area's test binary: in the default build and in ctest (one test per
# TEST) when TOPOLAB_UNIT_TESTS lists its kind; otherwise built only by the
# `unit_tests` target (and `sanitized_unit_tests`, unless DRIVER).
# The fuzz build instruments everything for libFuzzer's coverage; the test
# binaries never run under it, and the instrumentation is a quarter of their
# compile time. They stay under ASan+UBSan.
# In Release the test binaries' own files are compiled at -O0 (what they
# test is at -O2, in its library): a test file compiles in about 0.6 of its
# time at -O2 (lab/experiments_test.cc 14 s of CPU against 22 s, gcc 12).
set(TOPOLAB_UNIT_TEST_OPTIONS)
if(TOPOLAB_FUZZ)
  set(TOPOLAB_UNIT_TEST_OPTIONS -fno-sanitize=fuzzer-no-link)
endif()
list(APPEND TOPOLAB_UNIT_TEST_OPTIONS $<$<CONFIG:Release>:-O0>)
function(topolab_unit_test_options target)
  if(TOPOLAB_UNIT_TEST_OPTIONS)
    target_compile_options(${target} PRIVATE ${TOPOLAB_UNIT_TEST_OPTIONS})
  endif()
endfunction()

function(topolab_unit_tests target)
  cmake_parse_arguments(PARSE_ARGV 1 arg "DRIVER" "" "")
  topolab_unit_test_options(${target})
  set_property(TARGET ${target} PROPERTY TOPOLAB_DRIVER_TESTS ${arg_DRIVER})
  if(TOPOLAB_UNIT_TESTS_LISTED STREQUAL "ALL" OR (arg_DRIVER AND TOPOLAB_UNIT_TESTS_LISTED STREQUAL "DRIVER"))
    gtest_discover_tests(${target} DISCOVERY_TIMEOUT 60)
  else()
    set_target_properties(${target} PROPERTIES EXCLUDE_FROM_ALL ON)
  endif()
endfunction()

# Every test binary, found rather than listed, so that a new area's tests
# cannot be left out of the sanitized run. The target `unit_tests` builds
# them all, `sanitized_unit_tests` all but the driver layers'; unit_tests.txt
# and sanitized_unit_tests.txt in the build directory name each with its
# path, for tools/sanitize_units.sh.
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
  set(sanitized)
  foreach(target IN LISTS tests)
    get_target_property(driver ${target} TOPOLAB_DRIVER_TESTS)
    if(NOT driver)
      list(APPEND sanitized ${target})
    endif()
  endforeach()
  add_custom_target(unit_tests DEPENDS ${tests})
  add_custom_target(sanitized_unit_tests DEPENDS ${sanitized})
  foreach(list IN ITEMS tests sanitized)
    set(lines)
    foreach(target IN LISTS ${list})
      list(APPEND lines "${target} $<TARGET_FILE:${target}>")
    endforeach()
    string(REPLACE ";" "\n" lines "${lines}")
    set(${list}_lines "${lines}\n")
  endforeach()
  file(GENERATE OUTPUT ${CMAKE_BINARY_DIR}/unit_tests.txt CONTENT "${tests_lines}")
  file(GENERATE OUTPUT ${CMAKE_BINARY_DIR}/sanitized_unit_tests.txt CONTENT "${sanitized_lines}")
endfunction()
