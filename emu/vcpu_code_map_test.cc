// SPDX-License-Identifier: GPL-2.0-or-later
// Code one vCPU rewrites while another vCPU's engine has it translated
// (emu/vcpu_code_map.h, Unicorn patch 0004): two real engines on one
// GuestRam, run one at a time, as a machine runs them.
#include "emu/vcpu_code_map.h"
#include "emu/vcpu_test_support.h"

#include "arch/register_file.h"

namespace topolab::vcpu_test {
namespace {

using vcpu_internal::CodeMap;

TEST(CodeMap, AFirstBlockProtectsThePageInTheOtherEngines) {
  CodeMap map;
  const unsigned a = map.join(), b = map.join(), c = map.join();
  map.code_added(a, 6);
  EXPECT_TRUE(map.holds(a, 6));
  EXPECT_FALSE(map.has_work(a));
  for (unsigned other : {b, c}) {
    ASSERT_TRUE(map.has_work(other));
    const CodeMap::Work work = map.take_work(other);
    EXPECT_EQ(work.protect, std::vector<uint64_t>{6});
    EXPECT_TRUE(work.invalidate.empty());
    EXPECT_FALSE(map.has_work(other));
  }
  map.code_added(a, 6);  // not the first block there: nothing new
  EXPECT_FALSE(map.has_work(b));
}

TEST(CodeMap, AStoreDropsTheOtherEnginesCodeOnThePage) {
  CodeMap map;
  const unsigned a = map.join(), b = map.join(), c = map.join();
  map.code_added(a, 6);
  map.code_added(b, 6);
  for (unsigned slot : {a, b, c}) map.take_work(slot);
  map.stored(b, 6);
  map.stored(b, 6);
  EXPECT_FALSE(map.holds(a, 6));
  EXPECT_TRUE(map.holds(b, 6));  // its own stores are the engine's own business
  EXPECT_FALSE(map.has_work(b));
  EXPECT_FALSE(map.has_work(c));  // no code there
  const CodeMap::Work work = map.take_work(a);
  EXPECT_EQ(work.invalidate, std::vector<uint64_t>{6});
  map.stored(c, 7);  // no code anywhere: nothing to do
  EXPECT_FALSE(map.has_work(a) || map.has_work(b));
}

TEST(CodeMap, AnEngineThatLeftIsForgotten) {
  CodeMap map;
  const unsigned a = map.join(), b = map.join();
  map.code_added(a, 6);
  map.leave(a);
  EXPECT_FALSE(map.holds(a, 6));
  map.take_work(b);
  map.stored(b, 6);
  EXPECT_EQ(map.join(), a);  // the slot is reused, with nothing to do
  EXPECT_FALSE(map.has_work(a));
}

// Engine A (the fixture's cpu) calls a function at 0x6000 that returns 1 in
// EAX; engine B rewrites it to return 2; A calls it again and must get 2.
class CrossEngineTest : public VcpuTest {
 protected:
  void TearDown() override { host_b.cpu = nullptr; }
  static constexpr uint64_t kFunction = 0x6000;
  static constexpr uint64_t kCodeB = 0x5000;

  void load_function() { load(kFunction, {0xb8, 0x01, 0x00, 0x00, 0x00, 0xc3}); }  // mov eax, 1; ret
  void set_rip_b(uint64_t rip) {
    std::array<uint8_t, 8> bytes{};
    for (unsigned i = 0; i < 8; ++i) bytes[i] = static_cast<uint8_t>(rip >> (8 * i));
    ASSERT_TRUE(b.write_register(x86::RegisterId::kRip, bytes));
  }
  void run_b() {
    const VcpuExit exit = b.run(kBudget);
    ASSERT_EQ(exit.reason, VcpuExit::Reason::Halt) << to_string(exit.reason) << ": " << exit.detail;
  }

