// SPDX-License-Identifier: GPL-2.0-or-later
#include "firmware/pvh_boot.h"

#include <cstring>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "firmware/fake_kernels.h"

namespace topolab {
namespace {

std::string expect_error(GuestRam& ram, const std::vector<uint8_t>& image, const std::string& cmdline = "",
                         const std::vector<uint8_t>& initrd = {}) {
  try {
    load_pvh(ram, image, cmdline, initrd, 0xe0000);
  } catch (const ImageError& e) {
    EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos);
    return e.what();
  }
  ADD_FAILURE() << "the kernel was accepted";
  return "";
}

TEST(PvhBoot, RecognisesTheEntryNote) {
  EXPECT_TRUE(is_pvh_image(FakeVmlinux{}.build()));
  FakeVmlinux in_section;
  in_section.note_in_segment = false;
  in_section.note_in_section = true;
  EXPECT_TRUE(is_pvh_image(in_section.build()));
  FakeVmlinux four_bytes;
  four_bytes.entry_size = 4;
  EXPECT_TRUE(is_pvh_image(four_bytes.build()));

  FakeVmlinux no_note;
  no_note.note_in_segment = false;
  EXPECT_FALSE(is_pvh_image(no_note.build()));
  FakeVmlinux other_type;
  other_type.entry_type = 17;
  EXPECT_FALSE(is_pvh_image(other_type.build()));
  FakeVmlinux other_owner;
  other_owner.note_owner = "Linux";
  EXPECT_FALSE(is_pvh_image(other_owner.build()));
  FakeVmlinux elf32;
  elf32.elf_class = 1;
  EXPECT_FALSE(is_pvh_image(elf32.build()));
  FakeVmlinux arm;
  arm.machine = 183;
  EXPECT_FALSE(is_pvh_image(arm.build()));
  EXPECT_FALSE(is_pvh_image(std::vector<uint8_t>(0x1000, 0)));
  // Cut anywhere, the image is no longer PVH, and nothing reads past its end.
  const std::vector<uint8_t> image = FakeVmlinux{}.build();
  for (size_t size : {size_t{0}, size_t{4}, size_t{63}, size_t{100}, image.size() - 20})
    EXPECT_FALSE(is_pvh_image(std::span(image).first(size))) << size;
}

TEST(PvhBoot, LoadsSegmentsByPhysicalAddressAndZeroesTheBss) {
  GuestRam ram(64 << 20);
  std::fill_n(ram.data(), ram.top(), 0xaa);
  PvhBoot boot = load_pvh(ram, FakeVmlinux{}.build(), "", {}, 0xe0000);
  EXPECT_EQ(boot.entry, 0x1000850u);
  EXPECT_EQ(boot.kernel_start, 0x1000000u);
  EXPECT_EQ(boot.kernel_end, 0x1204000u);
  EXPECT_EQ(ram.read<uint8_t>(0x1000000), 0x90);
  EXPECT_EQ(ram.read<uint8_t>(0x1002fff), 0x90);
  EXPECT_EQ(ram.read<uint8_t>(0x1003000), 0xaa);  // past the segment: untouched
  EXPECT_EQ(ram.read<uint8_t>(0x12000ff), 0x11);
  EXPECT_EQ(ram.read<uint8_t>(0x1200100), 0);     // the bss
  EXPECT_EQ(ram.read<uint8_t>(0x1203fff), 0);
  EXPECT_EQ(ram.read<uint8_t>(0x1204000), 0xaa);

  FakeVmlinux four_bytes;
  four_bytes.entry_size = 4;
  four_bytes.entry = 0x1200010;
  EXPECT_EQ(load_pvh(ram, four_bytes.build(), "", {}, 0xe0000).entry, 0x1200010u);
}

TEST(PvhBoot, StartInfoCarriesCommandLineRsdpAndE820Map) {
  GuestRam ram(64 << 20);
  PvhBoot boot = load_pvh(ram, FakeVmlinux{}.build(), "console=ttyS0 quiet", {}, 0xe0010);
  const uint64_t si = boot.start_info;
  EXPECT_EQ(ram.read<uint32_t>(si), 0x336ec578u);  // "xEn3"
  EXPECT_EQ(ram.read<uint32_t>(si + 4), 1u);       // version
  EXPECT_EQ(ram.read<uint32_t>(si + 8), 0u);       // flags
  EXPECT_EQ(ram.read<uint32_t>(si + 12), 0u);      // no modules
  EXPECT_EQ(ram.read<uint64_t>(si + 16), 0u);
  EXPECT_EQ(ram.read<uint64_t>(si + 24), boot.cmdline);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(ram.bytes(boot.cmdline, 20).data())), "console=ttyS0 quiet");
  EXPECT_EQ(ram.read<uint64_t>(si + 32), 0xe0010u);  // rsdp_paddr
  const uint64_t memmap = ram.read<uint64_t>(si + 40);
  ASSERT_EQ(ram.read<uint32_t>(si + 48), 4u);
  struct Entry {
    uint64_t base, length;
    uint32_t type;
  };
  const Entry want[] = {{0, 0x9fc00, 1}, {0x9fc00, 0x400, 2}, {0xe0000, 0x20000, 2}, {0x100000, (64 << 20) - 0x100000, 1}};
  for (int i = 0; i < 4; ++i) {
    const uint64_t at = memmap + 24 * i;  // struct hvm_memmap_table_entry
    EXPECT_EQ(ram.read<uint64_t>(at), want[i].base) << i;
    EXPECT_EQ(ram.read<uint64_t>(at + 8), want[i].length) << i;
    EXPECT_EQ(ram.read<uint32_t>(at + 16), want[i].type) << i;
    EXPECT_EQ(ram.read<uint32_t>(at + 20), 0u) << i;
  }
  // All of it below 1 MiB, clear of the kernel and of the EBDA.
  EXPECT_LT(si + 56, 0x9fc00u);
  EXPECT_LT(memmap + 4 * 24, 0x9fc00u);
  EXPECT_LT(boot.cmdline + 20, 0x9fc00u);
}

