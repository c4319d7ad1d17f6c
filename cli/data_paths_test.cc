// SPDX-License-Identifier: GPL-2.0-or-later
#include "cli/data_paths.h"

#include <gtest/gtest.h>

#include <set>

namespace topolab {
namespace {

// A host with the given files, a cache home and a home.
DataPathsHost host_with(std::set<std::string> files, std::string xdg_cache_home, std::string home) {
  return DataPathsHost{
      .exists = [files](const std::filesystem::path& p) { return files.count(p.string()) > 0; },
      .xdg_cache_home = std::move(xdg_cache_home),
      .home = std::move(home),
  };
}

TEST(DataPaths, BuildTreeImagesBesideTheBinaryAndTheCheckoutsLinuxGuest) {
  const DataPaths p = find_data_paths("/src/topolab/build/topolab", "../share/topolab",
                                      host_with({"/src/topolab/build/CMakeCache.txt"}, "/xdg", "/home/u"));
  EXPECT_FALSE(p.installed);
  EXPECT_EQ(p.images, "/src/topolab/build/testcases");
  EXPECT_EQ(p.linux_dir, "/src/topolab/.deps/linux");
  EXPECT_EQ(p.linux_guest_command, "tools/linux_guest.sh");
}

TEST(DataPaths, AnyBuildDirectoryNameCounts) {
  const DataPaths p = find_data_paths("/src/t/build-asan/topolab", "../share/topolab",
                                      host_with({"/src/t/build-asan/CMakeCache.txt"}, "", "/home/u"));
  EXPECT_FALSE(p.installed);
  EXPECT_EQ(p.images, "/src/t/build-asan/testcases");
}

TEST(DataPaths, InstalledImagesUnderShareAndTheLinuxGuestInTheUsersCache) {
  const DataPaths p = find_data_paths("/usr/bin/topolab", "../share/topolab", host_with({}, "", "/home/u"));
  EXPECT_TRUE(p.installed);
  EXPECT_EQ(p.images, "/usr/share/topolab/testcases");
  EXPECT_EQ(p.linux_dir, "/home/u/.cache/topolab/linux");
  EXPECT_EQ(p.linux_guest_command, "/usr/share/topolab/linux/linux_guest.sh");
}

TEST(DataPaths, InstalledTreeMovesAsAWholeAndFollowsTheCompiledInRelativePath) {
  const DataPaths p = find_data_paths("/opt/tl/usr/bin/topolab", "../lib/../share/topolab", host_with({}, "", "/root"));
  EXPECT_EQ(p.images, "/opt/tl/usr/share/topolab/testcases");
  const DataPaths deeper =
      find_data_paths("/opt/tl/bin/x86_64/topolab", "../../data/topolab", host_with({}, "", "/root"));
  EXPECT_EQ(deeper.images, "/opt/tl/data/topolab/testcases");
}

TEST(DataPaths, ACMakeCacheElsewhereDoesNotMakeABuildTree) {
  // Only the binary's own directory is asked: a cache one level up (a
  // build directory's install prefix, say) leaves the installed layout.
  const DataPaths p = find_data_paths("/b/prefix/bin/topolab", "../share/topolab",
                                      host_with({"/b/CMakeCache.txt", "/b/prefix/CMakeCache.txt"}, "", "/h"));
  EXPECT_TRUE(p.installed);
  EXPECT_EQ(p.images, "/b/prefix/share/topolab/testcases");
}

TEST(DataPaths, XdgCacheHomeWinsWhenAbsoluteAndIsIgnoredWhenRelative) {
  EXPECT_EQ(find_data_paths("/usr/bin/topolab", "../share/topolab", host_with({}, "/var/cache/u", "/home/u")).linux_dir,
            "/var/cache/u/topolab/linux");
  // The XDG base directory spec: a relative path there is invalid.
  EXPECT_EQ(find_data_paths("/usr/bin/topolab", "../share/topolab", host_with({}, "cache", "/home/u")).linux_dir,
            "/home/u/.cache/topolab/linux");
}

TEST(DataPaths, NoHomeNoDefaultLinuxDirectory) {
  EXPECT_EQ(find_data_paths("/usr/bin/topolab", "../share/topolab", host_with({}, "", "")).linux_dir, "");
  EXPECT_EQ(find_data_paths("/usr/bin/topolab", "../share/topolab", host_with({}, "", "relative")).linux_dir, "");
}

}  // namespace
}  // namespace topolab
