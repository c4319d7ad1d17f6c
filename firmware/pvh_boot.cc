#include "firmware/pvh_boot.h"

#include <algorithm>
#include <cstring>
#include <optional>

#include <fmt/format.h>

#include "base/memory_map.h"

namespace topolab {

namespace {

// ELF64 (System V gABI, "ELF Header", "Program Header", "Sections").
constexpr uint8_t kElfClass64 = 2, kElfLittleEndian = 1;
constexpr uint16_t kElfMachineX86_64 = 62;
constexpr uint32_t kElfHeaderSize = 64, kElfPhdrSize = 56, kElfShdrSize = 64;
constexpr uint32_t kPtLoad = 1, kPtNote = 4, kShtNote = 7;

// The note the kernel's ELFNOTE(Xen, XEN_ELFNOTE_PHYS32_ENTRY, ...) makes
// (xen/include/public/elfnote.h); its descriptor is the entry's physical
// address, 4 or 8 bytes (Linux's _ASM_PTR: 8 on x86-64).
constexpr char kXenNoteName[] = "Xen";  // namesz 4, with the NUL
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
static_assert(kMemmapAddress + memory_map::e820_regions(0).size() * kMemmapEntrySize <= kCmdlineAddress);

// Linux's COMMAND_LINE_SIZE on x86, the terminating NUL included: what
// its PVH entry copies of the command line.
constexpr uint32_t kCommandLineSize = 2048;
constexpr uint64_t kPage = 4096;
constexpr uint64_t kFirstMiB = memory_map::kFirstMiB;

template <typename T>
T load_le(std::span<const uint8_t> bytes, uint64_t offset) {
  T v;
  std::memcpy(&v, bytes.data() + offset, sizeof(T));
  return v;
}

bool in_file(std::span<const uint8_t> image, uint64_t offset, uint64_t size) {
  return offset <= image.size() && size <= image.size() - offset;
}

std::string mib(uint64_t bytes) { return fmt::format("{:.1f} MiB", static_cast<double>(bytes) / (1 << 20)); }

// What keeps `image` from being an ELF64 for x86-64 whose program header
// table is in the file, or "" if nothing.
std::string elf64_problem(std::span<const uint8_t> image) {
  if (image.size() < kElfHeaderSize || std::memcmp(image.data(), "\x7f" "ELF", 4) != 0) return "not an ELF image";
  if (image[4] != kElfClass64) return "a 32-bit ELF: PVH loads ELF64 kernels";
  if (image[5] != kElfLittleEndian) return "a big-endian ELF cannot be an x86 image";
  if (const uint16_t machine = load_le<uint16_t>(image, 18); machine != kElfMachineX86_64)
    return fmt::format("ELF machine {} is not x86-64 ({})", machine, kElfMachineX86_64);
  if (load_le<uint16_t>(image, 54) != kElfPhdrSize)
    return fmt::format("ELF program header size {} is not {}", load_le<uint16_t>(image, 54), kElfPhdrSize);
  if (!in_file(image, load_le<uint64_t>(image, 32), uint64_t{load_le<uint16_t>(image, 56)} * kElfPhdrSize))
    return "the ELF program headers run past the end of the file";
  return "";
}

// The descriptor of the first PHYS32_ENTRY note in `notes`, a run of
// Elf64_Nhdr-headed notes padded to `align` bytes; a note cut short ends
// the run.
std::optional<uint64_t> find_entry_note(std::span<const uint8_t> notes, uint64_t align) {
  const auto padded = [align](uint64_t n) { return (n + align - 1) / align * align; };
  uint64_t at = 0;
  while (notes.size() - at >= 12) {
    const uint32_t namesz = load_le<uint32_t>(notes, at), descsz = load_le<uint32_t>(notes, at + 4);
    const uint32_t type = load_le<uint32_t>(notes, at + 8);
    const uint64_t name = at + 12, desc = name + padded(namesz);
    if (!in_file(notes, name, namesz) || !in_file(notes, desc, descsz)) break;
    if (type == kXenElfnotePhys32Entry && namesz == sizeof kXenNoteName &&
        std::memcmp(notes.data() + name, kXenNoteName, sizeof kXenNoteName) == 0) {
      if (descsz == 4) return load_le<uint32_t>(notes, desc);
      if (descsz == 8) return load_le<uint64_t>(notes, desc);
    }
    at = std::min<uint64_t>(desc + padded(descsz), notes.size());
  }
  return std::nullopt;
}

// The PVH entry of an image elf64_problem accepted: from the PT_NOTE
// segments, else the SHT_NOTE sections (a kernel may carry either).
std::optional<uint64_t> find_pvh_entry(std::span<const uint8_t> image) {
  const uint64_t phoff = load_le<uint64_t>(image, 32);
  for (uint64_t i = 0; i < load_le<uint16_t>(image, 56); ++i) {
    const uint64_t ph = phoff + i * kElfPhdrSize;
    const uint64_t offset = load_le<uint64_t>(image, ph + 8), size = load_le<uint64_t>(image, ph + 32);
    if (load_le<uint32_t>(image, ph) != kPtNote || !in_file(image, offset, size)) continue;
    if (auto entry = find_entry_note(image.subspan(offset, size), load_le<uint64_t>(image, ph + 48) == 8 ? 8 : 4))
      return entry;
  }
  const uint64_t shoff = load_le<uint64_t>(image, 40);
  const uint16_t shnum = load_le<uint16_t>(image, 60);
  if (load_le<uint16_t>(image, 58) != kElfShdrSize || !in_file(image, shoff, uint64_t{shnum} * kElfShdrSize))
    return std::nullopt;
  for (uint64_t i = 0; i < shnum; ++i) {
    const uint64_t sh = shoff + i * kElfShdrSize;
    const uint64_t offset = load_le<uint64_t>(image, sh + 24), size = load_le<uint64_t>(image, sh + 32);
    if (load_le<uint32_t>(image, sh + 4) != kShtNote || !in_file(image, offset, size)) continue;
    if (auto entry = find_entry_note(image.subspan(offset, size), load_le<uint64_t>(image, sh + 48) == 8 ? 8 : 4))
      return entry;
  }
  return std::nullopt;
}

}  // namespace

bool is_pvh_image(std::span<const uint8_t> image) {
  return elf64_problem(image).empty() && find_pvh_entry(image).has_value();
}

PvhBoot load_pvh(GuestRam& ram, std::span<const uint8_t> image, const std::string& cmdline,
                 std::span<const uint8_t> initrd, uint32_t rsdp) {
  if (const std::string problem = elf64_problem(image); !problem.empty()) throw ImageError(problem);
  const std::optional<uint64_t> entry = find_pvh_entry(image);
  if (!entry)
    throw ImageError("the ELF64 has no PVH entry (a \"Xen\" note of type 18, XEN_ELFNOTE_PHYS32_ENTRY; "
                     "Linux needs CONFIG_PVH)");
  if (cmdline.size() >= kCommandLineSize)
    throw ImageError(fmt::format("the kernel command line is {} bytes; Linux takes at most {}", cmdline.size(),
                                 kCommandLineSize - 1));

  // Every check before the first byte is written: a refused image leaves RAM as it was.
  const uint64_t phoff = load_le<uint64_t>(image, 32);
  const uint16_t phnum = load_le<uint16_t>(image, 56);
  uint64_t kernel_start = UINT64_MAX, kernel_end = 0;
  bool entry_is_loaded = false;
  for (uint64_t i = 0; i < phnum; ++i) {
    const uint64_t ph = phoff + i * kElfPhdrSize;
    if (load_le<uint32_t>(image, ph) != kPtLoad) continue;
    const uint64_t offset = load_le<uint64_t>(image, ph + 8), paddr = load_le<uint64_t>(image, ph + 24);
    const uint64_t filesz = load_le<uint64_t>(image, ph + 32), memsz = load_le<uint64_t>(image, ph + 40);
    if (filesz > memsz)
      throw ImageError(fmt::format("ELF segment {} has more file bytes ({}) than memory ({})", i, filesz, memsz));
    if (!in_file(image, offset, filesz))
      throw ImageError(fmt::format("the ELF is truncated: segment {} [{:#x}+{:#x}] runs past the end of the "
                                   "{}-byte file", i, offset, filesz, image.size()));
    if (memsz == 0) continue;
    if (paddr < kFirstMiB || !ram.contains(paddr, memsz))
      throw ImageError(fmt::format("ELF segment {} [{:#x}, {:#x}) lies outside guest RAM above 1 MiB ({}, see -m)", i,
                                   paddr, paddr + memsz, mib(ram.size())));
    kernel_start = std::min(kernel_start, paddr);
    kernel_end = std::max(kernel_end, paddr + memsz);
    if (*entry >= paddr && *entry - paddr < memsz) entry_is_loaded = true;
  }
  if (kernel_end == 0) throw ImageError("the ELF has no loadable segment");
  if (!entry_is_loaded) throw ImageError(fmt::format("the PVH entry point {:#x} is in no loaded segment", *entry));

  // The initrd goes at the top of RAM, page-aligned, as firmware/linux_boot.cc puts it.
  uint64_t initrd_start = 0;
  if (!initrd.empty()) {
    if (initrd.size() > ram.size() || (ram.size() - initrd.size()) / kPage * kPage < kernel_end)
      throw ImageError(fmt::format("the initrd ({}) does not fit in guest RAM ({}) above the kernel ({})",
                                   mib(initrd.size()), mib(ram.size()), mib(kernel_end)));
    initrd_start = (ram.size() - initrd.size()) / kPage * kPage;
  }

  for (uint64_t i = 0; i < phnum; ++i) {
    const uint64_t ph = phoff + i * kElfPhdrSize;
    if (load_le<uint32_t>(image, ph) != kPtLoad) continue;
    const uint64_t offset = load_le<uint64_t>(image, ph + 8), paddr = load_le<uint64_t>(image, ph + 24);
    const uint64_t filesz = load_le<uint64_t>(image, ph + 32), memsz = load_le<uint64_t>(image, ph + 40);
    if (memsz == 0) continue;
    std::memcpy(ram.bytes(paddr, filesz).data(), image.data() + offset, filesz);
    std::memset(ram.bytes(paddr + filesz, memsz - filesz).data(), 0, memsz - filesz);  // the bss
  }
  if (!initrd.empty()) std::memcpy(ram.bytes(initrd_start, initrd.size()).data(), initrd.data(), initrd.size());
  std::span<uint8_t> cmd = ram.bytes(kCmdlineAddress, cmdline.size() + 1);
  std::memcpy(cmd.data(), cmdline.c_str(), cmdline.size() + 1);

  // Module 0 is the initrd (Linux's init_pvh_bootparams takes it as the
  // ramdisk), without a command line.
  std::span<uint8_t> modlist = ram.bytes(kModlistAddress, kModlistEntrySize);
  std::fill(modlist.begin(), modlist.end(), 0);
  ram.write<uint64_t>(kModlistAddress, initrd_start);
  ram.write<uint64_t>(kModlistAddress + 8, initrd.size());
  const auto regions = memory_map::e820_regions(ram.size());
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
  ram.write<uint32_t>(kStartInfoAddress + kInfoNrModules, initrd.empty() ? 0 : 1);
  ram.write<uint64_t>(kStartInfoAddress + kInfoModlistPaddr, initrd.empty() ? 0 : kModlistAddress);
  ram.write<uint64_t>(kStartInfoAddress + kInfoCmdlinePaddr, kCmdlineAddress);
  ram.write<uint64_t>(kStartInfoAddress + kInfoRsdpPaddr, rsdp);
  ram.write<uint64_t>(kStartInfoAddress + kInfoMemmapPaddr, kMemmapAddress);
  ram.write<uint32_t>(kStartInfoAddress + kInfoMemmapEntries, static_cast<uint32_t>(regions.size()));

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
