// SPDX-License-Identifier: GPL-2.0-or-later
#include "firmware/elf.h"

#include <algorithm>
#include <cstring>

#include <fmt/format.h>

#include "base/bytes.h"

namespace topolab::elf {

namespace {

constexpr uint8_t kLittleEndian = 1;  // e_ident[EI_DATA]: ELFDATA2LSB
constexpr uint16_t kMachine386 = 3, kMachineX86_64 = 62;

// Where each class keeps its header fields, and how long its entries are.
struct Layout {
  uint32_t header_size;
  uint32_t entry, phoff, shoff, phentsize, phnum, shentsize, shnum;  // offsets in the file header
  uint32_t phdr_size, shdr_size;
  uint16_t machine;
  const char* machine_name;
};
constexpr Layout kElf32{52, 24, 28, 32, 42, 44, 46, 48, 32, 40, kMachine386, "i386"};
constexpr Layout kElf64{64, 24, 32, 40, 54, 56, 58, 60, 56, 64, kMachineX86_64, "x86-64"};
constexpr const Layout& layout(Class c) { return c == Class::Elf32 ? kElf32 : kElf64; }

// An address-sized field: 4 bytes in ELF32, 8 in ELF64.
uint64_t load_word(std::span<const uint8_t> bytes, uint64_t offset, Class c) {
  return c == Class::Elf32 ? load_le<uint32_t>(bytes, offset) : load_le<uint64_t>(bytes, offset);
}

Segment read_segment(std::span<const uint8_t> bytes, uint64_t at, Class c) {
  Segment s;
  s.type = load_le<uint32_t>(bytes, at);
  if (c == Class::Elf32) {
    s.offset = load_le<uint32_t>(bytes, at + 4);
    s.paddr = load_le<uint32_t>(bytes, at + 12);
    s.filesz = load_le<uint32_t>(bytes, at + 16);
    s.memsz = load_le<uint32_t>(bytes, at + 20);
    s.flags = load_le<uint32_t>(bytes, at + 24);
    s.align = load_le<uint32_t>(bytes, at + 28);
  } else {
    s.flags = load_le<uint32_t>(bytes, at + 4);
    s.offset = load_le<uint64_t>(bytes, at + 8);
    s.paddr = load_le<uint64_t>(bytes, at + 24);
    s.filesz = load_le<uint64_t>(bytes, at + 32);
    s.memsz = load_le<uint64_t>(bytes, at + 40);
    s.align = load_le<uint64_t>(bytes, at + 48);
  }
  return s;
}

// The SHT_NOTE sections, when the section header table is sound.
std::vector<NoteArea> note_sections(std::span<const uint8_t> bytes, Class c) {
  const Layout& l = layout(c);
  const uint64_t shoff = load_word(bytes, l.shoff, c);
  const uint16_t shnum = load_le<uint16_t>(bytes, l.shnum);
  std::vector<NoteArea> notes;
  if (load_le<uint16_t>(bytes, l.shentsize) != l.shdr_size || !in_file(bytes, shoff, uint64_t{shnum} * l.shdr_size))
    return notes;
  // sh_offset, sh_size and sh_addralign sit at these offsets in each class.
  const uint32_t offset_at = c == Class::Elf32 ? 16 : 24, size_at = c == Class::Elf32 ? 20 : 32,
                 align_at = c == Class::Elf32 ? 32 : 48;
  for (uint64_t i = 0; i < shnum; ++i) {
    const uint64_t sh = shoff + i * l.shdr_size;
    if (load_le<uint32_t>(bytes, sh + 4) != kShtNote) continue;
    notes.push_back({load_word(bytes, sh + offset_at, c), load_word(bytes, sh + size_at, c),
                     load_word(bytes, sh + align_at, c)});
  }
  return notes;
}

}  // namespace

std::optional<Class> identify(std::span<const uint8_t> bytes) {
  if (bytes.size() < kElf32.header_size || std::memcmp(bytes.data(), "\x7f" "ELF", 4) != 0) return std::nullopt;
  if (bytes[4] == static_cast<uint8_t>(Class::Elf32)) return Class::Elf32;
  if (bytes[4] == static_cast<uint8_t>(Class::Elf64)) return Class::Elf64;
  return std::nullopt;
}

std::string problem(std::span<const uint8_t> bytes, Class elf_class) {
  const Layout& l = layout(elf_class);
  if (bytes.size() < l.header_size) return "the ELF header is cut short";
  if (bytes[5] != kLittleEndian) return "a big-endian ELF cannot be an x86 image";
  if (const uint16_t machine = load_le<uint16_t>(bytes, 18); machine != l.machine)
    return fmt::format("ELF machine {} is not {} ({})", machine, l.machine_name, l.machine);
  const uint16_t phnum = load_le<uint16_t>(bytes, l.phnum);
  if (phnum == 0) return "";  // nothing to check; the loader says whether it needs segments
  if (const uint16_t size = load_le<uint16_t>(bytes, l.phentsize); size != l.phdr_size)
    return fmt::format("ELF program header size {} is not {}", size, l.phdr_size);
  if (!in_file(bytes, load_word(bytes, l.phoff, elf_class), uint64_t{phnum} * l.phdr_size))
    return "the ELF program headers run past the end of the file";
  return "";
}

File read(std::span<const uint8_t> bytes, Class elf_class) {
  const Layout& l = layout(elf_class);
  File file;
  file.elf_class = elf_class;
  file.machine = load_le<uint16_t>(bytes, 18);
  file.entry = load_word(bytes, l.entry, elf_class);
  const uint64_t phoff = load_word(bytes, l.phoff, elf_class);
  const uint16_t phnum = load_le<uint16_t>(bytes, l.phnum);
  for (uint64_t i = 0; i < phnum; ++i) {
    file.segments.push_back(read_segment(bytes, phoff + i * l.phdr_size, elf_class));
    if (const Segment& s = file.segments.back(); s.type == kPtNote) file.notes.push_back({s.offset, s.filesz, s.align});
  }
  for (const NoteArea& area : note_sections(bytes, elf_class)) file.notes.push_back(area);
  return file;
}

std::optional<std::span<const uint8_t>> find_note(std::span<const uint8_t> bytes, const File& file,
                                                  std::string_view name, uint32_t type) {
  for (const NoteArea& area : file.notes) {
    if (!in_file(bytes, area.offset, area.size)) continue;
    const std::span<const uint8_t> notes = bytes.subspan(area.offset, area.size);
    // Each note is an Elf_Nhdr (namesz, descsz, type), its name and its
    // descriptor, each padded to the area's alignment (4, or 8 when asked).
    const uint64_t align = area.align == 8 ? 8 : 4;
    uint64_t at = 0;
    while (notes.size() - at >= 12) {
      const uint32_t namesz = load_le<uint32_t>(notes, at), descsz = load_le<uint32_t>(notes, at + 4);
      const uint64_t name_at = at + 12, desc_at = name_at + align_up(namesz, align);
      if (!in_file(notes, name_at, namesz) || !in_file(notes, desc_at, descsz)) break;
      if (load_le<uint32_t>(notes, at + 8) == type && namesz == name.size() + 1 &&
          std::memcmp(notes.data() + name_at, name.data(), name.size()) == 0 && notes[name_at + name.size()] == 0)
        return notes.subspan(desc_at, descsz);
      at = std::min<uint64_t>(desc_at + align_up(descsz, align), notes.size());
    }
  }
  return std::nullopt;
}

}  // namespace topolab::elf
