// SPDX-License-Identifier: GPL-2.0-or-later
#include "firmware/multiboot.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

#include <fmt/format.h>

#include "base/bytes.h"
#include "base/memory_map.h"
#include "firmware/elf.h"

namespace topolab {

namespace {

constexpr uint32_t kHeaderMagic = 0x1badb002;
constexpr size_t kHeaderSearchBytes = 8192;
constexpr uint32_t kHeaderAoutKludge = 1u << 16;
// Flags 0-15 are requirements; a loader must refuse ones it does not know.
// We honour 0 (page-align modules), 1 (memory info) and 2 (video mode,
// which like QEMU we answer with text mode by giving no video info).
constexpr uint32_t kHeaderKnownRequired = 0x7;

// Information-block flags QEMU sets.
enum : uint32_t {
  kInfoMemory = 1u << 0,
  kInfoBootDevice = 1u << 1,
  kInfoCmdline = 1u << 2,
  kInfoModules = 1u << 3,
  kInfoMmap = 1u << 6,
  kInfoLoaderName = 1u << 9,
};
constexpr uint32_t kInfoSize = 88;            // up to and including the APM table
constexpr uint32_t kBootDeviceNone = 0x8000ffff;  // QEMU: first BIOS disk, no partition
constexpr uint32_t kFirstMiB = memory_map::kFirstMiB;
constexpr uint32_t kPage = 4096;

struct Header {
  size_t file_offset;
  uint32_t flags;
  uint32_t header_addr, load_addr, load_end_addr, bss_end_addr, entry_addr;
};

Header find_header(std::span<const uint8_t> image) {
  size_t limit = std::min(image.size(), kHeaderSearchBytes);
  for (size_t off = 0; off + 12 <= limit; off += 4) {
    if (load_le<uint32_t>(image, off) != kHeaderMagic) continue;
    uint32_t flags = load_le<uint32_t>(image, off + 4), checksum = load_le<uint32_t>(image, off + 8);
    if (kHeaderMagic + flags + checksum != 0) continue;  // magic + flags + checksum must wrap to 0
    Header h{off, flags, 0, 0, 0, 0, 0};
    if (flags & kHeaderAoutKludge) {
      if (off + 32 > image.size()) throw ImageError("Multiboot header asks for the a.out kludge but is cut short");
      h.header_addr = load_le<uint32_t>(image, off + 12);
      h.load_addr = load_le<uint32_t>(image, off + 16);
      h.load_end_addr = load_le<uint32_t>(image, off + 20);
      h.bss_end_addr = load_le<uint32_t>(image, off + 24);
      h.entry_addr = load_le<uint32_t>(image, off + 28);
    }
    return h;
  }
  throw ImageError("no Multiboot header (magic 0x1badb002 with a valid checksum) in the first 8 KiB");
}

// Below 1 MiB an image may take conventional memory between the real-mode
// IVT and BIOS data area (0-0x4FF) and the EBDA: what a PC's firmware
// leaves free (kvm-unit-tests' realmode.flat loads at 0x8000). The EBDA,
// the VGA hole and the BIOS area above it are the firmware's.
constexpr uint64_t kLowestLoad = 0x500;

void check_target(const GuestRam& ram, uint64_t start, uint64_t size, const std::string& what) {
  if (start < kFirstMiB && (start < kLowestLoad || start + size > memory_map::kEbdaBase))
    throw ImageError(fmt::format("{} [{:#x}, {:#x}) overlaps what the firmware keeps in the first MiB (below {:#x}, "
                                 "or from the EBDA at {:#x} up)",
                                 what, start, start + size, kLowestLoad, memory_map::kEbdaBase));
  if (!ram.is_ram(start, size))
    throw ImageError(fmt::format("{} [{:#x}, {:#x}) lies outside the {} MiB of guest RAM (see -m)", what, start,
                                 start + size, ram.total_bytes() >> 20));
}

struct Loaded {
  uint32_t entry, start, end;
};

Loaded load_elf32(GuestRam& ram, std::span<const uint8_t> image) {
  const std::optional<elf::Class> elf_class = elf::identify(image);
  if (!elf_class)
    throw ImageError("not an ELF image, and its Multiboot header does not give load addresses (flag 16)");
  if (*elf_class != elf::Class::Elf32)
    throw ImageError("a 64-bit ELF: Multiboot 1 loads ELF32 only (wrap it: objcopy -O elf32-i386)");
  if (const std::string problem = elf::problem(image, elf::Class::Elf32); !problem.empty()) throw ImageError(problem);
  const elf::File file = elf::read(image, elf::Class::Elf32);
  if (file.segments.empty()) throw ImageError("the ELF has no program headers");

  const auto entry = static_cast<uint32_t>(file.entry);
  Loaded loaded{entry, UINT32_MAX, 0};
  bool entry_is_loaded = false;
  for (size_t i = 0; i < file.segments.size(); ++i) {
    const elf::Segment& segment = file.segments[i];
    if (segment.type != elf::kPtLoad) continue;
    const std::string what = fmt::format("ELF segment {}", i);
    if (segment.filesz > segment.memsz)
      throw ImageError(fmt::format("{} has more file bytes ({}) than memory ({})", what, segment.filesz, segment.memsz));
    if (!elf::in_file(image, segment.offset, segment.filesz))
      throw ImageError(fmt::format("{} [{:#x}+{:#x}] runs past the end of the file", what, segment.offset,
                                   segment.filesz));
    if (segment.memsz == 0) continue;
    check_target(ram, segment.paddr, segment.memsz, what);
    std::memcpy(ram.bytes(segment.paddr, segment.filesz).data(), image.data() + segment.offset, segment.filesz);
    std::memset(ram.bytes(segment.paddr + segment.filesz, segment.memsz - segment.filesz).data(), 0,
                segment.memsz - segment.filesz);
    // ELF32 fields are 32 bits wide, so a segment check_target took ends at or below 4 GiB.
    loaded.start = std::min(loaded.start, static_cast<uint32_t>(segment.paddr));
    loaded.end = std::max(loaded.end, static_cast<uint32_t>(segment.paddr + segment.memsz));
    if ((segment.flags & elf::kPfExecute) && segment.contains(entry)) entry_is_loaded = true;
  }
  if (loaded.end == 0) throw ImageError("the ELF has no loadable segment");
  if (!entry_is_loaded) throw ImageError(fmt::format("the ELF entry point {:#x} is in no executable segment", entry));
  return loaded;
}

// Multiboot header flag 16: the header says where the file goes.
Loaded load_aout_kludge(GuestRam& ram, std::span<const uint8_t> image, const Header& h) {
  if (h.header_addr < h.load_addr || h.header_addr - h.load_addr > h.file_offset)
    throw ImageError("Multiboot header_addr/load_addr are inconsistent with where the header sits in the file");
  size_t file_start = h.file_offset - (h.header_addr - h.load_addr);
  uint64_t load_size = h.load_end_addr ? uint64_t{h.load_end_addr} - h.load_addr : image.size() - file_start;
  if (h.load_end_addr && h.load_end_addr < h.load_addr) throw ImageError("Multiboot load_end_addr is below load_addr");
  if (file_start + load_size > image.size()) throw ImageError("Multiboot load range runs past the end of the file");
  uint64_t end = h.bss_end_addr ? std::max<uint64_t>(h.bss_end_addr, h.load_addr + load_size) : h.load_addr + load_size;
  check_target(ram, h.load_addr, end - h.load_addr, "the Multiboot load range");
  std::memcpy(ram.bytes(h.load_addr, load_size).data(), image.data() + file_start, load_size);
  std::memset(ram.bytes(h.load_addr + load_size, end - h.load_addr - load_size).data(), 0, end - h.load_addr - load_size);
  if (h.entry_addr < h.load_addr || h.entry_addr >= end)
    throw ImageError(fmt::format("Multiboot entry_addr {:#x} is outside the loaded image", h.entry_addr));
  return {h.entry_addr, h.load_addr, static_cast<uint32_t>(end)};
}

// Places boot data one after another from `cursor`, failing clearly when
// RAM runs out.
class BootDataWriter {
 public:
  BootDataWriter(GuestRam& ram, uint32_t cursor) : ram_(ram), cursor_(cursor) {}
  uint32_t put(std::span<const uint8_t> bytes, uint32_t align) {
    const auto at = static_cast<uint32_t>(align_up(cursor_, align));
    // Below 4 GiB: the information block's addresses are 32-bit.
    if (!ram_.is_ram(at, bytes.size() + 1))
      throw ImageError(fmt::format("the image, its modules and the boot information do not fit in {} MiB of RAM (see -m)",
                                   ram_.regions().front().size >> 20));
    std::memcpy(ram_.bytes(at, bytes.size()).data(), bytes.data(), bytes.size());
    cursor_ = at + static_cast<uint32_t>(bytes.size());
    return at;
  }
  uint32_t put_string(const std::string& s) {
    uint32_t at = put({reinterpret_cast<const uint8_t*>(s.c_str()), s.size() + 1}, 1);
    return at;
  }
  uint32_t cursor() const { return cursor_; }

