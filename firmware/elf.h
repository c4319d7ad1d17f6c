// SPDX-License-Identifier: GPL-2.0-or-later
// The one ELF reader of the loaders: the file header, the program headers
// and the note sections of a little-endian x86 ELF32 or ELF64, checked
// against the file's size, as the System V gABI lays them out ("ELF
// Header", "Program Header", "Sections", "Note Section"). Multiboot loads
// ELF32 images by their PT_LOAD segments; PVH loads ELF64 kernels by theirs
// and finds its entry in a note.
//
// Not read: symbols, relocations, dynamic sections, and section headers
// other than SHT_NOTE (a bad section header table is no error: a loader
// needs none, so notes are then taken from the segments alone).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace topolab::elf {

enum class Class : uint8_t { Elf32 = 1, Elf64 = 2 };  // e_ident[EI_CLASS]

inline constexpr uint32_t kPtLoad = 1, kPtNote = 4;  // p_type
inline constexpr uint32_t kPfExecute = 1;             // p_flags: PF_X
inline constexpr uint32_t kShtNote = 7;               // sh_type

// One program header, widened to 64 bits for both classes.
struct Segment {
  uint32_t type = 0;
  uint32_t flags = 0;
  uint64_t offset = 0, paddr = 0, filesz = 0, memsz = 0, align = 0;
  bool contains(uint64_t address) const { return address >= paddr && address - paddr < memsz; }
};

// A run of notes, from a PT_NOTE segment or an SHT_NOTE section.
struct NoteArea {
  uint64_t offset = 0, size = 0, align = 0;
};

struct File {
  Class elf_class = Class::Elf32;
  uint16_t machine = 0;
  uint64_t entry = 0;
  std::vector<Segment> segments;  // every program header, in file order
  std::vector<NoteArea> notes;    // the PT_NOTE segments, then the SHT_NOTE sections
};

// The class of `bytes` when it starts with ELF's magic and is long enough
// for the smallest ELF header; nullopt for anything else.
std::optional<Class> identify(std::span<const uint8_t> bytes);

// What keeps `bytes` (of the class `identify` said) from being a
// little-endian x86 ELF of that class whose headers lie in the file, in one
// line; "" when nothing does. The machine must be EM_386 for ELF32 and
// EM_X86_64 for ELF64.
std::string problem(std::span<const uint8_t> bytes, Class elf_class);

// The headers of a file `problem` accepted. Segment contents are not
// checked against the file: each loader says which of its segments runs
// past the end.
File read(std::span<const uint8_t> bytes, Class elf_class);

// The descriptor of the first note named `name` (without its NUL) of
// `type` in the file's note areas; a note cut short ends its area.
std::optional<std::span<const uint8_t>> find_note(std::span<const uint8_t> bytes, const File& file,
                                                  std::string_view name, uint32_t type);

// Whether [offset, offset + size) lies inside `bytes`, without overflow.
inline bool in_file(std::span<const uint8_t> bytes, uint64_t offset, uint64_t size) {
  return offset <= bytes.size() && size <= bytes.size() - offset;
}

}  // namespace topolab::elf