// -m 16G as the pc machine lays it out: the memory map gains the RAM from
// 4 GiB; the initrd stays at the top of the RAM below the gap.
TEST(PvhBoot, RamAbove4GiBIsInTheMemoryMapAndTheInitrdStaysBelowTheGap) {
  constexpr uint64_t kGiB = uint64_t{1} << 30;
  GuestRam ram(memory_map::pc_ram_regions(16 * kGiB));
  PvhBoot boot = load_pvh(ram, FakeVmlinux{}.build(), "", std::vector<uint8_t>(10000, 0x5a), 0xe0000);
  const uint64_t si = boot.start_info, memmap = ram.read<uint64_t>(si + 40);
  ASSERT_EQ(ram.read<uint32_t>(si + 48), 5u);
  EXPECT_EQ(ram.read<uint64_t>(memmap + 24 * 3 + 8), 3 * kGiB - 0x100000);
  EXPECT_EQ(ram.read<uint64_t>(memmap + 24 * 4), 4 * kGiB);
  EXPECT_EQ(ram.read<uint64_t>(memmap + 24 * 4 + 8), 13 * kGiB);
  EXPECT_EQ(ram.read<uint32_t>(memmap + 24 * 4 + 16), 1u);
  EXPECT_EQ(boot.initrd_start, (3 * kGiB - 10000) / 4096 * 4096);
}

TEST(PvhBoot, InitrdIsModuleZeroPageAlignedAtTheTopOfRam) {
  GuestRam ram(64 << 20);
  std::vector<uint8_t> initrd(10000, 0x5a);
  PvhBoot boot = load_pvh(ram, FakeVmlinux{}.build(), "", initrd, 0xe0000);
  EXPECT_EQ(boot.initrd_start, ((64u << 20) - 10000) / 4096 * 4096);
  EXPECT_EQ(boot.initrd_size, 10000u);
  EXPECT_EQ(ram.read<uint8_t>(boot.initrd_start + 9999), 0x5a);
  const uint64_t si = boot.start_info;
  ASSERT_EQ(ram.read<uint32_t>(si + 12), 1u);
  const uint64_t mod = ram.read<uint64_t>(si + 16);  // struct hvm_modlist_entry
  EXPECT_EQ(ram.read<uint64_t>(mod), boot.initrd_start);
  EXPECT_EQ(ram.read<uint64_t>(mod + 8), 10000u);
  EXPECT_EQ(ram.read<uint64_t>(mod + 16), 0u);  // no command line
  EXPECT_EQ(ram.read<uint64_t>(mod + 24), 0u);
}