 private:
  GuestRam& ram_;
  uint32_t cursor_;
};

void put32(std::vector<uint8_t>& v, uint32_t x) {
  for (int i = 0; i < 4; ++i) v.push_back(static_cast<uint8_t>(x >> (8 * i)));
}

// The e820 map in the Multiboot layout: each entry preceded by its size.
std::vector<uint8_t> e820_map(const GuestRam& ram) {
  std::vector<uint8_t> out;
  for (const memory_map::E820Region& r : memory_map::e820_regions(ram.regions())) {
    put32(out, 20);  // size of the entry, not counting this field
    put32(out, static_cast<uint32_t>(r.base));
    put32(out, static_cast<uint32_t>(r.base >> 32));
    put32(out, static_cast<uint32_t>(r.length));
    put32(out, static_cast<uint32_t>(r.length >> 32));
    put32(out, r.type);
  }
  return out;
}

}  // namespace

MultibootBoot load_multiboot(GuestRam& ram, std::span<const uint8_t> image, const std::string& image_name,
                             const std::string& cmdline, const std::vector<MultibootModule>& modules) {
  if (image.empty()) throw ImageError("the image file is empty");
  // RAM from 0 up: all of it below 4 GiB, or the part below the gap.
  const uint64_t low_ram_end = ram.regions().front().end();
  if (low_ram_end <= kFirstMiB + kPage) throw ImageError("guest RAM must be larger than 1 MiB");
  Header h = find_header(image);
  uint32_t unknown = h.flags & 0xffff & ~kHeaderKnownRequired;
  if (unknown) throw ImageError(fmt::format("the Multiboot header requires features {:#x} that no loader here knows", unknown));
  Loaded loaded = (h.flags & kHeaderAoutKludge) ? load_aout_kludge(ram, image, h) : load_elf32(ram, image);

  // The boot information follows the image, and stays out of the first MiB
  // when the image is in it.
  BootDataWriter out(ram, static_cast<uint32_t>(align_up(std::max<uint64_t>(loaded.end, kFirstMiB), kPage)));
  std::vector<uint8_t> mods;
  for (const auto& m : modules) {
    uint32_t start = out.put(m.bytes, kPage);  // page-aligned, as header flag 0 may require
    put32(mods, start);
    put32(mods, start + static_cast<uint32_t>(m.bytes.size()));
    put32(mods, out.put_string(m.cmdline));
    put32(mods, 0);
  }
  std::string full_cmdline = cmdline.empty() ? image_name : image_name + " " + cmdline;
  uint32_t cmdline_at = out.put_string(full_cmdline);
  uint32_t loader_name_at = out.put_string("topolab");
  uint32_t mods_at = mods.empty() ? 0 : out.put(mods, 4);
  std::vector<uint8_t> mmap = e820_map(ram);
  uint32_t mmap_at = out.put(mmap, 4);

  std::vector<uint8_t> info(kInfoSize, 0);
  auto set = [&](size_t off, uint32_t v) { std::memcpy(info.data() + off, &v, 4); };
  set(0, kInfoMemory | kInfoBootDevice | kInfoCmdline | kInfoModules | kInfoMmap | kInfoLoaderName);
  set(4, 640);                                           // mem_lower, KiB below 640 KiB
  // mem_upper, KiB from 1 MiB up to the first hole, as QEMU gives it (hw/i386/multiboot.c:
  // below_4g_mem_size / 1024 - 1024); RAM above 4 GiB is in the mmap only.
  set(8, static_cast<uint32_t>((low_ram_end - kFirstMiB) >> 10));
  set(12, kBootDeviceNone);
  set(16, cmdline_at);
  set(20, static_cast<uint32_t>(modules.size()));
  set(24, mods_at);
  set(44, static_cast<uint32_t>(mmap.size()));
  set(48, mmap_at);
  set(64, loader_name_at);
  uint32_t info_at = out.put(info, 8);

  return {loaded.entry, info_at, loaded.start, loaded.end, out.cursor()};
}

std::vector<uint8_t> read_image_file(const std::string& path, uint64_t max_bytes) {
  std::error_code ec;
  auto status = std::filesystem::status(path, ec);
  if (std::filesystem::is_directory(status)) throw ImageError(fmt::format("cannot read {}: it is a directory", path));
  if (std::filesystem::exists(status) && !std::filesystem::is_regular_file(status))
    throw ImageError(fmt::format("cannot read {}: not a regular file", path));
  uint64_t size = 0;  // what stat says, when it says
  if (std::filesystem::exists(status)) {
    size = std::filesystem::file_size(path, ec);
    if (ec) size = 0;
    if (!ec && size > max_bytes)
      throw ImageError(fmt::format("cannot read {}: {} bytes do not fit in {} MiB of guest RAM (see -m)", path, size,
                                   max_bytes >> 20));
  }
  std::ifstream f(path, std::ios::binary);
  if (!f) throw ImageError(fmt::format("cannot read {}: {}", path, std::strerror(errno)));
  // Read in large pieces, not byte by byte (an istreambuf_iterator cost 3%
  // of a Linux boot, for its 36 MB initramfs): what stat said at once, then
  // whatever a file that grew since has more, bounded by RAM.
  std::vector<uint8_t> bytes;
  constexpr size_t kPiece = 1 << 20;
  for (size_t piece = size; f && f.peek() != std::char_traits<char>::eof(); piece = kPiece) {
    const size_t have = bytes.size();
    bytes.resize(have + piece);
    f.read(reinterpret_cast<char*>(bytes.data() + have), static_cast<std::streamsize>(piece));
    bytes.resize(have + static_cast<size_t>(f.gcount()));
    if (bytes.size() > max_bytes)
      throw ImageError(fmt::format("cannot read {}: it does not fit in {} MiB of guest RAM (see -m)", path,
                                   max_bytes >> 20));
  }
  if (f.bad()) throw ImageError(fmt::format("cannot read {}: {}", path, std::strerror(errno)));
  return bytes;
}

}  // namespace topolab
