// SPDX-License-Identifier: GPL-2.0-or-later
#include "firmware/linux_boot.h"

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
    load_linux(ram, image, cmdline, initrd);
  } catch (const ImageError& e) {
    EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos);
    return e.what();
  }
  ADD_FAILURE() << "the kernel was accepted";
  return "";
}

TEST(LinuxBoot, RecognisesTheSetupHeaderMagic) {
  EXPECT_TRUE(is_linux_image(FakeKernel{}.build()));
  std::vector<uint8_t> elf = {0x7f, 'E', 'L', 'F'};
  EXPECT_FALSE(is_linux_image(elf));
  EXPECT_FALSE(is_linux_image(std::vector<uint8_t>(0x100, 0)));
}

TEST(LinuxBoot, LoadsKernelCommandLineAndBootParams) {
  GuestRam ram(64 << 20);
  FakeKernel k;
  k.payload[0] = 0xfc;  // cld, startup_32's first instruction
  std::vector<uint8_t> image = k.build();
  LinuxBoot boot = load_linux(ram, image, "console=ttyS0 quiet", {});
  EXPECT_EQ(boot.entry, 0x100000u);
  EXPECT_EQ(boot.protocol, 0x20f);
  EXPECT_EQ(ram.read<uint8_t>(0x100000), 0xfc);
  EXPECT_EQ(boot.kernel_end, 0x100000u + 4096);
  const uint64_t bp = boot.boot_params;
  EXPECT_EQ(ram.read<uint32_t>(bp + 0x202), 0x53726448u);  // the header is the kernel's own...
  EXPECT_EQ(ram.read<uint8_t>(bp + 0x1ef), 0);             // ...and nothing before it
  EXPECT_EQ(ram.read<uint8_t>(bp + 0x210), 0xff);          // type_of_loader: undefined
  EXPECT_EQ(ram.read<uint32_t>(bp + 0x228), boot.cmdline);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(ram.bytes(boot.cmdline, 20).data())), "console=ttyS0 quiet");
  EXPECT_EQ(ram.read<uint32_t>(bp + 0x218), 0u);  // no initrd
  EXPECT_EQ(ram.read<uint32_t>(bp + 0x21c), 0u);
  // The GDT has flat code at 0x10 and flat data at 0x18.
  EXPECT_EQ(boot.gdt_limit, 31);
  EXPECT_EQ(ram.read<uint64_t>(boot.gdt + 0x10), 0x00CF'9A00'0000'FFFFu);
  EXPECT_EQ(ram.read<uint64_t>(boot.gdt + 0x18), 0x00CF'9200'0000'FFFFu);
}

TEST(LinuxBoot, E820MapMatchesTheMachine) {
  GuestRam ram(64 << 20);
  LinuxBoot boot = load_linux(ram, FakeKernel{}.build(), "", {});
  const uint64_t bp = boot.boot_params;
  ASSERT_EQ(ram.read<uint8_t>(bp + 0x1e8), 4);
  struct Entry {
    uint64_t base, length;
    uint32_t type;
  };
  const Entry want[] = {{0, 0x9fc00, 1}, {0x9fc00, 0x400, 2}, {0xe0000, 0x20000, 2}, {0x100000, (64 << 20) - 0x100000, 1}};
  for (int i = 0; i < 4; ++i) {
    const uint64_t at = bp + 0x2d0 + 20 * i;
    EXPECT_EQ(ram.read<uint64_t>(at), want[i].base) << i;
    EXPECT_EQ(ram.read<uint64_t>(at + 8), want[i].length) << i;
    EXPECT_EQ(ram.read<uint32_t>(at + 16), want[i].type) << i;
  }
}

// A jump at 0x200 that claims a header to 0x301 (its largest): boot_params
// holds the header only to 0x290, where edd_mbr_sig_buffer begins, so the
// rest is setup code, not copied; the e820 map at 0x2D0 is the loader's
// (found by linux_boot_fuzzer: the map had been written over the copy).
TEST(LinuxBoot, ASetupHeaderPastBootParamsRoomForItIsCutAt0x290) {
  GuestRam ram(64 << 20);
  FakeKernel k;
  std::vector<uint8_t> image = k.build();
  image[0x201] = 0xff;
  for (size_t i = 0x270; i < 0x301; ++i) image[i] = 0xcc;
  const LinuxBoot boot = load_linux(ram, image, "", {});
  const uint64_t bp = boot.boot_params;
  EXPECT_EQ(ram.read<uint8_t>(bp + 0x28f), 0xcc) << "the header's room is copied to its end";
  for (uint64_t i = 0x290; i < 0x2d0; ++i) ASSERT_EQ(ram.read<uint8_t>(bp + i), 0) << std::hex << i;
  EXPECT_EQ(ram.read<uint8_t>(bp + 0x1e8), 4);
  EXPECT_EQ(ram.read<uint64_t>(bp + 0x2d0 + 8), 0x9fc00u) << "the first e820 entry's length";
}

// -m 16G as the pc machine lays it out: the e820 map gains the RAM from
// 4 GiB, and the initrd goes to the top of the RAM below the gap, not of all
// RAM, even when the kernel would take it anywhere below 4 GiB.
TEST(LinuxBoot, RamAbove4GiBIsInTheE820MapAndTheInitrdStaysBelowTheGap) {
  constexpr uint64_t kGiB = uint64_t{1} << 30;
  GuestRam ram(memory_map::pc_ram_regions(16 * kGiB));
  FakeKernel k;
  k.initrd_addr_max = 0xffffffff;
  LinuxBoot boot = load_linux(ram, k.build(), "", std::vector<uint8_t>(10000, 0x5a));
  const uint64_t bp = boot.boot_params;
  ASSERT_EQ(ram.read<uint8_t>(bp + 0x1e8), 5);
  EXPECT_EQ(ram.read<uint64_t>(bp + 0x2d0 + 20 * 3), 0x100000u);
  EXPECT_EQ(ram.read<uint64_t>(bp + 0x2d0 + 20 * 3 + 8), 3 * kGiB - 0x100000);
  EXPECT_EQ(ram.read<uint64_t>(bp + 0x2d0 + 20 * 4), 4 * kGiB);
  EXPECT_EQ(ram.read<uint64_t>(bp + 0x2d0 + 20 * 4 + 8), 13 * kGiB);
  EXPECT_EQ(ram.read<uint32_t>(bp + 0x2d0 + 20 * 4 + 16), 1u);
  EXPECT_EQ(boot.initrd_start, (3 * kGiB - 10000) / 4096 * 4096);
}

TEST(LinuxBoot, InitrdGoesPageAlignedToTheTopOfRam) {
  GuestRam ram(64 << 20);
  std::vector<uint8_t> initrd(10000, 0x5a);
  LinuxBoot boot = load_linux(ram, FakeKernel{}.build(), "", initrd);
  EXPECT_EQ(boot.initrd_start % 4096, 0u);
  EXPECT_EQ(boot.initrd_start, ((64u << 20) - 10000) / 4096 * 4096);
  EXPECT_EQ(ram.read<uint32_t>(boot.boot_params + 0x218), boot.initrd_start);
  EXPECT_EQ(ram.read<uint32_t>(boot.boot_params + 0x21c), 10000u);
  EXPECT_EQ(ram.read<uint8_t>(boot.initrd_start + 9999), 0x5a);
}

TEST(LinuxBoot, InitrdStaysBelowInitrdAddrMax) {
  GuestRam ram(64 << 20);
  FakeKernel k;
  k.initrd_addr_max = (32 << 20) - 1;
  LinuxBoot boot = load_linux(ram, k.build(), "", std::vector<uint8_t>(4096, 1));
  EXPECT_EQ(boot.initrd_start, (32u << 20) - 4096);
}

TEST(LinuxBoot, RefusesBadImagesInOneLine) {
  GuestRam ram(64 << 20);
  std::vector<uint8_t> image = FakeKernel{}.build();
  std::vector<uint8_t> truncated(image.begin(), image.end() - 100);
  EXPECT_NE(expect_error(ram, truncated).find("truncated"), std::string::npos);
  std::vector<uint8_t> header_only(image.begin(), image.begin() + 0x210);
  EXPECT_NE(expect_error(ram, header_only).find("truncated"), std::string::npos);

  FakeKernel old;
  old.protocol = 0x204;
  EXPECT_NE(expect_error(ram, old.build()).find("boot protocol 2.04"), std::string::npos);
  FakeKernel zimage;
  zimage.loadflags = 0;
  EXPECT_NE(expect_error(ram, zimage.build()).find("zImage"), std::string::npos);
}

TEST(LinuxBoot, RefusesACommandLineOverTheKernelsLimit) {
  GuestRam ram(64 << 20);
  FakeKernel k;
  k.cmdline_size = 16;
  EXPECT_NO_THROW(load_linux(ram, k.build(), std::string(16, 'x'), {}));
  EXPECT_EQ(expect_error(ram, k.build(), std::string(17, 'x')),
            "the kernel command line is 17 bytes; this kernel takes at most 16");
}

// A header may allow any length (cmdline_size is 32 bits); the line still
// has to fit in the RAM between 0x20000 and the EBDA at 0x9FC00, the end of
// the e820 map's first RAM region: past it lie the EBDA, the VGA window,
// the BIOS and then the kernel at 1 MiB (fuzz/linux_boot_fuzzer.cc found
// both: F7 the kernel, F16 the EBDA).
TEST(LinuxBoot, RefusesACommandLineThatWouldReachTheEbda) {
  GuestRam ram(64 << 20);
  FakeKernel k;
  k.cmdline_size = 0xffffffff;
  EXPECT_NO_THROW(load_linux(ram, k.build(), std::string(0x7fbff, 'x'), {}));
  GuestRam fresh(64 << 20);
  EXPECT_EQ(expect_error(fresh, k.build(), std::string(0x7fc00, 'x')),
            "the kernel command line is 523264 bytes; topolab has room for 523263 below the EBDA at 0x9fc00");
  EXPECT_EQ(expect_error(fresh, k.build(), std::string(0xe0000, 'x')),
            "the kernel command line is 917504 bytes; topolab has room for 523263 below the EBDA at 0x9fc00");
  for (uint64_t at = 0; at < fresh.top(); at += 4096) ASSERT_EQ(fresh.read<uint64_t>(at), 0u) << "RAM written at " << at;
}

TEST(LinuxBoot, RefusesKernelsAndInitrdsThatDoNotFit) {
  GuestRam small(16 << 20);
  EXPECT_NE(expect_error(small, FakeKernel{}.build()).find("too small for this Linux kernel"), std::string::npos);
  GuestRam ram(64 << 20);
  // The kernel decompresses into [16 MiB, 24 MiB): 40 MiB would overlap it.
  EXPECT_NE(expect_error(ram, FakeKernel{}.build(), "", std::vector<uint8_t>(41 << 20, 0)).find("does not fit"),
            std::string::npos);
  EXPECT_NO_THROW(load_linux(ram, FakeKernel{}.build(), "", std::vector<uint8_t>(39 << 20, 0)));
}

}  // namespace
}  // namespace topolab
