// SPDX-License-Identifier: GPL-2.0-or-later
#include "model/qemu_options.h"

#include <gtest/gtest.h>

#include "base/errors.h"

namespace topolab {
namespace {

TEST(QemuOptions, PropertiesSplitAtSingleCommasOnly) {
  const std::vector<QemuProperty> p = parse_qemu_properties("node,memdev=a,,b,cpus=0-1");
  ASSERT_EQ(p.size(), 3u);
  EXPECT_EQ(p[0].name, "node");
  EXPECT_FALSE(p[0].has_value);
  EXPECT_EQ(p[1].name, "memdev");
  EXPECT_EQ(p[1].value, "a,b");
  EXPECT_EQ(p[2].value, "0-1");
}

TEST(QemuOptions, SizesAsQemuStrtosz) {
  EXPECT_EQ(parse_qemu_size("512M", 0), uint64_t{512} << 20);
  EXPECT_EQ(parse_qemu_size("512m", 0), uint64_t{512} << 20);
  EXPECT_EQ(parse_qemu_size("4096", 0), 4096u);         // -object size=: bytes
  EXPECT_EQ(parse_qemu_size("4096", 20), uint64_t{4096} << 20);  // -m: MiB
  EXPECT_EQ(parse_qemu_size("1.5G", 0), uint64_t{3} << 29);
  EXPECT_EQ(parse_qemu_size("16E", 0), std::nullopt);   // 2^64
  EXPECT_EQ(parse_qemu_size("15E", 0), uint64_t{15} << 60);
  EXPECT_EQ(parse_qemu_size("1.5", 0), std::nullopt);   // a fraction of a byte
  EXPECT_EQ(parse_qemu_size("1.5B", 0), std::nullopt);
  EXPECT_EQ(parse_qemu_size("G", 0), std::nullopt);
  EXPECT_EQ(parse_qemu_size("1GB", 0), std::nullopt);
  EXPECT_EQ(parse_qemu_size("", 0), std::nullopt);
}

TEST(QemuOptions, RamSizeIsWholeMib) {
  EXPECT_EQ(parse_qemu_ram_size("256"), 256u);
  EXPECT_EQ(parse_qemu_ram_size("4g"), 4096u);
  EXPECT_EQ(parse_qemu_ram_size("size=1g"), 1024u);
  EXPECT_THROW(parse_qemu_ram_size("1000k"), ConfigError);
  EXPECT_THROW(parse_qemu_ram_size("0"), ConfigError);
}

TEST(QemuOptions, NumbersAndBooleans) {
  EXPECT_EQ(parse_qemu_number("0x10"), 16u);
  EXPECT_EQ(parse_qemu_number("12"), 12u);
  EXPECT_EQ(parse_qemu_number("1x"), std::nullopt);
  EXPECT_EQ(parse_qemu_bool("on"), true);
  EXPECT_EQ(parse_qemu_bool("n"), false);
  EXPECT_EQ(parse_qemu_bool("maybe"), std::nullopt);
}

}  // namespace
}  // namespace topolab
