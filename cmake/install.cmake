# SPDX-License-Identifier: GPL-2.0-or-later
# The documentation `cmake --install` puts in share/doc/topolab, and the
# Debian package (`cpack -G DEB` in the build directory). What else is
# installed is next to where it is built: bin/topolab and the QEMU front in
# cli/CMakeLists.txt, the Linux guest's build in tools/CMakeLists.txt, the
# guest images in testcases/CMakeLists.txt.
install(FILES README.md CONTRIBUTING.md LICENSE DESTINATION ${CMAKE_INSTALL_DOCDIR})
# What the binary contains under which licence, as Debian wants it in every
# package's /usr/share/doc/PACKAGE/copyright.
install(FILES cmake/copyright DESTINATION ${CMAKE_INSTALL_DOCDIR})
# README's links into docs/ keep working from share/doc/topolab.
install(DIRECTORY docs/ DESTINATION ${CMAKE_INSTALL_DOCDIR}/docs)

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME topolab)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "deterministic x86 machine for CPU topology, IPI and HLT studies")
# Without the debug information of a RelWithDebInfo build (CMake's default
# here; tools/build.sh builds Release).
set(CPACK_STRIP_FILES ON)
# Directories 0755 whatever the packager's umask.
set(CPACK_INSTALL_DEFAULT_DIRECTORY_PERMISSIONS
    OWNER_READ OWNER_WRITE OWNER_EXECUTE GROUP_READ GROUP_EXECUTE WORLD_READ WORLD_EXECUTE)

set(TOPOLAB_PACKAGE_MAINTAINER "topolab maintainers <maintainers@users.noreply.a-seed-c55bd2e3.example>"
    CACHE STRING "The Maintainer field of the .deb")
set(CPACK_DEBIAN_PACKAGE_MAINTAINER ${TOPOLAB_PACKAGE_MAINTAINER})
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION otherosfs)  # QEMU's section
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
# The long description, under the summary's line.
set(CPACK_DEBIAN_PACKAGE_DESCRIPTION
    "topolab builds the CPUID leaves a guest reads from a QEMU-style -smp/-cpu
description, shows how Linux and hwloc decode them, and boots Multiboot
images and Linux on Unicorn (QEMU TCG) vCPUs with local APICs and a KVM-like
cost model on virtual time: same image and configuration, same output, byte
for byte. It runs the experiments of QEMU's l3-cache debate and of guest
halt-polling. The QEMU front is /usr/libexec/topolab/qemu-system-x86_64.")
# The shared libraries from dpkg-shlibdeps; then what the installed
# share/topolab/linux/linux_guest.sh runs besides Essential packages:
# apt-get and apt-cache (apt), readelf (binutils), make_initramfs.py and
# vmlinux_from_bzimage.py (python3).
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_DEPENDS "apt, binutils, python3")
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
# `make package_source`: the source as committed, without the build
# directories and .deps/ (the engine's downloaded release and its build,
# the Linux guest's packages), which are no part of topolab's source.
set(CPACK_SOURCE_GENERATOR TXZ)
set(CPACK_SOURCE_IGNORE_FILES "^${PROJECT_SOURCE_DIR}/(\\.git|\\.deps|build[^/]*)(/|$)")
include(CPack)
