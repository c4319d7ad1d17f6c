// SPDX-License-Identifier: GPL-2.0-or-later
// The Linux bzImage loader (firmware/linux_boot.h), through its public
// functions only. Input: 5 control bytes (RAM above 16 MiB in MiB; the
// command line's length, up to 1 MiB; the initrd's, up to 1 MiB), then the
// image (seeds: a minimal bzImage with a real setup header).
// Invariants (Documentation/x86/boot.rst and the header's promises):
// - a refusal is one ImageError line and leaves RAM as it was;
// - an accepted image: the protected-mode kernel (the file past its setup
//   sectors) is at code32_start = 1 MiB, byte for byte; boot_params is the
//   image's setup header (to its end, or to 0x290, where boot_params' room
//   for it ends) with the loader's fields filled in (type_of_loader
//   0xFF, code32_start, cmd_line_ptr, ramdisk_image/size) and an e820 map
//   of RAM the guest has; the command line is there, NUL-terminated, no
//   longer than the header's cmdline_size; the GDT has flat 4 GiB code and
//   data at __BOOT_CS and __BOOT_DS; the initrd is there, page-aligned,
//   below initrd_addr_max, above the kernel's decompression area
//   [max(1 MiB, pref_address), +init_size);
// - boot_params, the command line, the GDT, the kernel and the initrd each
//   lie in guest RAM (an e820 RAM region) and never overlap.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "firmware/linux_boot.h"
#include "fuzz/fuzz_check.h"
#include "fuzz/fuzz_input.h"
#include "fuzz/loader_checks.h"

using namespace topolab;
using topolab::fuzz::Span;

