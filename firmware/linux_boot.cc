// SPDX-License-Identifier: GPL-2.0-or-later
#include "firmware/linux_boot.h"

#include <algorithm>
#include <array>
#include <cstring>

#include <fmt/format.h>

#include "base/bytes.h"
#include "base/memory_map.h"

namespace topolab {

namespace {

// Offsets in the bzImage's first sector, which are also their offsets in
// boot_params: the setup header is copied there whole (boot.rst, "The
// real-mode kernel header" and "Details of header fields").
enum : uint32_t {
  kSetupSects = 0x1f1,
  kSyssize = 0x1f4,
  kBootFlag = 0x1fe,
  kJump = 0x200,  // its second byte is the header's length past 0x202
  kHeaderMagic = 0x202,
  kVersion = 0x206,
  kTypeOfLoader = 0x210,
  kLoadflags = 0x211,
  kCode32Start = 0x214,
  kRamdiskImage = 0x218,
  kRamdiskSize = 0x21c,
  kCmdLinePtr = 0x228,
  kInitrdAddrMax = 0x22c,
  kCmdlineSize = 0x238,
  kPrefAddress = 0x258,
  kInitSize = 0x260,
};
// boot_params fields outside the setup header (arch/x86/include/uapi/asm/bootparam.h).
constexpr uint32_t kE820Entries = 0x1e8;
// Where boot_params' room for the setup header ends (its _pad7) and
// edd_mbr_sig_buffer begins. A jump at 0x200 that lands past it makes
// the header longer than any boot_params holds: the bytes beyond are the
// image's setup code, not header fields, and are not copied.
constexpr uint32_t kSetupHeaderAreaEnd = 0x290;
constexpr uint32_t kE820Table = 0x2d0;
constexpr unsigned kE820MaxEntries = 128;
constexpr uint32_t kBootParamsSize = 4096;

constexpr uint32_t kMagicHdrS = 0x53726448;  // "HdrS"
constexpr uint16_t kBootFlagValue = 0xaa55;
constexpr uint16_t kMinProtocol = 0x206;      // the first with cmdline_size
constexpr uint8_t kLoadedHigh = 0x01;         // loadflags: a bzImage, loaded at 1 MiB
constexpr uint8_t kLoaderUndefined = 0xff;    // type_of_loader: no assigned ID
constexpr uint32_t kOldInitrdAddrMax = 0x37ffffff;  // before protocol 2.03
// The kernel's own floor for where it decompresses (LOAD_PHYSICAL_ADDR of
// every x86-64 defconfig, Debian's included): a relocatable kernel loaded
// lower moves itself up to it first.
constexpr uint64_t kMinDecompressAddress = 16u << 20;

// Where the loader puts its parts, as QEMU's x86_load_linux does for a
// protocol 2.02+ kernel: boot_params where the setup code would go, the
// command line above it, the protected-mode kernel at 1 MiB.
constexpr uint32_t kBootParamsAddress = 0x10000;
constexpr uint32_t kGdtAddress = kBootParamsAddress + kBootParamsSize;
constexpr uint32_t kCmdlineAddress = 0x20000;
constexpr uint32_t kKernelAddress = memory_map::kFirstMiB;
constexpr uint32_t kPage = 4096;

// Flat 4 GiB segments, base 0, G = 1, DPL 0 (SDM Vol. 3A 3.4.5), at the
// indexes of __BOOT_CS and __BOOT_DS.
constexpr std::array<uint64_t, 4> kBootGdt = {0, 0, 0x00CF'9A00'0000'FFFF, 0x00CF'9200'0000'FFFF};

std::string mib(uint64_t bytes) { return fmt::format("{:.1f} MiB", static_cast<double>(bytes) / (1 << 20)); }

// boot_params: zero but for the setup header, which is the kernel's own
// (`header` ends where it does, or at the end of boot_params' room for it)
// with the loader's fields filled in, and the e820 map (`regions`, at most
// kE820MaxEntries).
void write_boot_params(GuestRam& ram, std::span<const uint8_t> header, uint64_t initrd_start, size_t initrd_size,
                       const std::vector<memory_map::E820Region>& regions) {
  std::span<uint8_t> params = ram.bytes(kBootParamsAddress, kBootParamsSize);
  std::fill(params.begin(), params.end(), 0);
  const size_t header_end = std::min<size_t>(header.size(), kSetupHeaderAreaEnd);
  std::memcpy(params.data() + kSetupSects, header.data() + kSetupSects, header_end - kSetupSects);
  ram.write<uint8_t>(kBootParamsAddress + kTypeOfLoader, kLoaderUndefined);
  ram.write<uint32_t>(kBootParamsAddress + kCode32Start, kKernelAddress);
  ram.write<uint32_t>(kBootParamsAddress + kCmdLinePtr, kCmdlineAddress);
  ram.write<uint32_t>(kBootParamsAddress + kRamdiskImage, static_cast<uint32_t>(initrd_start));
  ram.write<uint32_t>(kBootParamsAddress + kRamdiskSize, static_cast<uint32_t>(initrd_size));
  ram.write<uint8_t>(kBootParamsAddress + kE820Entries, static_cast<uint8_t>(regions.size()));
  for (size_t i = 0; i < regions.size(); ++i) {
    const uint64_t at = kBootParamsAddress + kE820Table + 20 * i;  // struct boot_e820_entry, packed
    ram.write<uint64_t>(at, regions[i].base);
    ram.write<uint64_t>(at + 8, regions[i].length);
    ram.write<uint32_t>(at + 16, regions[i].type);
  }
}

}  // namespace

bool is_linux_image(std::span<const uint8_t> image) {
  return image.size() >= kHeaderMagic + 4 && load_le<uint32_t>(image, kHeaderMagic) == kMagicHdrS;
}

LinuxBoot load_linux(GuestRam& ram, std::span<const uint8_t> image, const std::string& cmdline,
                     std::span<const uint8_t> initrd) {
  if (!is_linux_image(image)) throw ImageError("not a Linux kernel: no \"HdrS\" setup header at offset 0x202");
  // Checked before anything is written: a refusal leaves RAM as it was.
  const auto regions = memory_map::e820_regions(ram.regions());
  if (regions.size() > kE820MaxEntries)
    throw ImageError(fmt::format("guest RAM has {} e820 entries; boot_params holds {}", regions.size(), kE820MaxEntries));
  const size_t header_end = kHeaderMagic + image[kJump + 1];
  if (image.size() < std::max<size_t>(header_end, kInitSize + 4))
    throw ImageError(fmt::format("the Linux kernel is truncated: {} bytes end inside its setup header", image.size()));
  const uint16_t protocol = load_le<uint16_t>(image, kVersion);
  if (protocol < kMinProtocol)
    throw ImageError(fmt::format("the Linux kernel speaks boot protocol {}.{:02}; topolab loads {}.{:02} and later",
                                 protocol >> 8, protocol & 0xff, kMinProtocol >> 8, kMinProtocol & 0xff));
  if (load_le<uint16_t>(image, kBootFlag) != kBootFlagValue)
    throw ImageError("the Linux kernel's setup header has no 0xAA55 boot flag");
  if (!(image[kLoadflags] & kLoadedHigh))
    throw ImageError("the Linux kernel is a zImage (loaded below 1 MiB); topolab loads bzImages");

  const uint32_t setup_sects = image[kSetupSects] ? image[kSetupSects] : 4;  // 0 means 4
  const uint64_t setup_bytes = (uint64_t{setup_sects} + 1) * 512;
  const uint64_t kernel_bytes = uint64_t{load_le<uint32_t>(image, kSyssize)} * 16;
  if (image.size() < setup_bytes + kernel_bytes)
    throw ImageError(fmt::format("the Linux kernel is truncated: its header says {} bytes, the file has {}",
                                 setup_bytes + kernel_bytes, image.size()));

  // The decompressor works in [max(1 MiB, pref_address, 16 MiB), +init_size).
  const uint64_t init_size = load_le<uint32_t>(image, kInitSize);
  const uint64_t work_start =
      std::max({uint64_t{kKernelAddress}, load_le<uint64_t>(image, kPrefAddress), kMinDecompressAddress});
  const uint64_t kernel_end = std::max(kKernelAddress + kernel_bytes, work_start + init_size);
  // The kernel, its boot data and the initrd stay in the RAM from 0 up (all
  // of it below 4 GiB, or the part below the gap): the protocol's 32-bit
  // fields address them, and the initrd must stay under initrd_addr_max.
  const uint64_t low_ram_end = ram.regions().front().end();
  if (kernel_end > low_ram_end)
    throw ImageError(fmt::format("guest RAM ({}) is too small for this Linux kernel, which needs {} to decompress",
                                 mib(low_ram_end), mib(kernel_end)));

  const uint32_t cmdline_max = load_le<uint32_t>(image, kCmdlineSize);
  if (cmdline.size() > cmdline_max)
    throw ImageError(fmt::format("the kernel command line is {} bytes; this kernel takes at most {}", cmdline.size(),
                                 cmdline_max));
  // The header's cmdline_size can be anything; the line and its NUL must
  // still end in the RAM below the EBDA, the first RAM region of the e820
  // map: past it lie the EBDA, the VGA window and the BIOS, and then the
  // kernel at 1 MiB, which the copy would overwrite.
  if (cmdline.size() >= memory_map::kEbdaBase - kCmdlineAddress)
    throw ImageError(fmt::format("the kernel command line is {} bytes; topolab has room for {} below the EBDA at {:#x}",
                                 cmdline.size(), memory_map::kEbdaBase - kCmdlineAddress - 1, memory_map::kEbdaBase));

  // The initrd goes as high as the kernel allows, page-aligned, as QEMU puts it.
  const uint64_t initrd_limit =
      std::min<uint64_t>(low_ram_end, uint64_t{protocol >= 0x203 ? load_le<uint32_t>(image, kInitrdAddrMax)
                                                                : kOldInitrdAddrMax} + 1);
  uint64_t initrd_start = 0;
  if (!initrd.empty()) {
    if (initrd.size() > initrd_limit || (initrd_limit - initrd.size()) / kPage * kPage < kernel_end)
      throw ImageError(fmt::format("the initrd ({}) does not fit in guest RAM ({}) above the kernel ({})",
                                   mib(initrd.size()), mib(low_ram_end), mib(kernel_end)));
    initrd_start = (initrd_limit - initrd.size()) / kPage * kPage;
    std::memcpy(ram.bytes(initrd_start, initrd.size()).data(), initrd.data(), initrd.size());
  }

  std::memcpy(ram.bytes(kKernelAddress, kernel_bytes).data(), image.data() + setup_bytes, kernel_bytes);
  std::span<uint8_t> cmd = ram.bytes(kCmdlineAddress, cmdline.size() + 1);
  std::memcpy(cmd.data(), cmdline.c_str(), cmdline.size() + 1);
  std::span<uint8_t> gdt = ram.bytes(kGdtAddress, sizeof kBootGdt);
  std::memcpy(gdt.data(), kBootGdt.data(), sizeof kBootGdt);

  write_boot_params(ram, image.first(header_end), initrd_start, initrd.size(), regions);

  LinuxBoot boot;
  boot.entry = kKernelAddress;
  boot.boot_params = kBootParamsAddress;
  boot.gdt = kGdtAddress;
  boot.gdt_limit = sizeof kBootGdt - 1;
  boot.protocol = protocol;
  boot.kernel_start = kKernelAddress;
  boot.kernel_end = static_cast<uint32_t>(kKernelAddress + kernel_bytes);
  boot.initrd_start = static_cast<uint32_t>(initrd_start);
  boot.initrd_size = static_cast<uint32_t>(initrd.size());
  boot.cmdline = kCmdlineAddress;
  return boot;
}

}  // namespace topolab
