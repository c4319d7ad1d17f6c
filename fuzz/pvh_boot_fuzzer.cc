// SPDX-License-Identifier: GPL-2.0-or-later
// The PVH loader (firmware/pvh_boot.h), through its public functions only.
// Input: 6 control bytes (RAM of 2 to 65 MiB; the command line's length,
// up to 4095; the initrd's, up to 1 MiB; the RSDP address), then the image
// (seeds: minimal ELF64 kernels with the Xen PHYS32_ENTRY note, in a
// PT_NOTE segment or an SHT_NOTE section).
// Invariants (Xen's docs/misc/pvh.pandoc, start_info.h and the header):
// - a refusal is one ImageError line and leaves RAM as it was (the loader
//   checks everything before it writes); is_pvh_image() agrees with
//   whether the note was found;
// - an accepted image: the entry lies in the loaded kernel, above 1 MiB;
//   every PT_LOAD segment no other overlaps holds its file bytes and zeros
//   to its memory size; start_info has the magic, version 1, flags 0, the
//   command line, the RSDP given, module 0 the initrd (page-aligned, above
//   the kernel, byte for byte), and an e820 map of RAM the guest has; the
//   command line is NUL-terminated and under 2,048 bytes;
// - start_info, the module list, the memory map, the command line, the
//   kernel and the initrd each lie in guest RAM (an e820 RAM region) and
//   never overlap.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "firmware/pvh_boot.h"
#include "fuzz/fuzz_check.h"
#include "fuzz/fuzz_input.h"
#include "fuzz/loader_checks.h"

using namespace topolab;
using topolab::fuzz::Span;

namespace {

template <typename T>
T le(std::span<const uint8_t> b, uint64_t at) {
  T v{};
  if (at <= b.size() && sizeof(T) <= b.size() - at) std::memcpy(&v, b.data() + at, sizeof(T));
  return v;
}

struct Segment {
  uint64_t offset, paddr, filesz, memsz;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::Input in(data, size);
  const uint64_t ram_bytes = (2 + in.take<uint8_t>() % 64) << 20;
  const size_t cmdline_length = in.take<uint16_t>() & 0xfff;
  const uint16_t initrd_units = in.take<uint16_t>();  // big initrds cost time: most inputs take small ones
  const size_t initrd_length = initrd_units & 0x8000 ? size_t{initrd_units & 0x7fffu} << 5 : initrd_units & 0xfff;
  static constexpr uint32_t kRsdps[] = {0xe0000, 0, 0xf0000, 0xfffffff0};
  const uint32_t rsdp = kRsdps[in.take<uint8_t>() % 4];
  const std::span<const uint8_t> image(in.rest(), in.remaining());
  std::string cmdline(cmdline_length, 'p');
  for (size_t i = 0; i < cmdline.size(); i += 61) cmdline[i] = ' ';
  const std::span<const uint8_t> initrd = fuzz::test_initrd<13, 5>(initrd_length);

  const bool pvh = is_pvh_image(image);
  GuestRam ram(ram_bytes);  // fresh: zero, and no page backed yet
  PvhBoot boot;
  try {
    boot = load_pvh(ram, image, cmdline, initrd, rsdp);
  } catch (const ImageError& e) {
    fuzz::check_refusal_message(e.what());
    FUZZ_CHECK(fuzz::untouched(ram), "a refused image changed RAM: {}", e.what());
    return 0;
  }
  FUZZ_CHECK(pvh, "loaded an image is_pvh_image() refuses");
  FUZZ_CHECK(cmdline.size() < 2048, "a {}-byte command line accepted", cmdline.size());