TEST(PvhBoot, RefusesBadImagesInOneLine) {
  GuestRam ram(64 << 20);
  FakeVmlinux elf32;
  elf32.elf_class = 1;
  EXPECT_NE(expect_error(ram, elf32.build()).find("32-bit ELF"), std::string::npos);
  EXPECT_NE(expect_error(ram, std::vector<uint8_t>(100, 0)).find("not an ELF"), std::string::npos);
  FakeVmlinux no_note;
  no_note.note_in_segment = false;
  EXPECT_NE(expect_error(ram, no_note.build()).find("no PVH entry"), std::string::npos);

  // The second segment's bytes claimed to run 16 bytes past the end of the file.
  std::vector<uint8_t> truncated = FakeVmlinux{}.build();
  auto patch64 = [](std::vector<uint8_t>& image, size_t at, uint64_t v) { std::memcpy(image.data() + at, &v, 8); };
  const size_t second = 64 + 56;
  uint64_t offset;
  std::memcpy(&offset, truncated.data() + second + 8, 8);
  patch64(truncated, second + 32, truncated.size() - offset + 16);
  patch64(truncated, second + 40, truncated.size() - offset + 16);
  EXPECT_TRUE(is_pvh_image(truncated));
  EXPECT_NE(expect_error(ram, truncated).find("truncated"), std::string::npos);

  std::vector<uint8_t> more_file_than_memory = FakeVmlinux{}.build();
  patch64(more_file_than_memory, second + 40, 0x80);
  EXPECT_NE(expect_error(ram, more_file_than_memory).find("more file bytes"), std::string::npos);

  FakeVmlinux above_ram;
  above_ram.segments[1].paddr = (64 << 20) - 0x1000;  // its bss runs past the end
  EXPECT_NE(expect_error(ram, above_ram.build()).find("outside guest RAM"), std::string::npos);
  FakeVmlinux below_1mib;
  below_1mib.segments[1].paddr = 0x8000;
  EXPECT_NE(expect_error(ram, below_1mib.build()).find("outside guest RAM above 1 MiB"), std::string::npos);
  FakeVmlinux entry_outside;
  entry_outside.entry = 0x1100000;
  EXPECT_NE(expect_error(ram, entry_outside.build()).find("in no loaded segment"), std::string::npos);

  const std::vector<uint8_t> image = FakeVmlinux{}.build();
  EXPECT_NE(expect_error(ram, image, std::string(2048, 'x')).find("at most 2047"), std::string::npos);
  load_pvh(ram, image, std::string(2047, 'x'), {}, 0xe0000);
  // 64 MiB less the kernel's 18 MiB leaves no room for a 47 MiB initrd.
  EXPECT_NE(expect_error(ram, image, "", std::vector<uint8_t>(47 << 20, 0)).find("does not fit"), std::string::npos);
  EXPECT_NE(expect_error(ram, image, "", std::vector<uint8_t>(65 << 20, 0)).find("does not fit"), std::string::npos);
  load_pvh(ram, image, "", std::vector<uint8_t>(45 << 20, 0), 0xe0000);
}

TEST(PvhBoot, ARefusedImageLeavesRamAlone) {
  GuestRam ram(64 << 20);
  std::fill_n(ram.data(), ram.top(), 0xaa);
  FakeVmlinux above_ram;
  above_ram.segments[1].paddr = (64 << 20) - 0x1000;
  expect_error(ram, above_ram.build());
  expect_error(ram, FakeVmlinux{}.build(), "", std::vector<uint8_t>(63 << 20, 0));
  EXPECT_EQ(ram.read<uint8_t>(0x1000000), 0xaa);
  EXPECT_EQ(ram.read<uint32_t>(0x6000), 0xaaaaaaaau);
}

}  // namespace
}  // namespace topolab
