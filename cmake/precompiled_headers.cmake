# SPDX-License-Identifier: GPL-2.0-or-later
# Precompiled headers: the standard library, fmt and (for the test binaries)
# GoogleTest are parsed once, not once per file. Measured per file with
# clang at -O0 under ASan+UBSan (the sanitized build), a test file compiles
# in about 0.65 of its time without them (docs/reliability.md, "The CI
# budget").
#
# Two headers are made, each once: one for the libraries and the command,
# one for the test binaries (with GoogleTest, and the test binaries'
# options: cmake/unit_tests.cmake). Every target without compile
# definitions or options of its own reuses its kind's, whatever its size (a
# fuzz harness's one file compiles in 1.2 s with the header instead of 3.3 s,
# clang -O0 under ASan+UBSan). A target of three or more files with flags of
# its own makes its own, so that no file is compiled against a header made
# with other flags; one of one or two files makes none: a header costs about
# what it saves them. Each shared header is built only when a target in the
# build uses it (the test binaries' is not, in a build without them).
#
# Every file sees these headers first. A file still includes what it uses:
# configure with -DTOPOLAB_PRECOMPILED_HEADERS=OFF to check that it does.
option(TOPOLAB_PRECOMPILED_HEADERS "Precompile the standard library, fmt and GoogleTest headers" ON)

set(TOPOLAB_COMMON_HEADERS
  <algorithm> <cstdint> <cstdio> <functional> <map> <memory> <optional> <set> <string> <string_view>
  <utility> <vector> <fmt/format.h>)

function(topolab_headers_for out tests)
  set(headers ${TOPOLAB_COMMON_HEADERS})
  if(tests)
    list(APPEND headers <gtest/gtest.h>)
  endif()
  list(TRANSFORM headers REPLACE "^(.+)$" "$<$<COMPILE_LANGUAGE:CXX>:\\1>")
  set(${out} ${headers} PARENT_SCOPE)
endfunction()

# The two shared headers, each on a target of its own with the flags of its
# kind: fmt's definitions (every library links fmt), GoogleTest's for tests.
function(topolab_make_shared_headers)
  set(empty ${CMAKE_BINARY_DIR}/precompiled_headers.cc)
  file(WRITE ${empty} "// The precompiled headers' own file (cmake/precompiled_headers.cmake).\n")
  topolab_headers_for(library_headers FALSE)
  add_library(topolab_headers OBJECT EXCLUDE_FROM_ALL ${empty})
  target_link_libraries(topolab_headers PRIVATE fmt::fmt)
  target_precompile_headers(topolab_headers PRIVATE ${library_headers})
  topolab_headers_for(test_headers TRUE)
  add_library(topolab_test_headers OBJECT EXCLUDE_FROM_ALL ${empty})
  target_link_libraries(topolab_test_headers PRIVATE fmt::fmt GTest::gtest)
  topolab_unit_test_options(topolab_test_headers)
  target_precompile_headers(topolab_test_headers PRIVATE ${test_headers})
endfunction()

function(topolab_precompile_headers dir)
  get_property(targets DIRECTORY ${dir} PROPERTY BUILDSYSTEM_TARGETS)
  get_property(subdirs DIRECTORY ${dir} PROPERTY SUBDIRECTORIES)
  foreach(target IN LISTS targets)
    get_target_property(type ${target} TYPE)
    if(NOT type MATCHES "^(EXECUTABLE|STATIC_LIBRARY|OBJECT_LIBRARY)$" OR target MATCHES "^topolab_(test_)?headers$")
      continue()
    endif()
    get_target_property(sources ${target} SOURCES)
    list(FILTER sources INCLUDE REGEX "\\.cc$")
    list(LENGTH sources count)
    if(count EQUAL 0)
      continue()
    endif()
    set(tests FALSE)
    set(shared topolab_headers)
    if(target MATCHES "_tests$")
      set(tests TRUE)
      set(shared topolab_test_headers)
    endif()
    get_target_property(definitions ${target} COMPILE_DEFINITIONS)
    get_target_property(options ${target} COMPILE_OPTIONS)
    # What every target has (add_compile_options, which the shared headers
    # have too), and the test binaries' own options, which the shared test
    # header has, are not a target's own.
    get_property(everywhere DIRECTORY ${PROJECT_SOURCE_DIR} PROPERTY COMPILE_OPTIONS)
    if(options)
      list(REMOVE_ITEM options ${everywhere})
    endif()
    if(tests AND options)
      list(REMOVE_ITEM options ${TOPOLAB_UNIT_TEST_OPTIONS})
    endif()
    if((definitions OR options) AND count LESS 3)
      continue()
    endif()
    # The header is every file's first include and it includes fmt, so the
    # target takes fmt's definitions (FMT_SHARED): gcc refuses a header made
    # with definitions the file lacks (-Winvalid-pch), as it did for
    # data_paths_tests, whose code does not use fmt.
    target_link_libraries(${target} PRIVATE fmt::fmt)
    if(definitions OR options)
      topolab_headers_for(headers ${tests})
      target_precompile_headers(${target} PRIVATE ${headers})
    else()
      target_precompile_headers(${target} REUSE_FROM ${shared})
    endif()
  endforeach()
  foreach(subdir IN LISTS subdirs)
    topolab_precompile_headers(${subdir})
  endforeach()
endfunction()
