# SPDX-License-Identifier: GPL-2.0-or-later
# Precompiled headers: the standard library, fmt and (for the test binaries)
# GoogleTest are parsed once per target instead of once per file. Measured
# per file with clang at -O0 under ASan+UBSan (the sanitized build), a test
# file compiles in about 0.65 of its time without them (docs/reliability.md,
# "The CI budget"). Every C++ target gets its own, made with its own flags,
# so a target's definitions and options never disagree with its header.
#
# Every file sees these headers first. A file still includes what it uses:
# configure with -DTOPOLAB_PRECOMPILED_HEADERS=OFF to check that it does.
option(TOPOLAB_PRECOMPILED_HEADERS "Precompile the standard library, fmt and GoogleTest headers" ON)

set(TOPOLAB_COMMON_HEADERS
  <algorithm> <cstdint> <cstdio> <functional> <map> <memory> <optional> <set> <string> <string_view>
  <utility> <vector> <fmt/format.h>)

function(topolab_precompile_headers dir)
  get_property(targets DIRECTORY ${dir} PROPERTY BUILDSYSTEM_TARGETS)
  get_property(subdirs DIRECTORY ${dir} PROPERTY SUBDIRECTORIES)
  foreach(target IN LISTS targets)
    get_target_property(type ${target} TYPE)
    if(NOT type MATCHES "^(EXECUTABLE|STATIC_LIBRARY|OBJECT_LIBRARY)$")
      continue()
    endif()
    # A header made for one or two files costs about what it saves them
    # (the fuzz harnesses are one file each).
    get_target_property(sources ${target} SOURCES)
    list(FILTER sources INCLUDE REGEX "\\.cc$")
    list(LENGTH sources count)
    if(count LESS 3)
      continue()
    endif()
    set(headers ${TOPOLAB_COMMON_HEADERS})
    if(target MATCHES "_tests$")
      list(APPEND headers <gtest/gtest.h>)
    endif()
    list(TRANSFORM headers REPLACE "^(.+)$" "$<$<COMPILE_LANGUAGE:CXX>:\\1>")
    target_precompile_headers(${target} PRIVATE ${headers})
  endforeach()
  foreach(subdir IN LISTS subdirs)
    topolab_precompile_headers(${subdir})
  endforeach()
endfunction()
