// SPDX-License-Identifier: GPL-2.0-or-later
// Where the topolab command finds the files it is not compiled with: the
// guest images (testcases/*.elf: the demo's topology_check, the
// experiments' sched, any image a user names for `run`) and the Linux
// guest's directory (vmlinux and initramfs.cpio, as linux_guest.sh leaves
// them). The same binary runs in two layouts:
//
//   build tree  BUILD/topolab beside BUILD/testcases/; BUILD is a CMake
//               build directory (it holds CMakeCache.txt). The Linux guest
//               is in .deps/linux of the checkout BUILD sits in
//               (tools/linux_guest.sh's default).
//   installed   PREFIX/bin/topolab and PREFIX/share/topolab/testcases/
//               (cmake --install, the .deb), or wherever GNUInstallDirs put
//               them: the path from the binary's directory to the data is
//               compiled in, so an installed tree can be moved as a whole.
//               The Linux guest is per user, in $XDG_CACHE_HOME/topolab/linux
//               or ~/.cache/topolab/linux, the default of the installed
//               PREFIX/share/topolab/linux/linux_guest.sh.
//
// The lookup is from the binary's own path (/proc/self/exe, links
// resolved), never the working directory or PATH, so the QEMU front in
// libexec/topolab/ (a link to bin/topolab) finds the same files.
#pragma once

#include <filesystem>
#include <functional>
#include <string>
#include <string_view>

namespace topolab {

struct DataPaths {
  bool installed = false;
  std::filesystem::path images;     // the directory of topology_check.elf, sched.elf, ...
  std::filesystem::path linux_dir;  // the Linux guest's default --linux; empty when no home is known
  std::string linux_guest_command;  // what fills linux_dir, as the user would type it
};

// What the lookup reads from the host, so that tests can fake it.
struct DataPathsHost {
  std::function<bool(const std::filesystem::path&)> exists;
  std::string xdg_cache_home;  // empty when unset
  std::string home;            // empty when unset
};

// exe: the binary's absolute path with links resolved; data_from_bin: the
// installed data directory relative to the binary's (../share/topolab).
DataPaths find_data_paths(const std::filesystem::path& exe, std::string_view data_from_bin, const DataPathsHost& host);

// For this process: /proc/self/exe, the file system, the environment, and
// the relative path CMake computed from the install directories.
DataPaths find_data_paths();

}  // namespace topolab
