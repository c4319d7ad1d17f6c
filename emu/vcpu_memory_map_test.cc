// SPDX-License-Identifier: GPL-2.0-or-later
// The guest-physical map beyond RAM (emu/vcpu_memory_map.cc): device
// MMIO windows and open bus.
// One behaviour per test, each a tiny guest program with its instructions
// in comments (addresses on the left), in the style of Unicorn's
// tests/unit/test_x86.c; the fixtures are in emu/vcpu_test_support.h.
#include "emu/vcpu_test_support.h"

namespace topolab {
namespace {

using namespace vcpu_test;

// A physical address with no RAM and no device is open bus: loads read all
// ones, stores are dropped, both are counted, and the run goes on.
TEST_F(VcpuTest, OpenBusReadsAllOnesAndDropsStores) {
  boot32({
      0xa1, 0x00, 0x00, 0x00, 0x10,  // 1000: mov eax, [0x10000000]
      0xa3, 0x04, 0x00, 0x00, 0x10,  // 1005: mov [0x10000004], eax
      0xf4,                          // 100a: hlt
  });
  run_expecting(VcpuExit::Reason::Halt);
  EXPECT_EQ(cpu.state().rax, 0xFFFF'FFFFu);
  EXPECT_EQ(host.open_bus, (std::vector<std::tuple<uint64_t, unsigned, bool>>{{kUnmapped, 4, false},
                                                                            {kUnmapped + 4, 4, true}}));
  EXPECT_EQ(cpu.instructions(), 3u);
}

TEST_F(VcpuTest, FetchFromOpenBusIsUnsupportedAtTheTarget) {
  boot32({
      0xb8, 0x00, 0x00, 0x00, 0x10,  // 1000: mov eax, 0x10000000
      0xff, 0xe0,                    // 1005: jmp eax
  });
  const VcpuExit exit = run_expecting(VcpuExit::Reason::Unsupported);
  EXPECT_EQ(exit.rip, kUnmapped);
  EXPECT_NE(exit.detail.find("from physical 0x10000000, where there is no RAM"), std::string::npos) << exit.detail;
  EXPECT_EQ(cpu.instructions(), 2u);
}

// --- RAM above 4 GiB ------------------------------------------------------

// RAM in two regions as the pc machine lays out a large -m (kRamBytes from
// 0, then 4 MiB from 4 GiB): the engine maps each region on the shared
// host pages, and the gap and what lies above the top are open bus.
class HighRamVcpuTest : public VcpuTest {
 protected:
  static constexpr uint64_t kHigh = uint64_t{1} << 32;
  static constexpr uint64_t kPdHigh = 0x14000, kPdAlias = 0x15000;
  HighRamVcpuTest() : VcpuTest({{0, kRamBytes}, {kHigh, 4 << 20}}) {
    adjust_tables = [this] {
      // Linear 4 GiB up, identity, in 2 MiB pages: RAM, RAM, then above the top.
      ram.write<uint64_t>(kPdpt + 8 * 4, kPdHigh | 0x3);
      for (uint64_t i = 0; i < 3; ++i) ram.write<uint64_t>(kPdHigh + 8 * i, (kHigh + (i << 21)) | 0x83);
      // Linear 1 GiB -> the 2 MiB page at 4 GiB + 2 MiB: not an identity map.
      ram.write<uint64_t>(kPdpt + 8 * 1, kPdAlias | 0x3);
      ram.write<uint64_t>(kPdAlias, (kHigh + (1 << 21)) | 0x83);
    };
  }
};

TEST_F(HighRamVcpuTest, ReadsAndWritesRamAbove4GiBThroughPaging) {
  boot64({
      0x48, 0xb8, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00,  // mov rax, 0x100000000
      0xc7, 0x00, 0x78, 0x56, 0x34, 0x12,                          // mov dword [rax], 0x12345678
      0x48, 0xbb, 0x00, 0x00, 0x00, 0x40, 0x00, 0x00, 0x00, 0x00,  // mov rbx, 0x40000000
      0xc7, 0x03, 0xef, 0xbe, 0xad, 0xde,                          // mov dword [rbx], 0xdeadbeef
      0x8b, 0x08,                                                  // mov ecx, [rax]
      0x48, 0xba, 0x00, 0x00, 0x20, 0x00, 0x01, 0x00, 0x00, 0x00,  // mov rdx, 0x100200000
      0x8b, 0x12,                                                  // mov edx, [rdx]
      0x48, 0xbe, 0x00, 0x00, 0x40, 0x00, 0x01, 0x00, 0x00, 0x00,  // mov rsi, 0x100400000 (above the top)
      0x8b, 0x36,                                                  // mov esi, [rsi]
      0xf4,                                                        // hlt
  });
  run_expecting(VcpuExit::Reason::Halt);
  EXPECT_EQ(ram.read<uint32_t>(kHigh), 0x12345678u);
  EXPECT_EQ(ram.read<uint32_t>(kHigh + (1 << 21)), 0xdeadbeefu);
  EXPECT_EQ(cpu.state().rcx, 0x12345678u);
  EXPECT_EQ(cpu.state().rdx, 0xdeadbeefu) << "the store through the alias is the identity map's byte";
  EXPECT_EQ(cpu.state().rsi, 0xffffffffu);
  EXPECT_EQ(host.open_bus, (std::vector<std::tuple<uint64_t, unsigned, bool>>{{kHigh + (4 << 20), 4, false}}));
}

TEST_F(HighRamVcpuTest, TheGapBelow4GiBIsOpenBus) {
  boot32({
      0xa1, 0x00, 0x00, 0x00, 0x10,  // 1000: mov eax, [0x10000000]
      0xa3, 0x00, 0x00, 0x00, 0x10,  // 1005: mov [0x10000000], eax
      0xf4,                          // 100a: hlt
  });
  run_expecting(VcpuExit::Reason::Halt);
  EXPECT_EQ(cpu.state().rax, 0xFFFF'FFFFu);
  EXPECT_EQ(host.open_bus, (std::vector<std::tuple<uint64_t, unsigned, bool>>{{kUnmapped, 4, false},
                                                                            {kUnmapped, 4, true}}));
}

// --- MMIO -----------------------------------------------------------------

class FakeMmio final : public MmioHandler {
 public:
  struct Access {
    uint64_t offset;
    unsigned size;
    uint64_t value;
    bool operator==(const Access&) const = default;
  };
  uint64_t read(uint64_t offset, unsigned size) override {
    reads.push_back({offset, size, value});
    return value;
  }
  void write(uint64_t offset, unsigned size, uint64_t v) override {
    writes.push_back({offset, size, v});
    if (on_write) on_write();
  }
  uint64_t value = 0;
  std::vector<Access> reads, writes;
  std::function<void()> on_write;
};

TEST_F(VcpuTest, MmioAccessesOfOneTwoAndFourBytesReachTheHandler) {
  FakeMmio apic;
  apic.value = 0x1234'5678;
  cpu.map_mmio(kApicBase, 4096, apic);
  boot32({
      0xa1, 0x20, 0x00, 0xe0, 0xfe,                    // 1000: mov eax, [0xfee00020]
      0x89, 0x1d, 0x00, 0x03, 0xe0, 0xfe,              // 1005: mov [0xfee00300], ebx
      0x66, 0x8b, 0x0d, 0x30, 0x00, 0xe0, 0xfe,        // 100b: mov cx, [0xfee00030]
      0xc6, 0x05, 0x80, 0x00, 0xe0, 0xfe, 0x05,        // 1012: mov byte [0xfee00080], 5
      0xf4,                                            // 1019: hlt
  });
  run_expecting(VcpuExit::Reason::Halt);
  EXPECT_EQ(apic.reads, (std::vector<FakeMmio::Access>{{0x20, 4, 0x1234'5678}, {0x30, 2, 0x1234'5678}}));
  EXPECT_EQ(apic.writes, (std::vector<FakeMmio::Access>{{0x300, 4, kMultibootInfo}, {0x80, 1, 5}}));
  EXPECT_EQ(cpu.state().rax, 0x1234'5678u);
  EXPECT_EQ(cpu.state().rcx & 0xFFFF, 0x5678u);
}

// An ICR write requests a stop. The stop is taken at the next block, so
// the write and the instructions after it in its block run exactly once.
TEST_F(VcpuTest, RequestStopFromAnMmioWriteDoesNotReplayTheWrite) {
  FakeMmio apic;
  apic.on_write = [&] { cpu.request_stop(); };
  cpu.map_mmio(kApicBase, 4096, apic);
  boot32({
      0x43,                                // 1000: inc ebx
      0x89, 0x1d, 0x00, 0x03, 0xe0, 0xfe,  // 1001: mov [0xfee00300], ebx
      0x43,                                // 1007: inc ebx
      0x41,                                // 1008: inc ecx
      0xeb, 0x00,                          // 1009: jmp 0x100b
      0x43,                                // 100b: inc ebx
      0xf4,                                // 100c: hlt
  });
  const VcpuExit exit = run_expecting(VcpuExit::Reason::StopRequested);
  EXPECT_EQ(exit.rip, 0x100bu);
  EXPECT_EQ(apic.writes, (std::vector<FakeMmio::Access>{{0x300, 4, kMultibootInfo + 1}}));
  EXPECT_EQ(cpu.state().rbx, kMultibootInfo + 2);
  EXPECT_EQ(cpu.state().rcx, 1u);
  EXPECT_EQ(cpu.instructions(), 5u);
  run_expecting(VcpuExit::Reason::Halt);
  EXPECT_EQ(apic.writes.size(), 1u);
  EXPECT_EQ(cpu.state().rbx, kMultibootInfo + 3);
  EXPECT_EQ(cpu.instructions(), 7u);
}

TEST_F(VcpuTest, MmioWindowRelocates) {
  FakeMmio apic;
  apic.value = 7;
  cpu.map_mmio(kApicBase, 4096, apic);
  cpu.unmap_mmio(kApicBase, 4096);
  cpu.map_mmio(0xFED0'0000, 4096, apic);
  boot32({
      0xa1, 0x20, 0x00, 0xd0, 0xfe,  // 1000: mov eax, [0xfed00020]
      0xf4,                          // 1005: hlt
      0xa1, 0x20, 0x00, 0xe0, 0xfe,  // 1006: mov eax, [0xfee00020]
      0xf4,                          // 100b: hlt
  });
  run_expecting(VcpuExit::Reason::Halt);
  EXPECT_EQ(apic.reads, (std::vector<FakeMmio::Access>{{0x20, 4, 7}}));
  run_expecting(VcpuExit::Reason::Halt);  // the old page is open bus now
  EXPECT_EQ(host.open_bus.size(), 1u);
}

// Open bus is mapped a 1 GiB window at a time (F12 in docs/reliability.md):
// a device mapped into a window already open takes its place there, and
// open bus takes the place back when the device goes.
TEST_F(VcpuTest, ADeviceMappedIntoAnOpenBusWindowTakesItsPlace) {
  FakeMmio apic;
  apic.value = 7;
  boot32({
      0xa1, 0x00, 0x00, 0xc0, 0xfe,  // 1000: mov eax, [0xfec00000] (open bus: its window opens)
      0xf4,                          // 1005: hlt
      0xa1, 0x20, 0x00, 0xe0, 0xfe,  // 1006: mov eax, [0xfee00020]
      0xf4,                          // 100b: hlt
      0xa1, 0x24, 0x00, 0xe0, 0xfe,  // 100c: mov eax, [0xfee00024]
      0xf4,                          // 1011: hlt
  });
  run_expecting(VcpuExit::Reason::Halt);
  EXPECT_EQ(host.open_bus.size(), 1u);
  cpu.map_mmio(kApicBase, 4096, apic);
  run_expecting(VcpuExit::Reason::Halt);
  EXPECT_EQ(apic.reads, (std::vector<FakeMmio::Access>{{0x20, 4, 7}}));
  EXPECT_EQ(cpu.state().rax, 7u);
  cpu.unmap_mmio(kApicBase, 4096);
  run_expecting(VcpuExit::Reason::Halt);
  EXPECT_EQ(cpu.state().rax, 0xFFFF'FFFFu);
  EXPECT_EQ(host.open_bus, (std::vector<std::tuple<uint64_t, unsigned, bool>>{{0xFEC0'0000, 4, false},
                                                                            {0xFEE0'0024, 4, false}}));
}

TEST_F(VcpuTest, MmioWindowMustBeWholePagesOutsideRam) {
  FakeMmio apic;
  EXPECT_THROW(cpu.map_mmio(kApicBase + 1, 4096, apic), std::invalid_argument);
  EXPECT_THROW(cpu.map_mmio(0x1000, 4096, apic), std::invalid_argument);
  EXPECT_THROW(cpu.unmap_mmio(kApicBase, 4096), std::invalid_argument);
  cpu.map_mmio(kApicBase, 4096, apic);
  EXPECT_THROW(cpu.map_mmio(kApicBase, 4096, apic), std::invalid_argument);
}

}  // namespace
}  // namespace topolab
