# SPDX-License-Identifier: GPL-2.0-or-later
# Every GoogleTest binary (an executable target named *_tests, one per area:
# see the areas' CMakeLists.txt), found rather than listed, so that a new
# area's tests cannot be left out of the sanitized run. The target
# `unit_tests` builds them all; unit_tests.txt in the build directory names
# each with its path, for tools/sanitize_units.sh.
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

topolab_find_unit_tests(${PROJECT_SOURCE_DIR} TOPOLAB_UNIT_TESTS)
add_custom_target(unit_tests DEPENDS ${TOPOLAB_UNIT_TESTS})
set(lines)
foreach(target IN LISTS TOPOLAB_UNIT_TESTS)
  list(APPEND lines "${target} $<TARGET_FILE:${target}>")
endforeach()
string(REPLACE ";" "\n" lines "${lines}")
file(GENERATE OUTPUT ${CMAKE_BINARY_DIR}/unit_tests.txt CONTENT "${lines}\n")
