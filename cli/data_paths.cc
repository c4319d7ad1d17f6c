// SPDX-License-Identifier: GPL-2.0-or-later
#include "cli/data_paths.h"

#include <cstdlib>
#include <system_error>

namespace topolab {

namespace {

std::string environment(const char* name) {
  const char* value = std::getenv(name);
  return value ? value : "";
}

// The per-user cache directory of the XDG base directory spec: a relative
// $XDG_CACHE_HOME is invalid there and ignored. linux_guest.sh applies the
// same rule, so both name one directory.
std::filesystem::path user_cache(const DataPathsHost& host) {
  if (!host.xdg_cache_home.empty() && host.xdg_cache_home.front() == '/') return host.xdg_cache_home;
  if (!host.home.empty() && host.home.front() == '/') return std::filesystem::path(host.home) / ".cache";
  return {};
}

}  // namespace

DataPaths find_data_paths(const std::filesystem::path& exe, std::string_view data_from_bin, const DataPathsHost& host) {
  const std::filesystem::path dir = exe.parent_path();
  DataPaths paths;
  // A build directory, whatever its name: the images are built beside the
  // binary. An installed tree never has a CMakeCache.txt in its bin/.
  if (host.exists(dir / "CMakeCache.txt")) {
    paths.images = dir / "testcases";
    paths.linux_dir = dir.parent_path() / ".deps" / "linux";
    paths.linux_guest_command = "tools/linux_guest.sh";
    return paths;
  }
  const std::filesystem::path data = (dir / data_from_bin).lexically_normal();
  paths.installed = true;
  paths.images = data / "testcases";
  if (const std::filesystem::path cache = user_cache(host); !cache.empty())
    paths.linux_dir = cache / "topolab" / "linux";
  paths.linux_guest_command = (data / "linux" / "linux_guest.sh").string();
  return paths;
}

DataPaths find_data_paths() {
  const DataPathsHost host{
      .exists =
          [](const std::filesystem::path& p) {
            std::error_code ec;  // unreadable counts as absent
            return std::filesystem::exists(p, ec);
          },
      .xdg_cache_home = environment("XDG_CACHE_HOME"),
      .home = environment("HOME"),
  };
  return find_data_paths(std::filesystem::canonical("/proc/self/exe"), TOPOLAB_DATA_FROM_BIN, host);
}

}  // namespace topolab