  // The kernel, from the program headers (the image was accepted, so they
  // are in the file).
  std::vector<Segment> segments;
  const uint64_t phoff = le<uint64_t>(image, 32);
  for (unsigned i = 0; i < le<uint16_t>(image, 56); ++i) {
    const uint64_t ph = phoff + uint64_t{i} * 56;
    if (le<uint32_t>(image, ph) != 1 || le<uint64_t>(image, ph + 40) == 0) continue;  // PT_LOAD with memory
    segments.push_back({le<uint64_t>(image, ph + 8), le<uint64_t>(image, ph + 24), le<uint64_t>(image, ph + 32),
                        le<uint64_t>(image, ph + 40)});
  }
  FUZZ_CHECK(!segments.empty(), "accepted with no loadable segment");
  uint64_t lowest = UINT64_MAX, highest = 0;
  for (const Segment& s : segments) {
    lowest = std::min(lowest, s.paddr);
    highest = std::max(highest, s.paddr + s.memsz);
  }
  FUZZ_CHECK(boot.kernel_start == lowest && boot.kernel_end == highest && lowest >= 0x100000,
             "kernel [{:#x}, {:#x}), segments [{:#x}, {:#x})", boot.kernel_start, boot.kernel_end, lowest, highest);
  bool entry_loaded = false;
  for (size_t i = 0; i < segments.size(); ++i) {
    const Segment& s = segments[i];
    if (boot.entry >= s.paddr && boot.entry - s.paddr < s.memsz) entry_loaded = true;
    bool alone = true;
    for (size_t j = 0; j < segments.size(); ++j)
      if (j != i && segments[j].paddr < s.paddr + s.memsz && s.paddr < segments[j].paddr + segments[j].memsz) alone = false;
    if (!alone) continue;
    FUZZ_CHECK(s.filesz <= s.memsz && std::memcmp(ram.data() + s.paddr, image.data() + s.offset, s.filesz) == 0,
               "segment at {:#x}: not the file's bytes", s.paddr);
    FUZZ_CHECK(fuzz::all_zero(ram.data() + s.paddr + s.filesz, s.memsz - s.filesz), "segment at {:#x}: bss not zero",
               s.paddr);
  }
  FUZZ_CHECK(entry_loaded, "entry {:#x} in no loaded segment", boot.entry);

  // start_info (hvm_start_info, version 1).
  const uint32_t si = boot.start_info;
  FUZZ_CHECK(uint64_t{si} + 56 <= ram.top(), "start_info at {:#x}", si);
  FUZZ_CHECK(ram.read<uint32_t>(si) == PvhBoot::kStartInfoMagic && ram.read<uint32_t>(si + 4) == 1 &&
                 ram.read<uint32_t>(si + 8) == 0,
             "start_info magic/version/flags");
  FUZZ_CHECK(ram.read<uint64_t>(si + 24) == boot.cmdline && ram.read<uint64_t>(si + 32) == rsdp, "cmdline/rsdp");
  FUZZ_CHECK(uint64_t{boot.cmdline} + cmdline.size() + 1 <= ram.top() &&
                 std::memcmp(ram.data() + boot.cmdline, cmdline.c_str(), cmdline.size() + 1) == 0,
             "the command line at {:#x}", boot.cmdline);
  std::vector<Span> spans = {{si, si + 56u, "start_info"},
                             {boot.cmdline, boot.cmdline + cmdline.size() + 1, "command line"},
                             {boot.kernel_start, boot.kernel_end, "kernel"}};
  const uint32_t modules = ram.read<uint32_t>(si + 12);
  FUZZ_CHECK(modules == (initrd.empty() ? 0u : 1u) && boot.initrd_size == initrd.size(), "{} modules", modules);
  if (modules) {
    const uint64_t modlist = ram.read<uint64_t>(si + 16);
    FUZZ_CHECK(modlist + 32 <= ram.top(), "modlist at {:#x}", modlist);
    const uint64_t start = ram.read<uint64_t>(modlist), length = ram.read<uint64_t>(modlist + 8);
    FUZZ_CHECK(start == boot.initrd_start && length == initrd.size() && ram.read<uint64_t>(modlist + 16) == 0,
               "module 0 [{:#x}, +{:#x})", start, length);
    FUZZ_CHECK(start % 4096 == 0 && start >= boot.kernel_end && start + length <= ram.top() &&
                   std::memcmp(ram.data() + start, initrd.data(), length) == 0,
               "the initrd at {:#x}", start);
    spans.push_back({modlist, modlist + 32, "module list"});
    spans.push_back({start, start + length, "initrd"});
  }
  const uint64_t memmap = ram.read<uint64_t>(si + 40);
  const uint32_t entries = ram.read<uint32_t>(si + 48);
  FUZZ_CHECK(entries >= 1 && entries <= 128 && memmap + 24 * entries <= ram.top(), "memmap {:#x} x {}", memmap, entries);
  for (uint32_t i = 0; i < entries; ++i) {
    const uint64_t base = ram.read<uint64_t>(memmap + 24 * i), length = ram.read<uint64_t>(memmap + 24 * i + 8);
    if (ram.read<uint32_t>(memmap + 24 * i + 16) == 1)
      FUZZ_CHECK(length > 0 && base + length <= ram.top(), "memmap RAM [{:#x}, +{:#x})", base, length);
  }
  spans.push_back({memmap, memmap + 24 * entries, "memory map"});
  for (const Span& s : spans) fuzz::check_in_ram(ram, s);
  fuzz::check_disjoint(spans);
  return 0;
}