namespace {

template <typename T>
T le(std::span<const uint8_t> b, size_t at) {
  T v{};
  if (at + sizeof(T) <= b.size()) std::memcpy(&v, b.data() + at, sizeof(T));
  return v;
}

// A flat 4 GiB descriptor (SDM Vol. 3A 3.4.5): base 0, limit 0xFFFFF with
// G = 1, D/B = 1, present, DPL 0, a code or data segment of `type`.
bool flat(uint64_t d, unsigned type) {
  const uint64_t base = ((d >> 16) & 0xffffff) | ((d >> 56) << 24);
  const uint64_t limit = (d & 0xffff) | (((d >> 48) & 0xf) << 16);
  const unsigned access = (d >> 40) & 0xff, flags = (d >> 52) & 0xf;
  return base == 0 && limit == 0xfffff && (access & 0x80) && ((access >> 5) & 3) == 0 && (access & 0x10) &&
         ((access >> 1) & 0x7) == type && (flags & 0xc) == 0xc;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::Input in(data, size);
  const uint64_t ram_bytes = (16 + in.take<uint8_t>() % 48) << 20;
  // Long command lines and big initrds cost time: most inputs take short ones.
  const uint8_t long_cmdline = in.take<uint8_t>();
  const size_t cmdline_length = (long_cmdline & 0x80 ? size_t{long_cmdline & 0x7fu} << 13 : 0) | in.take<uint8_t>();
  const uint16_t initrd_units = in.take<uint16_t>();
  const size_t initrd_length = initrd_units & 0x8000 ? size_t{initrd_units & 0x7fffu} << 5 : initrd_units & 0xfff;
  const std::span<const uint8_t> image(in.rest(), in.remaining());
  // Cut from one line built once: a fresh string of up to 1 MiB per input
  // cost its pages' faults every time.
  static const std::string kLongestCmdline = [] {
    std::string line((size_t{0x7f} << 13) | 0xff, 'c');
    for (size_t i = 0; i < line.size(); i += 97) line[i] = ' ';
    return line;
  }();
  static std::string cmdline;
  cmdline.assign(kLongestCmdline, 0, cmdline_length);
  const std::span<const uint8_t> initrd = fuzz::test_initrd<7, 1>(initrd_length);

  GuestRam ram(ram_bytes);  // fresh: zero, and no page backed yet
  LinuxBoot boot;
  try {
    boot = load_linux(ram, image, cmdline, initrd);
  } catch (const ImageError& e) {
    fuzz::check_refusal_message(e.what());
    FUZZ_CHECK(fuzz::untouched(ram), "a refused image changed RAM: {}", e.what());
    return 0;
  }

  FUZZ_CHECK(is_linux_image(image), "loaded an image is_linux_image() refuses");
  // The header, as boot.rst lays it out.
  const uint16_t protocol = le<uint16_t>(image, 0x206);
  const unsigned setup_sects = image[0x1f1] ? image[0x1f1] : 4;
  const uint64_t setup_bytes = (setup_sects + 1) * uint64_t{512};
  const uint64_t kernel_bytes = uint64_t{le<uint32_t>(image, 0x1f4)} * 16;
  const uint32_t cmdline_size = le<uint32_t>(image, 0x238);
  const uint32_t initrd_addr_max = protocol >= 0x203 ? le<uint32_t>(image, 0x22c) : 0x37ffffff;
  const uint64_t pref_address = le<uint64_t>(image, 0x258);
  const uint32_t init_size = le<uint32_t>(image, 0x260);
  const size_t header_end = 0x202 + image[0x201];

  FUZZ_CHECK(boot.protocol == protocol && protocol >= 0x206, "protocol {:#x}", boot.protocol);
  FUZZ_CHECK(boot.entry == 0x100000 && boot.kernel_start == 0x100000 && boot.kernel_end - boot.kernel_start == kernel_bytes,
             "kernel [{:#x}, {:#x}) entry {:#x}, {} bytes", boot.kernel_start, boot.kernel_end, boot.entry, kernel_bytes);
  FUZZ_CHECK(std::memcmp(ram.data() + boot.kernel_start, image.data() + setup_bytes, kernel_bytes) == 0,
             "the protected-mode kernel is not the image's");

  // boot_params.
  const uint32_t bp = boot.boot_params;
  FUZZ_CHECK(bp + 4096 <= ram.top(), "boot_params at {:#x}", bp);
  // boot_params has room for the header up to 0x290 (edd_mbr_sig_buffer
  // follows); a jump that claims more leads to setup code, not header.
  for (size_t i = 0x1f1; i < std::min<size_t>(header_end, 0x290); ++i) {
    const bool loader_field = (i >= 0x210 && i < 0x211) || (i >= 0x214 && i < 0x220) || (i >= 0x228 && i < 0x22c);
    if (!loader_field)
      FUZZ_CHECK(ram.data()[bp + i] == image[i], "boot_params byte {:#x} is not the setup header's", i);
  }
  for (size_t i = 0x290; i < 0x2d0; ++i)
    FUZZ_CHECK(ram.data()[bp + i] == 0, "boot_params byte {:#x}, past the setup header's room, is not zero", i);
  FUZZ_CHECK(ram.read<uint8_t>(bp + 0x210) == 0xff, "type_of_loader");
  FUZZ_CHECK(ram.read<uint32_t>(bp + 0x214) == boot.entry, "code32_start");
  FUZZ_CHECK(ram.read<uint32_t>(bp + 0x228) == boot.cmdline, "cmd_line_ptr");
  FUZZ_CHECK(ram.read<uint32_t>(bp + 0x218) == boot.initrd_start && ram.read<uint32_t>(bp + 0x21c) == initrd.size() &&
                 boot.initrd_size == initrd.size(),
             "ramdisk_image/size");
  const unsigned e820_entries = ram.read<uint8_t>(bp + 0x1e8);
  FUZZ_CHECK(e820_entries >= 1 && e820_entries <= 128, "{} e820 entries", e820_entries);
  for (unsigned i = 0; i < e820_entries; ++i) {
    const uint64_t base = ram.read<uint64_t>(bp + 0x2d0 + 20 * i), length = ram.read<uint64_t>(bp + 0x2d0 + 20 * i + 8);
    const uint32_t type = ram.read<uint32_t>(bp + 0x2d0 + 20 * i + 16);
    if (type == 1) FUZZ_CHECK(base + length <= ram.top() && length > 0, "e820 RAM [{:#x}, +{:#x})", base, length);
  }

  // The command line.
  FUZZ_CHECK(cmdline.size() <= cmdline_size, "a {}-byte command line past cmdline_size {}", cmdline.size(), cmdline_size);
  FUZZ_CHECK(uint64_t{boot.cmdline} + cmdline.size() + 1 <= ram.top() &&
                 std::memcmp(ram.data() + boot.cmdline, cmdline.c_str(), cmdline.size() + 1) == 0,
             "the command line at {:#x}", boot.cmdline);

  // The GDT.
  FUZZ_CHECK(boot.gdt_limit >= LinuxBoot::kBootDataSelector + 7 && boot.gdt + boot.gdt_limit + 1u <= ram.top(),
             "GDT at {:#x} limit {:#x}", boot.gdt, boot.gdt_limit);
  FUZZ_CHECK(flat(ram.read<uint64_t>(boot.gdt + LinuxBoot::kBootCodeSelector), 0x5) &&
                 flat(ram.read<uint64_t>(boot.gdt + LinuxBoot::kBootDataSelector), 0x1),
             "GDT {:#x} {:#x}", ram.read<uint64_t>(boot.gdt + LinuxBoot::kBootCodeSelector),
             ram.read<uint64_t>(boot.gdt + LinuxBoot::kBootDataSelector));

  // The initrd.
  std::vector<Span> spans = {{bp, bp + 4096u, "boot_params"},
                             {boot.cmdline, boot.cmdline + cmdline.size() + 1, "command line"},
                             {boot.gdt, boot.gdt + boot.gdt_limit + 1u, "GDT"},
                             {boot.kernel_start, boot.kernel_end, "kernel"}};
  if (!initrd.empty()) {
    const uint64_t start = boot.initrd_start, end = start + initrd.size();
    FUZZ_CHECK(start % 4096 == 0 && end <= uint64_t{initrd_addr_max} + 1, "initrd [{:#x}, {:#x}), max {:#x}", start,
               end, initrd_addr_max);
    FUZZ_CHECK(end <= ram.top() && std::memcmp(ram.data() + start, initrd.data(), initrd.size()) == 0,
               "the initrd at {:#x}", start);
    const uint64_t work = std::max<uint64_t>(0x100000, pref_address);
    FUZZ_CHECK(start >= work + init_size || end <= work, "initrd [{:#x}, {:#x}) in the decompression area [{:#x}, +{:#x})",
               start, end, work, init_size);
    spans.push_back({start, end, "initrd"});
  }
  for (const Span& s : spans) fuzz::check_in_ram(ram, s);
  fuzz::check_disjoint(spans);
  return 0;
}
