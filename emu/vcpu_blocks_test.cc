// SPDX-License-Identifier: GPL-2.0-or-later
// What the vCPU knows of guest code with no engine involved (vcpu_blocks.h):
// Capstone's decoding of a block, its trap sites, shadows, REP strings and
// counted loops, and the cache of decoded blocks. No Unicorn here.
#include "emu/vcpu_blocks.h"

#include <cstdio>
#include <memory>

#include <gtest/gtest.h>

#include <vector>

namespace topolab {
namespace {

using namespace vcpu_internal;
using Bytes = std::vector<uint8_t>;

DecodedBlock decode(const Bytes& code, CodeSize size, uint64_t address = 0x1000) {
  Disassembler disassembler;
  return disassembler.decode_block(code, address, size);
}

TEST(VcpuBlocks, DecodesInstructionStartsAndCounts) {
  const DecodedBlock b = decode(
      {
          0xb9, 0x0a, 0x00, 0x00, 0x00,  // 1000: mov ecx, 10
          0x01, 0xc8,                    // 1005: add eax, ecx
          0xf4,                          // 1007: hlt
      },
      CodeSize::Bits32);
  EXPECT_EQ(b.count, 3u);
  EXPECT_EQ(b.offsets, (std::vector<uint16_t>{0, 5, 7}));
  EXPECT_EQ(b.end(), 0x1008u);
  EXPECT_EQ(b.address_of(2), 0x1007u);
  EXPECT_EQ(b.instructions_before(0x1000), 0u);
  EXPECT_EQ(b.instructions_before(0x1007), 2u);
  EXPECT_EQ(b.instructions_before(0x2000), 3u);  // outside: it ran to its end
  EXPECT_TRUE(b.ends_with_hlt);
  EXPECT_TRUE(b.fully_decoded);
  EXPECT_TRUE(b.has_side_effects);  // HLT is an exit
  EXPECT_FALSE(decode({0xb9, 0x0a, 0x00, 0x00, 0x00, 0x01, 0xc8}, CodeSize::Bits32).has_side_effects);
  EXPECT_TRUE(b.traps.empty());
}

TEST(VcpuBlocks, AStoreOrAnUndecodableByteIsASideEffect) {
  EXPECT_TRUE(decode({0x89, 0x03}, CodeSize::Bits32).has_side_effects);  // mov [ebx], eax
  EXPECT_FALSE(decode({0x8b, 0x03}, CodeSize::Bits32).has_side_effects);  // mov eax, [ebx]
  const DecodedBlock bad = decode({0x90, 0x0f, 0x04}, CodeSize::Bits64);  // nop; (no instruction)
  EXPECT_FALSE(bad.fully_decoded);
  EXPECT_TRUE(bad.has_side_effects);
  EXPECT_EQ(bad.count, 2u);  // the rest counts as one
}

// The sites the engine hooks; RDMSR and WRMSR are none (their instruction
// hooks answer them, engine patch 0003).
TEST(VcpuBlocks, TrapSitesAreTheInstructionsTheEngineCannotRun) {
  const DecodedBlock b = decode(
      {
          0x0f, 0x32,        // 1000: rdmsr
          0x0f, 0x30,        // 1002: wrmsr
          0xf3, 0x90,        // 1004: pause
          0x0f, 0x01, 0xc8,  // 1006: monitor
          0x0f, 0x01, 0xc9,  // 1009: mwait
          0x0f, 0x05,        // 100c: syscall
      },
      CodeSize::Bits64);
  ASSERT_EQ(b.traps.size(), 4u);
  EXPECT_EQ(b.traps[0].kind, TrapKind::Pause);
  EXPECT_EQ(b.traps[0].address, 0x1004u);
  EXPECT_EQ(b.traps[1].kind, TrapKind::Monitor);
  EXPECT_EQ(b.traps[1].length, 3u);
  EXPECT_EQ(b.traps[2].kind, TrapKind::Mwait);
  EXPECT_EQ(b.traps[3].kind, TrapKind::Syscall);
  EXPECT_TRUE(b.has_side_effects);
}

TEST(VcpuBlocks, MovCr8IsASiteOnlyIn64BitCode) {
  const std::optional<Cr8Access> to = cr8_access(Bytes{0x44, 0x0f, 0x22, 0xc1}, CodeSize::Bits64);  // mov cr8, rcx
  ASSERT_TRUE(to);
  EXPECT_EQ(to->kind, TrapKind::MovToCr8);
  EXPECT_EQ(to->gpr, 1u);
  const std::optional<Cr8Access> from = cr8_access(Bytes{0x4d, 0x0f, 0x20, 0xc7}, CodeSize::Bits64);  // mov r15, cr8
  ASSERT_TRUE(from);
  EXPECT_EQ(from->kind, TrapKind::MovFromCr8);
  EXPECT_EQ(from->gpr, 15u);
  EXPECT_FALSE(cr8_access(Bytes{0x0f, 0x22, 0xc0}, CodeSize::Bits64));  // mov cr0, rax
  const std::optional<Cr8Access> cr4 = cr8_access(Bytes{0x0f, 0x22, 0xe0}, CodeSize::Bits32);  // mov cr4, eax
  ASSERT_TRUE(cr4);
  EXPECT_EQ(cr4->kind, TrapKind::MovToCr4);
  EXPECT_FALSE(cr8_access(Bytes{0x0f, 0x22, 0xe0}, CodeSize::Bits16));
}

TEST(VcpuBlocks, StiMovSsAndPopSsSetTheShadow) {
  EXPECT_TRUE(sets_interrupt_shadow(Bytes{0xfb}, CodeSize::Bits32));        // sti
  EXPECT_TRUE(sets_interrupt_shadow(Bytes{0x8e, 0xd0}, CodeSize::Bits32));  // mov ss, ax
  EXPECT_FALSE(sets_interrupt_shadow(Bytes{0x8e, 0xd8}, CodeSize::Bits32));  // mov ds, ax
  EXPECT_TRUE(sets_interrupt_shadow(Bytes{0x17}, CodeSize::Bits32));        // pop ss
  EXPECT_FALSE(sets_interrupt_shadow(Bytes{0x17}, CodeSize::Bits64));       // no pop ss in 64-bit mode
  EXPECT_TRUE(decode({0x90, 0xfb}, CodeSize::Bits32).ends_with_interrupt_shadow);
}

TEST(VcpuBlocks, RepStringsAreRecognisedByTheirPrefixAndOpcode) {
  EXPECT_TRUE(is_rep_string(Bytes{0xf3, 0xa4}, CodeSize::Bits32));        // rep movsb
  EXPECT_TRUE(is_rep_string(Bytes{0xf3, 0x48, 0xab}, CodeSize::Bits64));  // rep stosq
  EXPECT_FALSE(is_rep_string(Bytes{0xf3, 0x90}, CodeSize::Bits32));       // pause
  EXPECT_FALSE(is_rep_string(Bytes{0xa4}, CodeSize::Bits32));             // movsb, once
  EXPECT_EQ(decode({0x90, 0xf3, 0xa4}, CodeSize::Bits32).rep_string_tail, 0x1001u);
}

TEST(VcpuBlocks, CountedLoopsAreDecrementAndBranchToTheStart) {
  const DecodedBlock dec = decode({0xf3, 0x90, 0x49, 0x75, 0xfb}, CodeSize::Bits32);  // pause; dec ecx; jnz 0x1000
  ASSERT_TRUE(dec.counted_loop);
  EXPECT_EQ(dec.counted_loop->counter, X86_REG_RCX);
  EXPECT_EQ(dec.counted_loop->width, 4u);
  EXPECT_EQ(dec.counted_loop->pauses, 1u);
  EXPECT_EQ(dec.counted_loop->turns(5), 5u);
  EXPECT_EQ(dec.counted_loop->turns(0x1'0000'0005), 5u);  // 32-bit counter

  const DecodedBlock jae = decode({0x48, 0x83, 0xe8, 0x01, 0x73, 0xfa}, CodeSize::Bits64);  // sub rax, 1; jae 0x1000
  ASSERT_TRUE(jae.counted_loop);
  EXPECT_EQ(jae.counted_loop->width, 8u);
  EXPECT_TRUE(jae.counted_loop->runs_counter_plus_one);
  EXPECT_EQ(jae.counted_loop->turns(5), 6u);

  EXPECT_FALSE(decode({0x49, 0x75, 0x00}, CodeSize::Bits32).counted_loop);        // jnz to the next instruction
  EXPECT_FALSE(decode({0x40, 0x49, 0x75, 0xfc}, CodeSize::Bits32).counted_loop);  // inc eax changes another register
  EXPECT_FALSE(decode({0x4c, 0x75, 0xfd}, CodeSize::Bits32).counted_loop);        // dec esp
}

TEST(VcpuBlocks, LoopsWithoutEffectsOnlyReadAndJumpBackToTheirStart) {
  // 1000: cmp dword [0x5000], 0; je 0x1000
  EXPECT_TRUE(decode({0x83, 0x3d, 0x00, 0x50, 0x00, 0x00, 0x00, 0x74, 0xf7}, CodeSize::Bits32).loops_without_effects);
  EXPECT_TRUE(decode({0xeb, 0xfe}, CodeSize::Bits32).loops_without_effects);  // jmp .
  // A store, a PAUSE (the PLE detector's), a time read, a counted loop, a
  // jump elsewhere: none.
  EXPECT_FALSE(decode({0x89, 0x03, 0xeb, 0xfc}, CodeSize::Bits32).loops_without_effects);
  EXPECT_FALSE(decode({0xf3, 0x90, 0xeb, 0xfc}, CodeSize::Bits32).loops_without_effects);
  EXPECT_FALSE(decode({0x0f, 0x31, 0xeb, 0xfc}, CodeSize::Bits32).loops_without_effects);
  EXPECT_FALSE(decode({0x49, 0x75, 0xfd}, CodeSize::Bits32).loops_without_effects);  // dec ecx; jnz
  EXPECT_FALSE(decode({0x85, 0xc0, 0x74, 0x00}, CodeSize::Bits32).loops_without_effects);
}

TEST(VcpuBlocks, CacheFindsABlockByStartAndSize) {
  BlockCache cache(1 << 20);
  DecodedBlock b = decode({0x90, 0xf4}, CodeSize::Bits32, 0x5000);
  cache.insert(b);
  ASSERT_NE(cache.find(0x5000, 2), nullptr);
  EXPECT_EQ(cache.find(0x5000, 2)->count, 2u);
  EXPECT_EQ(cache.find(0x5000, 3), nullptr);  // another block starts there now
  EXPECT_EQ(cache.find(0x5001, 1), nullptr);

  // A higher-half block, far beyond RAM, and one that replaces the first.
  cache.insert(decode({0xf4}, CodeSize::Bits64, 0xFFFF'FFFF'8000'0000));
  ASSERT_NE(cache.find(0xFFFF'FFFF'8000'0000, 1), nullptr);
  const DecodedBlock* old = cache.find(0x5000, 2);
  cache.insert(decode({0xf4, 0x90}, CodeSize::Bits32, 0x5000));
  EXPECT_TRUE(cache.find(0x5000, 2)->ends_with_hlt == false);
  EXPECT_EQ(old->count, 2u);  // still allocated: a `next` may point at it
  EXPECT_EQ(cache.code_pages(), (std::vector<uint64_t>{0x5000, 0xFFFF'FFFF'8000'0000}));
  cache.clear();
  EXPECT_EQ(cache.find(0x5000, 2), nullptr);
  EXPECT_TRUE(cache.code_pages().empty());
}

long resident_kib() {
  long pages = 0, resident = 0;
  std::FILE* f = std::fopen("/proc/self/statm", "r");
  if (!f || std::fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = -1;
  if (f) std::fclose(f);
  return resident * 4;
}

// A vCPU of a guest with 3 GiB below 4 GiB: its table spans 3 GiB of
// linear addresses, but only the entries of pages with code are backed.
// 64 such vCPUs would hold 384 MiB of zeroed tables otherwise.
TEST(VcpuBlocks, ATableOverGibibytesCostsOnlyThePagesWithCode) {
  const long before = resident_kib();
  ASSERT_GT(before, 0);
  std::vector<std::unique_ptr<BlockCache>> caches;
  for (int i = 0; i < 64; ++i) {
    caches.push_back(std::make_unique<BlockCache>(uint64_t{3} << 30));
    caches.back()->insert(decode({0xf4}, CodeSize::Bits32, 0xbfff'f000));  // the last page below 3 GiB
  }
  EXPECT_LT(resident_kib() - before, 64 * 1024) << "KiB";
  ASSERT_NE(caches[5]->find(0xbfff'f000, 1), nullptr);
  EXPECT_EQ(caches[5]->code_pages(), (std::vector<uint64_t>{0xbfff'f000}));
}

}  // namespace
}  // namespace topolab
