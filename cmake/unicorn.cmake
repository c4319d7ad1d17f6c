# The CPU engine: Unicorn 2.1.3 or newer, as the target Unicorn::unicorn.
#
# Unicorn 2.0.1 (Debian 12's) maps every guest virtual address to the same
# physical one, so it cannot run a guest with real paging; topolab refuses
# it. In order of preference:
#   1. a system Unicorn >= 2.1.3 that pkg-config finds;
#   2. the Unicorn project's own 2.1.3 build that tools/setup.sh unpacks into
#      .deps/unicorn-2.1.3 (or TOPOLAB_UNICORN_DIR): its static libunicorn.a,
#      so build/topolab carries its own engine.
set(TOPOLAB_UNICORN_MIN_VERSION 2.1.3)
set(TOPOLAB_UNICORN_DIR ${PROJECT_SOURCE_DIR}/.deps/unicorn-2.1.3 CACHE PATH
    "An unpacked Unicorn >= 2.1.3 (include/unicorn/*.h, lib/libunicorn.a); tools/setup.sh fills the default")

pkg_check_modules(SYSTEM_UNICORN QUIET unicorn)
if(SYSTEM_UNICORN_FOUND AND NOT SYSTEM_UNICORN_VERSION VERSION_LESS TOPOLAB_UNICORN_MIN_VERSION)
  pkg_check_modules(UNICORN REQUIRED IMPORTED_TARGET unicorn)
  add_library(Unicorn::unicorn ALIAS PkgConfig::UNICORN)
  set(TOPOLAB_UNICORN_VERSION ${SYSTEM_UNICORN_VERSION})
  set(TOPOLAB_UNICORN_ORIGIN "system (pkg-config)")
elseif(EXISTS ${TOPOLAB_UNICORN_DIR}/lib/libunicorn.a AND EXISTS ${TOPOLAB_UNICORN_DIR}/include/unicorn/unicorn.h)
  file(STRINGS ${TOPOLAB_UNICORN_DIR}/include/unicorn/unicorn.h version_lines
       REGEX "^#define UC_API_(MAJOR|MINOR|PATCH) ")
  foreach(line IN LISTS version_lines)
    string(REGEX MATCH "UC_API_(MAJOR|MINOR|PATCH) +([0-9]+)" _ ${line})
    set(uc_${CMAKE_MATCH_1} ${CMAKE_MATCH_2})
  endforeach()
  set(TOPOLAB_UNICORN_VERSION ${uc_MAJOR}.${uc_MINOR}.${uc_PATCH})
  if(TOPOLAB_UNICORN_VERSION VERSION_LESS TOPOLAB_UNICORN_MIN_VERSION)
    message(FATAL_ERROR "Unicorn ${TOPOLAB_UNICORN_VERSION} in ${TOPOLAB_UNICORN_DIR} is too old: topolab needs >= ${TOPOLAB_UNICORN_MIN_VERSION} (real guest paging); run tools/setup.sh")
  endif()
  add_library(Unicorn::unicorn STATIC IMPORTED GLOBAL)
  set_target_properties(Unicorn::unicorn PROPERTIES
    IMPORTED_LOCATION ${TOPOLAB_UNICORN_DIR}/lib/libunicorn.a
    INTERFACE_INCLUDE_DIRECTORIES ${TOPOLAB_UNICORN_DIR}/include)
  find_package(Threads REQUIRED)
  target_link_libraries(Unicorn::unicorn INTERFACE Threads::Threads m rt)
  set(TOPOLAB_UNICORN_ORIGIN "${TOPOLAB_UNICORN_DIR} (static)")
elseif(SYSTEM_UNICORN_FOUND)
  message(FATAL_ERROR "Unicorn ${SYSTEM_UNICORN_VERSION} (system) is too old: topolab needs >= ${TOPOLAB_UNICORN_MIN_VERSION}, whose guest paging is real (2.0.1 maps virtual = physical); run tools/setup.sh to fetch 2.1.3")
else()
  message(FATAL_ERROR "No Unicorn >= ${TOPOLAB_UNICORN_MIN_VERSION} found: run tools/setup.sh, which fetches 2.1.3 into ${TOPOLAB_UNICORN_DIR}")
endif()
message(STATUS "Unicorn ${TOPOLAB_UNICORN_VERSION}: ${TOPOLAB_UNICORN_ORIGIN}")
