# SPDX-License-Identifier: GPL-2.0-or-later
# The CPU engine, as the target Unicorn::unicorn: topolab's own build of
# Unicorn 2.1.3 with its patches (emu/unicorn/*.patch, docs/unicorn.md),
# which tools/setup.sh makes in .deps/unicorn-2.1.3-topolab. No other
# Unicorn is taken: the vCPU relies on what the patches add (Debian's 2.0.1
# maps virtual = physical; a stock 2.1.x has no budget in generated code).
set(TOPOLAB_UNICORN_DIR ${PROJECT_SOURCE_DIR}/.deps/unicorn-2.1.3-topolab CACHE PATH
    "topolab's build of Unicorn 2.1.3 (tools/build_unicorn.sh fills it)")
set(patch_list ${TOPOLAB_UNICORN_DIR}/topolab-patches.txt)
if(NOT EXISTS ${TOPOLAB_UNICORN_DIR}/lib/libunicorn.a OR NOT EXISTS ${patch_list})
  message(FATAL_ERROR "No topolab build of Unicorn 2.1.3 in ${TOPOLAB_UNICORN_DIR}: run tools/setup.sh (topolab takes no other Unicorn)")
endif()
file(STRINGS ${TOPOLAB_UNICORN_DIR}/include/unicorn/unicorn.h version_lines REGEX "^#define UC_API_(MAJOR|MINOR|PATCH) ")
foreach(line IN LISTS version_lines)
  string(REGEX MATCH "UC_API_(MAJOR|MINOR|PATCH) +([0-9]+)" _ ${line})
  set(uc_${CMAKE_MATCH_1} ${CMAKE_MATCH_2})
endforeach()
set(TOPOLAB_UNICORN_VERSION ${uc_MAJOR}.${uc_MINOR}.${uc_PATCH})
file(STRINGS ${patch_list} TOPOLAB_UNICORN_PATCHES)
# The patches this tree has must be the ones the engine was built with.
file(GLOB tree_patches RELATIVE ${PROJECT_SOURCE_DIR}/emu/unicorn ${PROJECT_SOURCE_DIR}/emu/unicorn/*.patch)
list(SORT tree_patches)
list(TRANSFORM tree_patches REPLACE "\\.patch$" "")
if(NOT TOPOLAB_UNICORN_VERSION STREQUAL "2.1.3" OR NOT "${tree_patches}" STREQUAL "${TOPOLAB_UNICORN_PATCHES}")
  message(FATAL_ERROR "The Unicorn in ${TOPOLAB_UNICORN_DIR} (${TOPOLAB_UNICORN_VERSION}, patches: ${TOPOLAB_UNICORN_PATCHES}) is not 2.1.3 with this tree's patches (${tree_patches}): run tools/setup.sh")
endif()
add_library(Unicorn::unicorn STATIC IMPORTED GLOBAL)
set_target_properties(Unicorn::unicorn PROPERTIES
  IMPORTED_LOCATION ${TOPOLAB_UNICORN_DIR}/lib/libunicorn.a
  INTERFACE_INCLUDE_DIRECTORIES ${TOPOLAB_UNICORN_DIR}/include)
find_package(Threads REQUIRED)
target_link_libraries(Unicorn::unicorn INTERFACE Threads::Threads m rt)
list(LENGTH TOPOLAB_UNICORN_PATCHES TOPOLAB_UNICORN_PATCH_COUNT)
list(JOIN TOPOLAB_UNICORN_PATCHES ", " TOPOLAB_UNICORN_PATCH_NAMES)
message(STATUS "Unicorn ${TOPOLAB_UNICORN_VERSION} + ${TOPOLAB_UNICORN_PATCH_COUNT} topolab patches (${TOPOLAB_UNICORN_PATCH_NAMES})")
