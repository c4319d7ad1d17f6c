// SPDX-License-Identifier: GPL-2.0-or-later
#include "firmware/pvh_boot.h"

#include <algorithm>
#include <cstring>
#include <optional>
#include <string_view>

#include <fmt/format.h>

#include "base/bytes.h"
#include "base/memory_map.h"
#include "firmware/elf.h"

namespace topolab {

namespace {

// The note the kernel's ELFNOTE(Xen, XEN_ELFNOTE_PHYS32_ENTRY, ...) makes
// (xen/include/public/elfnote.h); its descriptor is the entry's physical
// address, 4 or 8 bytes (Linux's _ASM_PTR: 8 on x86-64).
constexpr std::string_view kXenNoteName = "Xen";
constexpr uint32_t kXenElfnotePhys32Entry = 18;

// struct hvm_start_info, hvm_modlist_entry and hvm_memmap_table_entry
// (xen/include/public/arch-x86/hvm/start_info.h), version 1.
enum : uint32_t {
  kInfoMagic = 0,
  kInfoVersion = 4,
  kInfoFlags = 8,
  kInfoNrModules = 12,
  kInfoModlistPaddr = 16,
  kInfoCmdlinePaddr = 24,
  kInfoRsdpPaddr = 32,
  kInfoMemmapPaddr = 40,
  kInfoMemmapEntries = 48,
  kInfoSize = 56,
};
constexpr uint32_t kStartInfoVersion = 1;  // the first with the memory map
constexpr uint32_t kModlistEntrySize = 32;  // paddr, size, cmdline_paddr, reserved
constexpr uint32_t kMemmapEntrySize = 24;   // addr, size, type, reserved

// Where the boot data go, as Firecracker puts them (PVH_INFO_START,
// MODLIST_START, MEMMAP_START): low conventional memory, which Linux keeps
// reserved, inside the 1 GiB its PVH entry maps before it reads them. The
// command line where firmware/linux_boot.cc puts it.
constexpr uint32_t kStartInfoAddress = 0x6000;
constexpr uint32_t kModlistAddress = 0x6040;
constexpr uint32_t kMemmapAddress = 0x7000;
constexpr uint32_t kCmdlineAddress = 0x20000;
static_assert(kStartInfoAddress + kInfoSize <= kModlistAddress);
static_assert(kModlistAddress + kModlistEntrySize <= kMemmapAddress);
// The memory map's room, up to the command line.
constexpr uint32_t kMemmapEntries = (kCmdlineAddress - kMemmapAddress) / kMemmapEntrySize;

// Linux's COMMAND_LINE_SIZE on x86, the terminating NUL included: what
// its PVH entry copies of the command line.
constexpr uint32_t kCommandLineSize = 2048;
constexpr uint64_t kPage = 4096;
constexpr uint64_t kFirstMiB = memory_map::kFirstMiB;

std::string mib(uint64_t bytes) { return fmt::format("{:.1f} MiB", static_cast<double>(bytes) / (1 << 20)); }

// What keeps `image` from being an ELF64 for x86-64 whose program header
// table is in the file, or "" if nothing.
std::string elf64_problem(std::span<const uint8_t> image) {
  const std::optional<elf::Class> elf_class = elf::identify(image);
  if (!elf_class) return "not an ELF image";
  if (*elf_class != elf::Class::Elf64) return "a 32-bit ELF: PVH loads ELF64 kernels";
  return elf::problem(image, elf::Class::Elf64);
}

// The PVH entry of an image elf64_problem accepted: the first
// PHYS32_ENTRY note, in the PT_NOTE segments or else the SHT_NOTE sections
// (a kernel may carry either). A descriptor of another size than 4 or 8
// bytes is no entry.
std::optional<uint64_t> find_pvh_entry(std::span<const uint8_t> image, const elf::File& file) {
  const auto desc = elf::find_note(image, file, kXenNoteName, kXenElfnotePhys32Entry);
  if (!desc) return std::nullopt;
  if (desc->size() == 4) return load_le<uint32_t>(*desc, 0);
  if (desc->size() == 8) return load_le<uint64_t>(*desc, 0);
  return std::nullopt;
}

// start_info (Xen's hvm_start_info, version 1) with its module list and
// memory map. Module 0 is the initrd (Linux's init_pvh_bootparams takes it
// as the ramdisk), without a command line.
void write_start_info(GuestRam& ram, uint64_t initrd_start, size_t initrd_size, uint32_t rsdp) {
  std::span<uint8_t> modlist = ram.bytes(kModlistAddress, kModlistEntrySize);
  std::fill(modlist.begin(), modlist.end(), 0);
  ram.write<uint64_t>(kModlistAddress, initrd_start);
  ram.write<uint64_t>(kModlistAddress + 8, initrd_size);
  const auto regions = memory_map::e820_regions(ram.regions());
  if (regions.size() > kMemmapEntries)
    throw ImageError(fmt::format("guest RAM has {} memory map entries; topolab's start_info holds {}", regions.size(),
                                 kMemmapEntries));
  for (size_t i = 0; i < regions.size(); ++i) {
    const uint64_t at = kMemmapAddress + kMemmapEntrySize * i;
    ram.write<uint64_t>(at, regions[i].base);
    ram.write<uint64_t>(at + 8, regions[i].length);
    ram.write<uint32_t>(at + 16, regions[i].type);
    ram.write<uint32_t>(at + 20, 0);
  }
  std::span<uint8_t> info = ram.bytes(kStartInfoAddress, kInfoSize);
  std::fill(info.begin(), info.end(), 0);
  ram.write<uint32_t>(kStartInfoAddress + kInfoMagic, PvhBoot::kStartInfoMagic);
  ram.write<uint32_t>(kStartInfoAddress + kInfoVersion, kStartInfoVersion);
  ram.write<uint32_t>(kStartInfoAddress + kInfoNrModules, initrd_size == 0 ? 0 : 1);
  ram.write<uint64_t>(kStartInfoAddress + kInfoModlistPaddr, initrd_size == 0 ? 0 : kModlistAddress);
  ram.write<uint64_t>(kStartInfoAddress + kInfoCmdlinePaddr, kCmdlineAddress);
  ram.write<uint64_t>(kStartInfoAddress + kInfoRsdpPaddr, rsdp);
  ram.write<uint64_t>(kStartInfoAddress + kInfoMemmapPaddr, kMemmapAddress);
  ram.write<uint32_t>(kStartInfoAddress + kInfoMemmapEntries, static_cast<uint32_t>(regions.size()));
}

}  // namespace

bool is_pvh_image(std::span<const uint8_t> image) {
  return elf64_problem(image).empty() && find_pvh_entry(image, elf::read(image, elf::Class::Elf64)).has_value();
}

PvhBoot load_pvh(GuestRam& ram, std::span<const uint8_t> image, const std::string& cmdline,
                 std::span<const uint8_t> initrd, uint32_t rsdp) {
  if (const std::string problem = elf64_problem(image); !problem.empty()) throw ImageError(problem);
  const elf::File file = elf::read(image, elf::Class::Elf64);
  const std::optional<uint64_t> entry = find_pvh_entry(image, file);
  if (!entry)
    throw ImageError("the ELF64 has no PVH entry (a \"Xen\" note of type 18, XEN_ELFNOTE_PHYS32_ENTRY; "
                     "Linux needs CONFIG_PVH)");
  if (cmdline.size() >= kCommandLineSize)
    throw ImageError(fmt::format("the kernel command line is {} bytes; Linux takes at most {}", cmdline.size(),
                                 kCommandLineSize - 1));

  // Every check before the first byte is written: a refused image leaves RAM as it was.
  uint64_t kernel_start = UINT64_MAX, kernel_end = 0;
  bool entry_is_loaded = false;
  for (size_t i = 0; i < file.segments.size(); ++i) {
    const elf::Segment& segment = file.segments[i];
    if (segment.type != elf::kPtLoad) continue;
    if (segment.filesz > segment.memsz)
      throw ImageError(fmt::format("ELF segment {} has more file bytes ({}) than memory ({})", i, segment.filesz,
                                   segment.memsz));
    if (!elf::in_file(image, segment.offset, segment.filesz))
      throw ImageError(fmt::format("the ELF is truncated: segment {} [{:#x}+{:#x}] runs past the end of the "
                                   "{}-byte file", i, segment.offset, segment.filesz, image.size()));
    if (segment.memsz == 0) continue;
    if (segment.paddr < kFirstMiB || !ram.is_ram(segment.paddr, segment.memsz))
      throw ImageError(fmt::format("ELF segment {} [{:#x}, {:#x}) lies outside guest RAM above 1 MiB ({}, see -m)", i,
                                   segment.paddr, segment.paddr + segment.memsz, mib(ram.total_bytes())));
    kernel_start = std::min(kernel_start, segment.paddr);
    kernel_end = std::max(kernel_end, segment.paddr + segment.memsz);
    if (segment.contains(*entry)) entry_is_loaded = true;
  }
  if (kernel_end == 0) throw ImageError("the ELF has no loadable segment");
  if (!entry_is_loaded) throw ImageError(fmt::format("the PVH entry point {:#x} is in no loaded segment", *entry));

  // The initrd goes at the top of the RAM from 0 up (below 4 GiB: the
  // module list's Linux reads with a 32-bit entry point), page-aligned, as
  // firmware/linux_boot.cc puts it and QEMU's PVH boot does (below_4g_mem_size).
  const uint64_t low_ram_end = ram.regions().front().end();
  uint64_t initrd_start = 0;
  if (!initrd.empty()) {
    if (initrd.size() > low_ram_end || (low_ram_end - initrd.size()) / kPage * kPage < kernel_end)
      throw ImageError(fmt::format("the initrd ({}) does not fit in guest RAM ({}) above the kernel ({})",
                                   mib(initrd.size()), mib(low_ram_end), mib(kernel_end)));
    initrd_start = (low_ram_end - initrd.size()) / kPage * kPage;
  }

  for (const elf::Segment& segment : file.segments) {
    if (segment.type != elf::kPtLoad || segment.memsz == 0) continue;
    std::memcpy(ram.bytes(segment.paddr, segment.filesz).data(), image.data() + segment.offset, segment.filesz);
    std::memset(ram.bytes(segment.paddr + segment.filesz, segment.memsz - segment.filesz).data(), 0,
                segment.memsz - segment.filesz);  // the bss
  }
  if (!initrd.empty()) std::memcpy(ram.bytes(initrd_start, initrd.size()).data(), initrd.data(), initrd.size());
  std::span<uint8_t> cmd = ram.bytes(kCmdlineAddress, cmdline.size() + 1);
  std::memcpy(cmd.data(), cmdline.c_str(), cmdline.size() + 1);

  write_start_info(ram, initrd_start, initrd.size(), rsdp);

  PvhBoot boot;
  boot.entry = static_cast<uint32_t>(*entry);
  boot.start_info = kStartInfoAddress;
  boot.kernel_start = static_cast<uint32_t>(kernel_start);
  boot.kernel_end = static_cast<uint32_t>(kernel_end);
  boot.initrd_start = static_cast<uint32_t>(initrd_start);
  boot.initrd_size = static_cast<uint32_t>(initrd.size());
  boot.cmdline = kCmdlineAddress;
  return boot;
}

}  // namespace topolab
