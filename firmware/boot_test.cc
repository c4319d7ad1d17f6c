// SPDX-License-Identifier: GPL-2.0-or-later
#include "firmware/boot.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "firmware/fake_kernels.h"
#include "firmware/linux_boot.h"
#include "firmware/pvh_boot.h"
#include "firmware/multiboot_test_image.h"

namespace topolab {
namespace {

// Files in a directory of their own, gone with the fixture.
class BootFilesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("topolab_boot_test_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string write(const std::string& name, const std::vector<uint8_t>& bytes) {
    const std::filesystem::path path = dir_ / name;
    std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()),
                                                 static_cast<std::streamsize>(bytes.size()));
    return path.string();
  }
  std::filesystem::path dir_;
};

TEST_F(BootFilesTest, AMultibootImageTakesEachInitrdAsAModuleWithItsArguments) {
  const std::string image = write("guest.elf", make_elf(0x100000, {0xf4}));
  const std::string module = write("mod.bin", {1, 2, 3});
  const BootFiles files = read_boot_files(image, "guest.elf", "x=1", {module + " a b", module}, 1 << 20);
  EXPECT_EQ(files.protocol, BootProtocol::Multiboot);
  EXPECT_FALSE(files.is_linux_kernel());
  ASSERT_EQ(files.initrd.size(), 2u);
  EXPECT_EQ(files.initrd[0].cmdline, module + " a b");
  EXPECT_EQ(files.initrd[0].bytes, (std::vector<uint8_t>{1, 2, 3}));
  EXPECT_EQ(files.initrd[1].cmdline, module);
}

TEST_F(BootFilesTest, ABzImageAndAPvhKernelAreLinuxKernelsWithOneInitrd) {
  const std::string bzimage = write("bzImage", FakeKernel{}.build());
  const std::string vmlinux = write("vmlinux", FakeVmlinux{}.build());
  const std::string initrd = write("initrd", {9, 9});
  EXPECT_EQ(read_boot_files(bzimage, "", "", {}, 64 << 20).protocol, BootProtocol::Linux);
  const BootFiles pvh = read_boot_files(vmlinux, "", "", {initrd}, 64 << 20);
  EXPECT_EQ(pvh.protocol, BootProtocol::Pvh);
  EXPECT_TRUE(pvh.is_linux_kernel());
  ASSERT_EQ(pvh.initrd.size(), 1u);
  EXPECT_EQ(pvh.initrd[0].bytes, (std::vector<uint8_t>{9, 9}));
  try {
    read_boot_files(bzimage, "", "", {initrd, initrd}, 64 << 20);
    FAIL() << "two initrds were taken";
  } catch (const ImageError& e) {
    EXPECT_STREQ(e.what(), "a Linux kernel takes one -initrd file");
  }
}

TEST(BootImage, EachProtocolEntersWithItsBootDataAddress) {
  GuestRam ram(64 << 20);
  BootFiles multiboot;
  multiboot.image = make_elf(0x200000, {0xf4});
  multiboot.image_name = "guest.elf";
  const BootEntry mb = load_boot_image(ram, multiboot, 0xe0000);
  EXPECT_EQ(mb.protocol, BootProtocol::Multiboot);
  EXPECT_EQ(mb.entry, 0x200000u);
  const uint32_t cmdline = ram.read<uint32_t>(mb.boot_data + 16);  // multiboot_info.cmdline
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(ram.bytes(cmdline, 10).data())), "guest.elf");

  BootFiles vmlinux;
  vmlinux.protocol = BootProtocol::Pvh;
  vmlinux.image = FakeVmlinux{}.build();
  const BootEntry pvh = load_boot_image(ram, vmlinux, 0xe0000);
  EXPECT_EQ(pvh.entry, 0x1000850u);
  EXPECT_EQ(ram.read<uint32_t>(pvh.boot_data), PvhBoot::kStartInfoMagic);
  EXPECT_EQ(ram.read<uint64_t>(pvh.boot_data + 32), 0xe0000u);  // rsdp_paddr

  BootFiles bzimage;
  bzimage.protocol = BootProtocol::Linux;
  bzimage.image = FakeKernel{}.build();
  const BootEntry bz = load_boot_image(ram, bzimage, 0);
  EXPECT_EQ(bz.entry, 0x100000u);
  EXPECT_EQ(ram.read<uint32_t>(bz.boot_data + 0x202), 0x53726448u);  // boot_params holds the setup header
  EXPECT_EQ(ram.read<uint64_t>(bz.gdt + 8 * LinuxBoot::kBootCodeSelector / 8), 0x00CF'9A00'0000'FFFFu);
  EXPECT_EQ(bz.gdt_limit, 31);
}

}  // namespace
}  // namespace topolab