  FakeHost host_b;
  UnicornVcpu b{1, ram, host_b};
};

// A, 32-bit with paging off: call the function, keep what it returned in
// ESI, halt; call it again, halt.
const Bytes kCaller32 = {
    0xbc, 0x00, 0x80, 0x00, 0x00,  // mov esp, 0x8000
    0xbb, 0x00, 0x60, 0x00, 0x00,  // mov ebx, 0x6000
    0xff, 0xd3,                    // call ebx
    0x89, 0xc6,                    // mov esi, eax
    0xf4,                          // hlt
    0xff, 0xd3,                    // call ebx
    0xf4,                          // hlt
};

// B never runs the function's page: its stores there took the fast path
// while no engine had code there (patch 0002), so A's first block on the
// page must put B's TLB entry back on the slow path, or B's rewrite is not
// seen and A runs its stale translation.
TEST_F(CrossEngineTest, AStoreByAnotherEngineIntoTranslatedCodeIsSeen) {
  host_b.cpu = &b;
  load_function();
  load(kCodeB, {
                   0xc6, 0x05, 0x00, 0x61, 0x00, 0x00, 0x00,  // mov byte [0x6100], 0 (no code there yet)
                   0xf4,                                      // hlt
                   0xc6, 0x05, 0x01, 0x60, 0x00, 0x00, 0x02,  // mov byte [0x6001], 2 (mov eax, 2)
                   0xf4,                                      // hlt
               });
  b.enter_multiboot(kCodeB, kMultibootMagic, kMultibootInfo);
  run_b();
  boot32(kCaller32);
  run_expecting(VcpuExit::Reason::Halt);
  EXPECT_EQ(cpu.state().rsi, 1u);
  run_b();
  run_expecting(VcpuExit::Reason::Halt);
  EXPECT_EQ(cpu.state().rax, 2u) << "engine A ran its stale translation of the rewritten function";
}

// B has the function translated too, and rewrites it: both engines run the
// new code.
TEST_F(CrossEngineTest, BothEnginesRunCodeOneOfThemRewrote) {
  host_b.cpu = &b;
  load_function();
  load(kCodeB, {
                   0xbc, 0x00, 0x78, 0x00, 0x00,              // mov esp, 0x7800
                   0xbb, 0x00, 0x60, 0x00, 0x00,              // mov ebx, 0x6000
                   0xff, 0xd3,                                // call ebx
                   0xf4,                                      // hlt
                   0xc6, 0x05, 0x01, 0x60, 0x00, 0x00, 0x02,  // mov byte [0x6001], 2 (mov eax, 2)
                   0xff, 0xd3,                                // call ebx
                   0xf4,                                      // hlt
               });
  boot32(kCaller32);
  run_expecting(VcpuExit::Reason::Halt);
  EXPECT_EQ(cpu.state().rsi, 1u);
  b.enter_multiboot(kCodeB, kMultibootMagic, kMultibootInfo);
  run_b();
  EXPECT_EQ(b.state().rax, 1u);
  run_b();
  EXPECT_EQ(b.state().rax, 2u);
  run_expecting(VcpuExit::Reason::Halt);
  EXPECT_EQ(cpu.state().rax, 2u) << "engine A ran its stale translation of the rewritten function";
}

// Long mode, and B writes through an alias (virtual 0x7000 maps physical
// 0x6000), as Linux's text_poke writes kernel text through a temporary
// mapping: the code map goes by physical page.
TEST_F(CrossEngineTest, AStoreThroughAnAliasByAnotherEngineIsSeen) {
  host_b.cpu = &b;
  adjust_tables = [this] { ram.write<uint64_t>(kPt + 8 * 7, 0x6000 | 0x3); };
  load_function();
  boot64({
      0xbc, 0x00, 0x80, 0x00, 0x00,  // 2001: mov esp, 0x8000
      0xbb, 0x00, 0x60, 0x00, 0x00,  // 2006: mov ebx, 0x6000
      0xff, 0xd3,                    // 200b: call rbx
      0x89, 0xc6,                    // 200d: mov esi, eax
      0xf4,                          // 200f: hlt
      0xff, 0xd3,                    // 2010: call rbx
      0xf4,                          // 2012: hlt
  });
  // B takes the same way into long mode, then runs its own code.
  b.enter_multiboot(kEntry, kMultibootMagic, kMultibootInfo);
  run_b();
  load(kCodeB, {
                   0xc6, 0x04, 0x25, 0x00, 0x71, 0x00, 0x00, 0x00,  // mov byte [0x7100], 0 (no code there yet)
                   0xf4,                                            // hlt
                   0xc6, 0x04, 0x25, 0x01, 0x70, 0x00, 0x00, 0x02,  // mov byte [0x7001], 2 (mov eax, 2)
                   0xf4,                                            // hlt
               });
  set_rip_b(kCodeB);
  run_b();
  run_expecting(VcpuExit::Reason::Halt);
  EXPECT_EQ(cpu.state().rsi, 1u);
  run_b();
  run_expecting(VcpuExit::Reason::Halt);
  EXPECT_EQ(cpu.state().rax, 2u) << "engine A ran its stale translation of the function rewritten through the alias";
}

}  // namespace
}  // namespace topolab::vcpu_test
