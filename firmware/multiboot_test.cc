// SPDX-License-Identifier: GPL-2.0-or-later
#include "firmware/multiboot.h"

#include <algorithm>
#include <cstring>

#include <gtest/gtest.h>

#include "firmware/multiboot_test_image.h"

namespace topolab {
namespace {

std::string expect_error(GuestRam& ram, const std::vector<uint8_t>& image) {
  try {
    load_multiboot(ram, image, "img", "", {});
  } catch (const ImageError& e) {
    EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos);
    return e.what();
  }
  ADD_FAILURE() << "image was accepted";
  return "";
}

TEST(Multiboot, LoadsSegmentsAndZeroesBss) {
  GuestRam ram(8 << 20);
  ram.bytes(0x400000, 32)[10] = 0xaa;  // inside the BSS: must be cleared
  auto image = make_elf(0x400000, {0xf4, 0x90, 0x90, 0x90}, 16);
  MultibootBoot boot = load_multiboot(ram, image, "img", "", {});
  EXPECT_EQ(boot.entry, 0x400000u);
  EXPECT_EQ(ram.read<uint32_t>(0x400000), 0x909090f4u);
  EXPECT_EQ(ram.read<uint8_t>(0x400000 + 4 + 15), 0);
  EXPECT_EQ(ram.read<uint8_t>(0x400000 + 10), 0);
  EXPECT_EQ(boot.image_start, 0x400000u);
  EXPECT_EQ(boot.image_end, 0x400014u);
  EXPECT_GT(boot.info_address, boot.image_end);
}

// kvm-unit-tests' realmode.flat: conventional memory below the EBDA is the
// image's; the boot information then goes above 1 MiB.
TEST(Multiboot, LoadsIntoConventionalMemoryBelowTheEbda) {
  GuestRam ram(8 << 20);
  MultibootBoot boot = load_multiboot(ram, make_elf(0x8000, {0xf4, 0x90}), "img", "", {});
  EXPECT_EQ(boot.entry, 0x8000u);
  EXPECT_EQ(ram.read<uint16_t>(0x8000), 0x90f4u);
  EXPECT_GE(boot.info_address, 0x100000u);
}

TEST(Multiboot, InfoBlockAsQemuFillsIt) {
  GuestRam ram(16 << 20);
  std::vector<MultibootModule> mods{{"env.txt NR_CPUS=4", {'h', 'i'}}, {"two", {1, 2, 3}}};
  MultibootBoot boot = load_multiboot(ram, make_elf(0x100000, {0xf4}), "build/x.elf", "cores=8 l3=on", mods);
  uint32_t info = boot.info_address;
  uint32_t flags = ram.read<uint32_t>(info);
  EXPECT_EQ(flags & 0x24f, 0x24fu);  // memory, boot device, cmdline, modules, mmap, loader name
  EXPECT_EQ(ram.read<uint32_t>(info + 4), 640u);
  EXPECT_EQ(ram.read<uint32_t>(info + 8), (16u << 10) - 1024);
  EXPECT_STREQ(reinterpret_cast<const char*>(ram.bytes(ram.read<uint32_t>(info + 16), 1).data()),
               "build/x.elf cores=8 l3=on");
  ASSERT_EQ(ram.read<uint32_t>(info + 20), 2u);
  uint32_t mods_at = ram.read<uint32_t>(info + 24);
  uint32_t start0 = ram.read<uint32_t>(mods_at), end0 = ram.read<uint32_t>(mods_at + 4);
  EXPECT_EQ(start0 % 4096, 0u);
  EXPECT_EQ(end0 - start0, 2u);
  EXPECT_EQ(ram.read<uint8_t>(start0), 'h');
  EXPECT_STREQ(reinterpret_cast<const char*>(ram.bytes(ram.read<uint32_t>(mods_at + 8), 1).data()), "env.txt NR_CPUS=4");
  EXPECT_EQ(ram.read<uint32_t>(mods_at + 20) - ram.read<uint32_t>(mods_at + 16), 3u);
  // Memory map: four 24-byte entries; the last is RAM from 1 MiB to the end.
  uint32_t mmap_len = ram.read<uint32_t>(info + 44), mmap = ram.read<uint32_t>(info + 48);
  ASSERT_EQ(mmap_len, 4u * 24);
  EXPECT_EQ(ram.read<uint32_t>(mmap + 72), 20u);
  EXPECT_EQ(ram.read<uint64_t>(mmap + 76), 0x100000u);
  EXPECT_EQ(ram.read<uint64_t>(mmap + 84), (16u << 20) - 0x100000);
  EXPECT_EQ(ram.read<uint32_t>(mmap + 92), 1u);
  EXPECT_STREQ(reinterpret_cast<const char*>(ram.bytes(ram.read<uint32_t>(info + 64), 1).data()), "topolab");
}

// -m 16G as the pc machine lays it out: mem_upper counts the RAM from
// 1 MiB below 4 GiB, as QEMU's (below_4g_mem_size / 1024 - 1024), and the
// memory map gains the RAM from 4 GiB.
TEST(Multiboot, RamAbove4GiBIsInTheMemoryMapNotInMemUpper) {
  constexpr uint64_t kGiB = uint64_t{1} << 30;
  GuestRam ram(memory_map::pc_ram_regions(16 * kGiB));
  MultibootBoot boot = load_multiboot(ram, make_elf(0x100000, {0xf4}), "x.elf", "", {});
  const uint32_t info = boot.info_address;
  EXPECT_EQ(ram.read<uint32_t>(info + 8), (3u << 20) - 1024);
  const uint32_t mmap_len = ram.read<uint32_t>(info + 44), mmap = ram.read<uint32_t>(info + 48);
  ASSERT_EQ(mmap_len, 5u * 24);
  EXPECT_EQ(ram.read<uint64_t>(mmap + 4 * 24 + 4), 4 * kGiB);
  EXPECT_EQ(ram.read<uint64_t>(mmap + 4 * 24 + 12), 13 * kGiB);
  EXPECT_EQ(ram.read<uint32_t>(mmap + 4 * 24 + 20), 1u);
}

TEST(Multiboot, AoutKludgeLoadsByHeaderAddresses) {
  // Flat binary: header at file offset 0, loaded at 2 MiB, entry 32 bytes in.
  std::vector<uint8_t> f;
  uint32_t flags = 1u << 16;
  put32(f, 0, kMagic);
  put32(f, 4, flags);
  put32(f, 8, -(kMagic + flags));
  put32(f, 12, 0x200000);  // header_addr
  put32(f, 16, 0x200000);  // load_addr
  put32(f, 20, 0);         // load_end_addr: the whole file
  put32(f, 24, 0x200100);  // bss_end_addr
  put32(f, 28, 0x200020);  // entry
  f.resize(0x24, 0);
  f[0x20] = 0xf4;
  GuestRam ram(4 << 20);
  MultibootBoot boot = load_multiboot(ram, f, "flat", "", {});
  EXPECT_EQ(boot.entry, 0x200020u);
  EXPECT_EQ(ram.read<uint8_t>(0x200020), 0xf4);
  EXPECT_EQ(boot.image_end, 0x200100u);
}

TEST(Multiboot, RejectsBrokenImagesWithOneLine) {
  GuestRam ram(4 << 20);
  EXPECT_NE(expect_error(ram, {}).find("empty"), std::string::npos);
  EXPECT_NE(expect_error(ram, std::vector<uint8_t>(9000, 0x90)).find("no Multiboot header"), std::string::npos);

  auto bad_checksum = make_elf(0x100000, {0xf4});
  put32(bad_checksum, 0x88, 0);
  EXPECT_NE(expect_error(ram, bad_checksum).find("no Multiboot header"), std::string::npos);

  auto elf64 = make_elf(0x100000, {0xf4});
  elf64[4] = 2;
  EXPECT_NE(expect_error(ram, elf64).find("64-bit ELF"), std::string::npos);

  auto arm = make_elf(0x100000, {0xf4});
  put16(arm, 18, 40);
  EXPECT_NE(expect_error(ram, arm).find("not i386"), std::string::npos);

  auto cut = make_elf(0x100000, {0xf4});
  put16(cut, 44, 500);  // 500 program headers cannot fit
  EXPECT_NE(expect_error(ram, cut).find("past the end"), std::string::npos);

  auto truncated = make_elf(0x100000, std::vector<uint8_t>(64, 0x90));
  truncated.resize(truncated.size() - 10);
  EXPECT_NE(expect_error(ram, truncated).find("past the end of the file"), std::string::npos);

  EXPECT_NE(expect_error(ram, make_elf(0x7ff000, {0xf4}, 0x10000)).find("outside the 4 MiB"), std::string::npos);
  EXPECT_NE(expect_error(ram, make_elf(0x400, {0xf4})).find("first MiB"), std::string::npos);
  EXPECT_NE(expect_error(ram, make_elf(0x9f000, {0xf4}, 0x1000)).find("from the EBDA"), std::string::npos);
  EXPECT_NE(expect_error(ram, make_elf(0xf0000, {0xf4})).find("first MiB"), std::string::npos);

  auto wild_entry = make_elf(0x100000, {0xf4});
  put32(wild_entry, 24, 0x300000);
  EXPECT_NE(expect_error(ram, wild_entry).find("entry point"), std::string::npos);

  EXPECT_NE(expect_error(ram, make_elf(0x100000, {0xf4}, 0, 1u << 5)).find("requires features"), std::string::npos);

  auto not_elf = make_elf(0x100000, {0xf4});
  not_elf[0] = 'M';
  EXPECT_NE(expect_error(ram, not_elf).find("not an ELF"), std::string::npos);
}

TEST(Multiboot, ModulesThatDoNotFitAreAnError) {
  GuestRam ram(2 << 20);
  std::vector<MultibootModule> mods{{"big", std::vector<uint8_t>(3 << 20, 1)}};
  try {
    load_multiboot(ram, make_elf(0x100000, {0xf4}), "img", "", mods);
    FAIL();
  } catch (const ImageError& e) {
    EXPECT_NE(std::string(e.what()).find("do not fit"), std::string::npos);
  }
}

TEST(ReadImage, NamesTheFileAndTheReason) {
  try {
    read_image_file("/nonexistent/image.elf", 1 << 20);
    FAIL();
  } catch (const ImageError& e) {
    EXPECT_STREQ(e.what(), "cannot read /nonexistent/image.elf: No such file or directory");
  }
  EXPECT_THROW(read_image_file("/tmp", 1 << 20), ImageError);
  EXPECT_THROW(read_image_file("/dev/zero", 1 << 20), ImageError);  // not a regular file
  try {
    read_image_file("/proc/self/exe", 1024);
    FAIL();
  } catch (const ImageError& e) {
    EXPECT_NE(std::string(e.what()).find("do not fit"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace topolab
