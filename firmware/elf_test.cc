// SPDX-License-Identifier: GPL-2.0-or-later
#include "firmware/elf.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "base/bytes.h"
#include "firmware/fake_kernels.h"
#include "firmware/multiboot_test_image.h"

namespace topolab {
namespace {

std::vector<uint8_t> elf32(uint32_t paddr = 0x100000) { return make_elf(paddr, {0xf4, 0x90}, 0x10); }

TEST(Elf, IdentifiesTheClassOfAFileWithTheMagic) {
  EXPECT_EQ(elf::identify(elf32()), elf::Class::Elf32);
  EXPECT_EQ(elf::identify(FakeVmlinux{}.build()), elf::Class::Elf64);
}

TEST(Elf, IdentifiesNothingWithoutTheMagicOrAnUnknownClass) {
  std::vector<uint8_t> image = elf32();
  image[1] = 'e';
  EXPECT_FALSE(elf::identify(image));
  image = elf32();
  image[4] = 3;
  EXPECT_FALSE(elf::identify(image));
  EXPECT_FALSE(elf::identify(std::vector<uint8_t>{0x7f, 'E', 'L', 'F', 1, 1}));  // shorter than any header
}

TEST(Elf, ReadsTheProgramHeadersOfAnElf32) {
  const std::vector<uint8_t> image = elf32(0x200000);
  ASSERT_EQ(elf::problem(image, elf::Class::Elf32), "");
  const elf::File file = elf::read(image, elf::Class::Elf32);
  EXPECT_EQ(file.machine, 3);
  EXPECT_EQ(file.entry, 0x200000u);
  ASSERT_EQ(file.segments.size(), 1u);
  const elf::Segment& s = file.segments[0];
  EXPECT_EQ(s.type, elf::kPtLoad);
  EXPECT_EQ(s.offset, 0x100u);
  EXPECT_EQ(s.paddr, 0x200000u);
  EXPECT_EQ(s.filesz, 2u);
  EXPECT_EQ(s.memsz, 0x12u);
  EXPECT_EQ(s.flags, 5u);
  EXPECT_TRUE(s.contains(0x200011));
  EXPECT_FALSE(s.contains(0x200012));
}

TEST(Elf, ReadsTheProgramHeadersOfAnElf64WithItsNoteSegment) {
  const FakeVmlinux kernel;
  const std::vector<uint8_t> image = kernel.build();
  ASSERT_EQ(elf::problem(image, elf::Class::Elf64), "");
  const elf::File file = elf::read(image, elf::Class::Elf64);
  EXPECT_EQ(file.machine, 62);
  EXPECT_EQ(file.entry, 0xffffffff81000000u);
  ASSERT_EQ(file.segments.size(), 3u);
  EXPECT_EQ(file.segments[1].paddr, 0x1200000u);
  EXPECT_EQ(file.segments[1].filesz, 0x100u);
  EXPECT_EQ(file.segments[1].memsz, 0x4000u);
  EXPECT_EQ(file.segments[2].type, elf::kPtNote);
  ASSERT_EQ(file.notes.size(), 1u);
  EXPECT_EQ(file.notes[0].size, kernel.notes().size());
}

TEST(Elf, FindsANoteByNameAndTypeInASegmentOrASection) {
  for (bool in_segment : {true, false}) {
    FakeVmlinux kernel;
    kernel.note_in_segment = in_segment;
    kernel.note_in_section = !in_segment;
    const std::vector<uint8_t> image = kernel.build();
    const elf::File file = elf::read(image, elf::Class::Elf64);
    // The first Xen note is GUEST_OS (type 6): a match on the name alone would take it.
    const auto desc = elf::find_note(image, file, "Xen", 18);
    ASSERT_TRUE(desc) << "note in segment: " << in_segment;
    ASSERT_EQ(desc->size(), 8u);
    EXPECT_EQ(load_le<uint64_t>(*desc, 0), 0x1000850u);
    EXPECT_FALSE(elf::find_note(image, file, "Xe", 18));
    EXPECT_FALSE(elf::find_note(image, file, "Xen", 19));
  }
}

TEST(Elf, ANoteCutShortEndsItsArea) {
  FakeVmlinux kernel;
  std::vector<uint8_t> image = kernel.build();
  elf::File file = elf::read(image, elf::Class::Elf64);
  file.notes[0].size -= 4;  // the entry's descriptor now runs past the area
  EXPECT_FALSE(elf::find_note(image, file, "Xen", 18));
  file.notes[0].offset = image.size();  // an area outside the file is passed over
  EXPECT_FALSE(elf::find_note(image, file, "Xen", 18));
}

TEST(Elf, NamesWhatKeepsAFileFromBeingAnX86ElfOfItsClass) {
  std::vector<uint8_t> image = elf32();
  image[5] = 2;
  EXPECT_EQ(elf::problem(image, elf::Class::Elf32), "a big-endian ELF cannot be an x86 image");
  image = elf32();
  image[18] = 62;
  EXPECT_EQ(elf::problem(image, elf::Class::Elf32), "ELF machine 62 is not i386 (3)");
  FakeVmlinux arm;
  arm.machine = 183;
  EXPECT_EQ(elf::problem(arm.build(), elf::Class::Elf64), "ELF machine 183 is not x86-64 (62)");
  image = elf32();
  image[42] = 40;
  EXPECT_EQ(elf::problem(image, elf::Class::Elf32), "ELF program header size 40 is not 32");
  image = elf32();
  image[44] = 200;  // 200 program headers from offset 52
  EXPECT_EQ(elf::problem(image, elf::Class::Elf32), "the ELF program headers run past the end of the file");
  image = FakeVmlinux{}.build();
  image.resize(60);
  EXPECT_EQ(elf::problem(image, elf::Class::Elf64), "the ELF header is cut short");
}

TEST(Elf, AFileWithoutProgramHeadersHasNoProblemAndNoSegments) {
  std::vector<uint8_t> image = elf32();
  image[44] = 0;
  image[42] = 0;  // e_phentsize may be 0 when there are none
  ASSERT_EQ(elf::problem(image, elf::Class::Elf32), "");
  EXPECT_TRUE(elf::read(image, elf::Class::Elf32).segments.empty());
}

TEST(Elf, ABadSectionHeaderTableLeavesOnlyTheSegmentsNotes) {
  FakeVmlinux kernel;
  kernel.note_in_section = true;
  std::vector<uint8_t> image = kernel.build();
  EXPECT_EQ(elf::read(image, elf::Class::Elf64).notes.size(), 2u);
  image[58] = 40;  // e_shentsize wrong for ELF64
  EXPECT_EQ(elf::read(image, elf::Class::Elf64).notes.size(), 1u);
}

}  // namespace
}  // namespace topolab
