// SPDX-License-Identifier: GPL-2.0-or-later
// Test-only: kernel images built in memory, with only the fields the
// loaders read: a Linux bzImage and an ELF64 vmlinux with the PVH note, for
// the loaders', the ELF reader's and the boot step's tests.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace topolab {
namespace {

// A bzImage as the kernel's build lays one out, with only the fields the
// loader reads: `setup_sects` sectors of setup after the boot sector, then
// `payload` as the protected-mode kernel.
struct FakeKernel {
  uint16_t protocol = 0x20f;
  uint8_t setup_sects = 4;
  uint8_t loadflags = 0x01;  // LOADED_HIGH
  uint32_t cmdline_size = 2047;
  uint32_t initrd_addr_max = 0x7fffffff;
  uint64_t pref_address = 0x1000000;
  uint32_t init_size = 8 << 20;
  std::vector<uint8_t> payload = std::vector<uint8_t>(4096, 0x90);

  std::vector<uint8_t> build() const {
    std::vector<uint8_t> image((setup_sects + 1) * 512, 0);
    auto put = [&](size_t at, auto v) { std::memcpy(image.data() + at, &v, sizeof v); };
    image[0x1f1] = setup_sects;
    image[0x1ef] = 0xff;  // a byte before the header the loader must not copy (the sentinel)
    put(0x1f4, static_cast<uint32_t>(payload.size() / 16));
    put(0x1fe, uint16_t{0xaa55});
    image[0x201] = 0x6a;  // the header runs to 0x26c
    put(0x202, uint32_t{0x53726448});
    put(0x206, protocol);
    image[0x211] = loadflags;
    put(0x214, uint32_t{0x100000});
    put(0x22c, initrd_addr_max);
    put(0x238, cmdline_size);
    put(0x258, pref_address);
    put(0x260, init_size);
    image.insert(image.end(), payload.begin(), payload.end());
    return image;
  }
};

// An ELF64 laid out as Linux's vmlinux is, with only what the loader reads:
// the header, a program header table (the PT_LOAD segments, then a PT_NOTE
// unless `note_in_segment` is off), the segments' bytes, the notes, and a
// section header table with the notes as SHT_NOTE when `note_in_section`.
struct FakeVmlinux {
  struct Segment {
    uint64_t paddr;
    std::vector<uint8_t> bytes;
    uint64_t memsz;  // bytes.size() and more for a bss
  };
  uint8_t elf_class = 2;
  uint16_t machine = 62;
  std::vector<Segment> segments = {{0x1000000, std::vector<uint8_t>(0x3000, 0x90), 0x3000},
                                   {0x1200000, std::vector<uint8_t>(0x100, 0x11), 0x4000}};
  uint64_t entry = 0x1000850;
  uint32_t entry_size = 8;       // Linux's _ASM_PTR on x86-64
  uint32_t entry_type = 18;      // XEN_ELFNOTE_PHYS32_ENTRY
  std::string note_owner = "Xen";
  bool note_in_segment = true, note_in_section = false;

  std::vector<uint8_t> notes() const {
    std::vector<uint8_t> out;
    auto put32 = [&](uint32_t v) {
      for (int i = 0; i < 4; ++i) out.push_back(static_cast<uint8_t>(v >> (8 * i)));
    };
    auto pad = [&] { out.resize((out.size() + 3) / 4 * 4, 0); };
    // Another Xen note first (XEN_ELFNOTE_GUEST_OS "linux"), which must be skipped.
    put32(4), put32(6), put32(6);
    out.insert(out.end(), {'X', 'e', 'n', 0, 'l', 'i', 'n', 'u', 'x', 0});
    pad();
    put32(static_cast<uint32_t>(note_owner.size() + 1)), put32(entry_size), put32(entry_type);
    out.insert(out.end(), note_owner.begin(), note_owner.end());
    out.push_back(0);
    pad();
    for (uint32_t i = 0; i < entry_size; ++i) out.push_back(static_cast<uint8_t>(entry >> (8 * i)));
    pad();
    return out;
  }

  std::vector<uint8_t> build() const {
    const size_t phnum = segments.size() + (note_in_segment ? 1 : 0);
    std::vector<uint8_t> image(64 + 56 * phnum, 0);
    auto put = [&](size_t at, auto v) { std::memcpy(image.data() + at, &v, sizeof v); };
    std::memcpy(image.data(), "\x7f" "ELF", 4);
    image[4] = elf_class;
    image[5] = 1;  // little-endian
    image[6] = 1;
    put(16, uint16_t{2});  // ET_EXEC
    put(18, machine);
    put(24, uint64_t{0xffffffff81000000});  // e_entry, the 64-bit virtual one the loader ignores
    put(32, uint64_t{64});
    put(52, uint16_t{64});
    put(54, uint16_t{56});
    put(56, static_cast<uint16_t>(phnum));
    put(58, uint16_t{64});
    for (size_t i = 0; i < segments.size(); ++i) {
      const size_t ph = 64 + 56 * i, offset = image.size();
      image.insert(image.end(), segments[i].bytes.begin(), segments[i].bytes.end());
      put(ph, uint32_t{1});
      put(ph + 8, uint64_t{offset});
      put(ph + 16, segments[i].paddr + 0xffffffff80000000);
      put(ph + 24, segments[i].paddr);
      put(ph + 32, uint64_t{segments[i].bytes.size()});
      put(ph + 40, segments[i].memsz);
    }
    const std::vector<uint8_t> n = notes();
    const size_t notes_at = image.size();
    image.insert(image.end(), n.begin(), n.end());
    if (note_in_segment) {
      const size_t ph = 64 + 56 * segments.size();
      put(ph, uint32_t{4});
      put(ph + 8, uint64_t{notes_at});
      put(ph + 32, uint64_t{n.size()});
      put(ph + 40, uint64_t{n.size()});
      put(ph + 48, uint64_t{4});
    }
    if (note_in_section) {
      const size_t shoff = image.size();
      image.resize(shoff + 2 * 64, 0);  // the null section, then .notes
      put(40, uint64_t{shoff});
      put(60, uint16_t{2});
      put(shoff + 64 + 4, uint32_t{7});
      put(shoff + 64 + 24, uint64_t{notes_at});
      put(shoff + 64 + 32, uint64_t{n.size()});
      put(shoff + 64 + 48, uint64_t{4});
    }
    return image;
  }
};

}  // namespace
}  // namespace topolab
