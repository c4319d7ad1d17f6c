// SPDX-License-Identifier: GPL-2.0-or-later
#include "report/cpuid_fields.h"

#include <gtest/gtest.h>

namespace topolab {
namespace {

const DecodedField* find(const std::vector<DecodedField>& fields, unsigned hi, unsigned lo) {
  for (const auto& f : fields)
    if (f.hi == hi && f.lo == lo) return &f;
  return nullptr;
}

TEST(CpuidFields, Leaf4SharingFieldReadsAsACountMinusOne) {
  // Skylake-Server's L2 on 2 threads per core: EAX = 0x1c004143.
  const auto fields = decode_register(0x4, 'a', 0x1c004143);
  const DecodedField* sharing = find(fields, 25, 14);
  ASSERT_NE(sharing, nullptr);
  EXPECT_EQ(sharing->value, 1u);
  EXPECT_EQ(sharing->name, "maximum number of addressable IDs for logical processors sharing this cache");
  EXPECT_EQ(sharing->reading, "1 (N - 1, so N = 2)");
  EXPECT_FALSE(sharing->plain.empty());
  EXPECT_EQ(find(fields, 7, 5)->value, 2u);  // level 2
  EXPECT_EQ(find(fields, 4, 0)->reading, "3: unified cache");
  EXPECT_EQ(fields.front().hi, 31u) << "high bits first";
}

TEST(CpuidFields, AmdCacheLeafHasNoCoreCount) {
  EXPECT_NE(find(decode_register(0x4, 'a', 0xfc000000), 31, 26), nullptr);
  EXPECT_EQ(find(decode_register(0x8000001D, 'a', 0xfc000000), 31, 26), nullptr);
  EXPECT_NE(find(decode_register(0x8000001D, 'a', 0), 25, 14), nullptr);
}

TEST(CpuidFields, TopologyLeavesShareOneLayout) {
  const auto b = decode_register(0x1F, 'c', 0x0502);
  EXPECT_EQ(find(b, 15, 8)->reading, "5: die");
  EXPECT_EQ(find(b, 7, 0)->value, 2u);
  EXPECT_EQ(find(decode_register(0xB, 'd', 0x2a), 31, 0)->reading, "0x2a");
}

TEST(CpuidFields, FeatureBitsAreListedWhenSet) {
  const auto edx = decode_register(0x1, 'd', 1u << 28 | 1u << 10);
  const DecodedField* htt = find(edx, 28, 28);
  ASSERT_NE(htt, nullptr);
  EXPECT_EQ(htt->name.rfind("HTT", 0), 0u);
  EXPECT_EQ(find(edx, 10, 10)->name, "(not named here)");  // reserved, but set
  EXPECT_EQ(find(edx, 0, 0), nullptr);                     // clear bits are left out
  EXPECT_NE(find(decode_register(0x7, 'd', 1u << 15), 15, 15)->name.find("Hybrid"), std::string::npos);
}

TEST(CpuidFields, VendorStringsReadAsText) {
  EXPECT_EQ(find(decode_register(0x0, 'b', 0x756e6547), 31, 0)->reading, "'Genu'");
  EXPECT_EQ(find(decode_register(0x80000004, 'd', 0x00000041), 31, 0)->reading, "'A\\x00\\x00\\x00'");
  EXPECT_EQ(find(decode_register(0x80000004, 'd', 0), 31, 0)->name, "processor brand string, characters 45-48");
  EXPECT_EQ(find(decode_register(0x0, 'c', 0), 31, 0)->name, "vendor identification string, characters 9-12");
}

TEST(CpuidFields, AmdL1CachesShareOneLayout) {
  // 32 KiB, 8-way, 1 line per tag, 64-byte lines.
  EXPECT_EQ(find(decode_register(0x80000005, 'c', 0x20080140), 31, 24)->name, "L1 data cache size in KB");
  EXPECT_EQ(find(decode_register(0x80000005, 'c', 0x20080140), 31, 24)->value, 32u);
  EXPECT_EQ(find(decode_register(0x80000005, 'd', 0x20080140), 23, 16)->name, "L1 instruction cache associativity");
  EXPECT_EQ(find(decode_register(0x80000005, 'd', 0x20080140), 7, 0)->value, 64u);
}

TEST(CpuidFields, CoreTypes) {
  EXPECT_EQ(core_type_name(0x40000000 | 0x1234), "Core (P-core)");
  EXPECT_EQ(core_type_name(0x20000000), "Atom (E-core)");
  EXPECT_EQ(core_type_name(0), "");
  EXPECT_EQ(core_type_name(0x10000000), "type 0x10");
  EXPECT_EQ(find(decode_register(0x1A, 'a', 0x20000001), 31, 24)->reading, "0x20: Atom (E-core)");
}

TEST(CpuidFields, NamesAndBits) {
  EXPECT_EQ(field_bits('a', 25, 14), "EAX[25:14]");
  EXPECT_EQ(field_bits('d', 28, 28), "EDX[28]");
  EXPECT_EQ(cpuid_leaf_name(0x4), "deterministic cache parameters");
  EXPECT_EQ(cpuid_leaf_name(0x12345), "");
  for (const auto& f : cpuid_field_names()) {
    EXPECT_GE(f.hi, f.lo) << f.name;
    EXPECT_LT(f.hi, 32u) << f.name;
  }
}

}  // namespace
}  // namespace topolab
