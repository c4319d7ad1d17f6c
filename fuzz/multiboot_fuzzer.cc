// SPDX-License-Identifier: GPL-2.0-or-later
// The Multiboot loader. Input: an image (seeds: the testcase images).
// Invariants, when load_multiboot() accepts it (ImageError is the only
// refusal): the image lies in RAM above the first MiB and below the boot
// data; the entry is inside it; the information block, the command line,
// the module list, the module and the memory map all lie in RAM, after the
// image, and say what was asked (Multiboot 0.6.96 section 3.3).
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>

#include "firmware/multiboot.h"
#include "fuzz/fuzz_check.h"

using namespace topolab;

namespace {

constexpr uint64_t kRam = 4 << 20;
constexpr uint32_t kFirstMiB = 0x100000;

uint32_t u32(const GuestRam& ram, uint64_t at) { return ram.read<uint32_t>(at); }

// The NUL-terminated string at `at`, checked to end inside RAM.
std::string string_at(const GuestRam& ram, uint32_t at) {
  FUZZ_CHECK(at >= kFirstMiB && at < ram.top(), "string at {:#x}", at);
  const void* end = std::memchr(ram.data() + at, 0, ram.top() - at);
  FUZZ_CHECK(end, "string at {:#x} has no NUL in RAM", at);
  return std::string(reinterpret_cast<const char*>(ram.data() + at));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  GuestRam ram(kRam);  // fresh and zeroed: nothing from an earlier input
  const std::vector<MultibootModule> modules = {{"mod arg", {1, 2, 3}}};
  MultibootBoot boot;
  try {
    boot = load_multiboot(ram, std::span(data, size), "image", "a=b", modules);
  } catch (const ImageError&) {
    return 0;
  }
  // Below 1 MiB only conventional memory above the IVT and BIOS data area
  // (firmware/multiboot.cc); the boot information always goes above 1 MiB.
  FUZZ_CHECK(boot.image_start >= 0x500 && boot.image_start < boot.image_end, "image [{:#x}, {:#x})",
             boot.image_start, boot.image_end);
  FUZZ_CHECK(boot.info_address >= kFirstMiB, "info block at {:#x}, inside the first MiB", boot.info_address);
  FUZZ_CHECK(boot.image_end <= boot.end_of_boot_data && boot.end_of_boot_data <= ram.top(), "boot data end {:#x}",
             boot.end_of_boot_data);
  FUZZ_CHECK(boot.entry >= boot.image_start && boot.entry < boot.image_end, "entry {:#x}", boot.entry);
  const uint32_t info = boot.info_address;
  FUZZ_CHECK(info >= boot.image_end && uint64_t{info} + 88 <= boot.end_of_boot_data, "info block at {:#x}", info);
  const uint32_t flags = u32(ram, info);
  FUZZ_CHECK((flags & 0x24f) == 0x24f, "info flags {:#x}", flags);
  FUZZ_CHECK(u32(ram, info + 4) == 640 && u32(ram, info + 8) == (kRam - kFirstMiB) >> 10, "mem_lower/mem_upper");
  FUZZ_CHECK(string_at(ram, u32(ram, info + 16)) == "image a=b", "cmdline");
  FUZZ_CHECK(string_at(ram, u32(ram, info + 64)) == "topolab", "boot_loader_name");
  FUZZ_CHECK(u32(ram, info + 20) == modules.size(), "mods_count");
  const uint32_t mods = u32(ram, info + 24);
  FUZZ_CHECK(mods >= boot.image_end && uint64_t{mods} + 16 <= boot.end_of_boot_data, "mods_addr {:#x}", mods);
  const uint32_t mod_start = u32(ram, mods), mod_end = u32(ram, mods + 4);
  FUZZ_CHECK(mod_start >= boot.image_end && mod_start % 4096 == 0 && mod_end - mod_start == 3 &&
                 mod_end <= boot.end_of_boot_data,
             "module [{:#x}, {:#x})", mod_start, mod_end);
  FUZZ_CHECK(std::memcmp(ram.data() + mod_start, modules[0].bytes.data(), 3) == 0, "module bytes");
  FUZZ_CHECK(string_at(ram, u32(ram, mods + 8)) == "mod arg", "module string");
  const uint32_t mmap_length = u32(ram, info + 44), mmap = u32(ram, info + 48);
  FUZZ_CHECK(mmap_length % 24 == 0 && mmap >= boot.image_end && uint64_t{mmap} + mmap_length <= boot.end_of_boot_data,
             "mmap [{:#x}, +{:#x})", mmap, mmap_length);
  uint64_t ram_bytes = 0;
  for (uint32_t e = mmap; e < mmap + mmap_length; e += 24) {
    FUZZ_CHECK(u32(ram, e) == 20, "mmap entry size");
    const uint64_t base = ram.read<uint64_t>(e + 4), length = ram.read<uint64_t>(e + 12);
    if (u32(ram, e + 20) == 1) {
      FUZZ_CHECK(base + length <= kRam, "RAM region [{:#x}, +{:#x})", base, length);
      ram_bytes += length;
    }
  }
  FUZZ_CHECK(ram_bytes <= kRam, "mmap RAM {:#x}", ram_bytes);
  return 0;
}
