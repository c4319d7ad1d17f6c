// SPDX-License-Identifier: GPL-2.0-or-later
#include "arch/event_delivery.h"

#include <gtest/gtest.h>

#include "arch/fake_linear_memory.h"
#include "arch/x86_test_printers.h"

namespace topolab::x86 {
namespace {

// One small guest for every test. Linear memory 0..0x20000:
//   0x1000 GDT, 0x2000 IDT, 0x3000 TSS, ring-3 stack below 0x8000, ring-0
//   stack below 0x9000, IST1 stack below 0xa000.
constexpr uint64_t kGdt = 0x1000, kIdt = 0x2000, kTss = 0x3000;
constexpr uint16_t kCode0 = 0x08, kData0 = 0x10, kCode3 = 0x1b, kData3 = 0x23, kTr = 0x28;
constexpr uint16_t kConforming0 = 0x30, kAbsentCode0 = 0x38, kCode64_0 = 0x40, kCode64_3 = 0x4b;
constexpr uint16_t kBeyondGdt = 0x80;
constexpr uint64_t kHandler = 0x5000;

const SegmentDescriptor kFlatCode0 = decode_descriptor(0x00cf9b000000ffff);
const SegmentDescriptor kFlatData0 = decode_descriptor(0x00cf93000000ffff);
const SegmentDescriptor kFlatCode3 = decode_descriptor(0x00cffb000000ffff);
const SegmentDescriptor kFlatData3 = decode_descriptor(0x00cff3000000ffff);
const SegmentDescriptor kLongCode0 = decode_descriptor(0x00af9b000000ffff);
const SegmentDescriptor kLongCode3 = decode_descriptor(0x00affb000000ffff);

struct Guest {
  FakeLinearMemory mem;
  CpuState cpu;
  bool long_mode;

  explicit Guest(CpuMode mode, unsigned cpl) : long_mode(is_ia32e(mode)) {
    mem.put<uint64_t>(kGdt + kCode0, encode_descriptor(kFlatCode0));
    mem.put<uint64_t>(kGdt + kData0, encode_descriptor(kFlatData0));
    mem.put<uint64_t>(kGdt + (kCode3 & ~3), encode_descriptor(kFlatCode3));
    mem.put<uint64_t>(kGdt + (kData3 & ~3), encode_descriptor(kFlatData3));
    mem.put<uint64_t>(kGdt + kConforming0, 0x00cf9f000000ffff);
    mem.put<uint64_t>(kGdt + kAbsentCode0, 0x00cf1b000000ffff);
    mem.put<uint64_t>(kGdt + kCode64_0, encode_descriptor(kLongCode0));
    mem.put<uint64_t>(kGdt + (kCode64_3 & ~3), encode_descriptor(kLongCode3));
    cpu.mode = mode;
    cpu.cpl = cpl;
    cpu.gdtr = {.base = kGdt, .limit = 0x4f};
    cpu.idtr = {.base = kIdt, .limit = long_mode ? 0xfffu : 0x7ffu};
    cpu.tr = {.selector = kTr, .desc = {.base = kTss, .limit = 0x67, .type = kType32BitTssBusy, .p = true}};
    if (long_mode) {
      cpu.cs = cpl == 3 ? Segment{kCode64_3, kLongCode3} : Segment{kCode64_0, kLongCode0};
      cpu.ss = cpl == 3 ? Segment{kData3, kFlatData3} : Segment{kData0, kFlatData0};
      mem.put<uint64_t>(kTss + kTss64Rsp0, 0x9000);
      mem.put<uint64_t>(kTss + kTss64Ist1, 0xa000);
    } else {
      cpu.cs = cpl == 3 ? Segment{kCode3, kFlatCode3} : Segment{kCode0, kFlatCode0};
      cpu.ss = cpl == 3 ? Segment{kData3, kFlatData3} : Segment{kData0, kFlatData0};
      mem.put<uint32_t>(kTss + kTss32Esp0, 0x9000);
      mem.put<uint16_t>(kTss + kTss32Ss0, kData0);
    }
    cpu.rip = 0x401000;
    cpu.rsp = cpl == 3 ? 0x8000 : 0x9000;
    cpu.rflags = kFlagReserved1 | kFlagIf | kFlagTf | kFlagZf;
    for (unsigned v = 0; v < 256; ++v) gate(static_cast<uint8_t>(v), kType32BitInterruptGate);
  }

  void gate(uint8_t vector, uint8_t type, uint16_t selector = 0, uint8_t dpl = 0, bool p = true, uint8_t ist = 0) {
    if (selector == 0) selector = long_mode ? kCode64_0 : kCode0;
    const GateDescriptor g{.selector = selector, .offset = kHandler + vector, .type = type, .dpl = dpl, .p = p, .ist = ist};
    if (long_mode) {
      mem.put<uint64_t>(kIdt + 16 * vector, encode_gate_low(g));
      mem.put<uint64_t>(kIdt + 16 * vector + 8, encode_gate_high(g));
    } else {
      mem.put<uint64_t>(kIdt + 8 * vector, encode_gate_low(g));
    }
  }
};

// Little-endian slot images, lowest address first, for the expected frames.
std::vector<uint8_t> slots(unsigned size, std::initializer_list<uint64_t> values) {
  std::vector<uint8_t> out;
  for (uint64_t v : values) {
    for (unsigned i = 0; i < size; ++i) out.push_back(static_cast<uint8_t>(v >> (8 * i)));
  }
  return out;
}

Event hw(uint8_t vector, uint32_t error_code = 0) {
  return {.kind = EventKind::kHardwareException, .vector = vector, .error_code = error_code};
}

Delivered expect_delivered(const DeliveryResult& r) {
  if (const auto* f = std::get_if<Fault>(&r)) ADD_FAILURE() << "fault " << describe(Event::from_fault(*f));
  if (const auto* u = std::get_if<DeliveryUnsupported>(&r)) ADD_FAILURE() << "unsupported: " << u->reason;
  return std::holds_alternative<Delivered>(r) ? std::get<Delivered>(r) : Delivered{};
}

Fault expect_fault(const DeliveryResult& r) {
  EXPECT_TRUE(std::holds_alternative<Fault>(r));
  return std::holds_alternative<Fault>(r) ? std::get<Fault>(r) : Fault{};
}

// --- Real-address mode ---

TEST(RealMode, IvtEntryAndThreeWordFrame) {
  FakeLinearMemory mem;
  mem.put<uint16_t>(0x10 * 4, 0x1234);      // INT 10h offset
  mem.put<uint16_t>(0x10 * 4 + 2, 0xf000);  // segment
  CpuState cpu;
  cpu.cs = {.selector = 0x0700, .desc = {.base = 0x7000, .limit = 0xffff, .type = 0xb, .s = true, .p = true}};
  cpu.ss = {.selector = 0x0000, .desc = {.base = 0, .limit = 0xffff, .type = 0x3, .s = true, .p = true}};
  cpu.rip = 0x0100;
  cpu.rsp = 0x7c00;
  cpu.rflags = kFlagReserved1 | kFlagIf | kFlagTf | kFlagAc | kFlagCf;
  cpu.idtr = {.base = 0, .limit = 0x3ff};
  const Delivered d = expect_delivered(deliver_event(cpu, Event::int_n(0x10), mem));
  EXPECT_EQ(d.frame, slots(2, {0x0102, 0x0700, 0x0303}));  // IP after INT, CS, FLAGS[15:0]
  EXPECT_EQ(d.frame_linear, 0x7bfau);
  EXPECT_EQ(mem.bytes(0x7bfa, 6), d.frame);
  EXPECT_EQ(d.rsp, 0x7bfau);
  EXPECT_EQ(d.cs.selector, 0xf000);
  EXPECT_EQ(d.cs.desc.base, 0xf0000u);
  EXPECT_EQ(d.rip, 0x1234u);
  EXPECT_EQ(d.rflags, kFlagReserved1 | kFlagCf);  // IF, TF, AC cleared
}

TEST(RealMode, NoErrorCodeAndIvtLimit) {
  FakeLinearMemory mem;
  CpuState cpu;
  cpu.cs.desc.limit = cpu.ss.desc.limit = 0xffff;
  cpu.rsp = 0x1000;
  cpu.idtr = {.base = 0, .limit = 0x3ff};
  EXPECT_EQ(expect_delivered(deliver_event(cpu, hw(kGeneralProtection, 0x10), mem)).frame.size(), 6u);
  cpu.idtr.limit = 4 * kGeneralProtection + 2;  // entry 13 one byte short
  EXPECT_EQ(expect_fault(deliver_event(cpu, hw(kGeneralProtection), mem)).vector, kGeneralProtection);
}

// --- Protected mode, 32-bit gates ---

TEST(Protected32, SameRingInterruptGate) {
  Guest g(CpuMode::kProtected, 0);
  const Delivered d = expect_delivered(deliver_event(g.cpu, Event::external(0x20), g.mem));
  EXPECT_EQ(d.frame, slots(4, {0x401000, kCode0, 0x0342}));  // EIP, CS, EFLAGS
  EXPECT_EQ(d.frame_linear, 0x9000u - 12);
  EXPECT_EQ(g.mem.bytes(0x9000 - 12, 12), d.frame);
  EXPECT_EQ(d.rsp, 0x9000u - 12);
  EXPECT_EQ(d.cs, (Segment{kCode0, kFlatCode0}));
  EXPECT_EQ(d.ss, g.cpu.ss);
  EXPECT_EQ(d.rip, kHandler + 0x20);
  EXPECT_EQ(d.rflags, kFlagReserved1 | kFlagZf);  // interrupt gate: IF and TF cleared
}

TEST(Protected32, TrapGateKeepsIf) {
  Guest g(CpuMode::kProtected, 0);
  g.gate(0x21, kType32BitTrapGate);
  g.cpu.rflags |= kFlagNt | kFlagRf;
  const Delivered d = expect_delivered(deliver_event(g.cpu, Event::external(0x21), g.mem));
  EXPECT_EQ(d.rflags, kFlagReserved1 | kFlagZf | kFlagIf);  // TF, NT, RF cleared
}

TEST(Protected32, Ring3ToRing0ThroughTss) {
  Guest g(CpuMode::kProtected, 3);
  const Delivered d = expect_delivered(deliver_event(g.cpu, hw(kGeneralProtection, 0x1234), g.mem));
  // Error code, EIP, CS, EFLAGS (RF set: #GP is a fault), ESP, SS on the SS0:ESP0 stack.
  EXPECT_EQ(d.frame, slots(4, {0x1234, 0x401000, kCode3, 0x10342, 0x8000, kData3}));
  EXPECT_EQ(g.mem.bytes(0x9000 - 24, 24), d.frame);
  EXPECT_EQ(d.cpl, 0u);
  EXPECT_EQ(d.ss, (Segment{kData0, kFlatData0}));
  EXPECT_EQ(d.rsp, 0x9000u - 24);
  EXPECT_EQ(d.cs.selector, kCode0);
  // The stack pushes are implicit supervisor accesses (SDM 4.6).
  ASSERT_FALSE(g.mem.accessors.empty());
  EXPECT_TRUE(g.mem.accessors.back().implicit_supervisor);
  EXPECT_TRUE(g.mem.accessors.back().stack);
}

TEST(Protected32, ConformingCodeKeepsCplAndStack) {
  Guest g(CpuMode::kProtected, 3);
  g.gate(0x22, kType32BitInterruptGate, kConforming0);
  const Delivered d = expect_delivered(deliver_event(g.cpu, Event::external(0x22), g.mem));
  EXPECT_EQ(d.cpl, 3u);
  EXPECT_EQ(d.cs.selector, kConforming0 | 3);
  EXPECT_EQ(d.ss, g.cpu.ss);
  EXPECT_EQ(d.rsp, 0x8000u - 12);
}

TEST(Protected32, TrapsPushTheNextInstruction) {
  Guest g(CpuMode::kProtected, 0);
  g.gate(3, kType32BitTrapGate, kCode0, 3);
  const Event int3{.kind = EventKind::kSoftwareException, .vector = kBreakpoint, .instruction_length = 1};
  EXPECT_EQ(expect_delivered(deliver_event(g.cpu, int3, g.mem)).frame, slots(4, {0x401001, kCode0, 0x0342}));
}

// SDM 18.3.1.1: the EFLAGS image of a fault-class exception other than #DB
// has RF set; traps, aborts, interrupts and INT n push EFLAGS as it is. The
// handler runs with RF as it was (a gate does not set it).
TEST(Protected32, FaultsPushRfAndTheRestDoNot) {
  const auto pushed_eflags = [](const Event& e) {
    Guest g(CpuMode::kProtected, 0);
    g.gate(e.vector, kType32BitInterruptGate, kCode0, 3);
    const Delivered d = expect_delivered(deliver_event(g.cpu, e, g.mem));
    EXPECT_EQ(d.rflags & kFlagRf, 0u);
    // EIP, CS, EFLAGS from the lowest address, after the error code if one was pushed.
    const size_t at = (e.kind == EventKind::kHardwareException && pushes_error_code(e.vector) ? 12 : 8);
    uint32_t eflags = 0;
    for (size_t i = 0; i < 4; ++i) eflags |= uint32_t{d.frame.at(at + i)} << (8 * i);
    return eflags;
  };
  for (uint8_t fault : {kDivideError, kBoundRange, kInvalidOpcode, kDeviceNotAvailable, kInvalidTss,
                        kSegmentNotPresent, kStackFault, kGeneralProtection, kPageFault, kFpuError,
                        kAlignmentCheck, kSimdError})
    EXPECT_EQ(pushed_eflags(hw(fault)), 0x10342u) << "vector " << int(fault);
  for (uint8_t other : {kDebug, kBreakpoint, kOverflow, kDoubleFault, kMachineCheck})
    EXPECT_EQ(pushed_eflags(hw(other)), 0x0342u) << "vector " << int(other);
  EXPECT_EQ(pushed_eflags(Event::external(0x20)), 0x0342u);
  EXPECT_EQ(pushed_eflags(Event::int_n(0x80)), 0x0342u);
  EXPECT_EQ(pushed_eflags(Event{.kind = EventKind::kSoftwareException, .vector = kBreakpoint, .instruction_length = 1}),
            0x0342u);
}

struct ErrorCodeCase {
  Event event;
  bool pushed;
};

class ErrorCodePush : public testing::TestWithParam<ErrorCodeCase> {};

TEST_P(ErrorCodePush, OnlyHardwareExceptionsWithAnErrorCode) {
  Guest g(CpuMode::kProtected, 0);
  g.gate(GetParam().event.vector, kType32BitInterruptGate, kCode0, 3);
  const Delivered d = expect_delivered(deliver_event(g.cpu, GetParam().event, g.mem));
  EXPECT_EQ(d.frame.size(), GetParam().pushed ? 16u : 12u) << describe(GetParam().event);
}

INSTANTIATE_TEST_SUITE_P(
    Sdm, ErrorCodePush,
    testing::Values(ErrorCodeCase{hw(kDivideError), false}, ErrorCodeCase{hw(kInvalidOpcode), false},
                    ErrorCodeCase{hw(kDoubleFault), true}, ErrorCodeCase{hw(kInvalidTss, 8), true},
                    ErrorCodeCase{hw(kSegmentNotPresent, 8), true}, ErrorCodeCase{hw(kStackFault), true},
                    ErrorCodeCase{hw(kGeneralProtection), true}, ErrorCodeCase{hw(kPageFault, 2), true},
                    ErrorCodeCase{hw(kAlignmentCheck), true}, ErrorCodeCase{hw(kControlProtection, 1), true},
                    ErrorCodeCase{hw(kMachineCheck), false},
                    ErrorCodeCase{Event::int_n(kPageFault), false},  // INT 0EH pushes no error code
                    ErrorCodeCase{Event::external(kGeneralProtection), false}),
    [](const auto& info) { return "case" + std::to_string(info.index); });

// SDM 6.12.1.1: only INT n, INT3 and INTO check the gate DPL against CPL.
struct DplCase {
  EventKind kind;
  uint8_t gate_dpl;
  unsigned cpl;
  bool delivered;
};

class GateDplCheck : public testing::TestWithParam<DplCase> {};

TEST_P(GateDplCheck, SoftwareOnly) {
  const DplCase& c = GetParam();
  Guest g(CpuMode::kProtected, c.cpl);
  g.gate(0x80, kType32BitInterruptGate, kCode0, c.gate_dpl);
  const Event e{.kind = c.kind, .vector = 0x80, .instruction_length = 2};
  const DeliveryResult r = deliver_event(g.cpu, e, g.mem);
  if (c.delivered) {
    expect_delivered(r);
  } else {
    EXPECT_EQ(expect_fault(r), (Fault{.vector = kGeneralProtection, .error_code = 0x80u * 8 + 2}));
  }
}

INSTANTIATE_TEST_SUITE_P(Sdm, GateDplCheck,
                         testing::Values(DplCase{EventKind::kSoftwareInterrupt, 0, 3, false},
                                         DplCase{EventKind::kSoftwareInterrupt, 3, 3, true},
                                         DplCase{EventKind::kSoftwareInterrupt, 0, 0, true},
                                         DplCase{EventKind::kSoftwareException, 0, 3, false},
                                         DplCase{EventKind::kPrivilegedSoftwareException, 0, 3, true},
                                         DplCase{EventKind::kExternalInterrupt, 0, 3, true},
                                         DplCase{EventKind::kHardwareException, 0, 3, true}),
                         [](const auto& info) { return "case" + std::to_string(info.index); });

// Faults raised by the delivery itself, with their error codes (SDM 6.13):
// IDT bit for a gate, EXT for everything but INT n/INT3/INTO.
struct DeliveryFaultCase {
  const char* what;
  void (*setup)(Guest&);
  Event event;
  Fault want;
};

void PrintTo(const DeliveryFaultCase& c, std::ostream* os) { *os << c.what; }

class DeliveryFault : public testing::TestWithParam<DeliveryFaultCase> {};

TEST_P(DeliveryFault, ErrorCode) {
  Guest g(CpuMode::kProtected, 3);
  GetParam().setup(g);
  EXPECT_EQ(expect_fault(deliver_event(g.cpu, GetParam().event, g.mem)), GetParam().want) << GetParam().what;
}

Fault gp(uint32_t ec) { return {.vector = kGeneralProtection, .error_code = ec}; }

INSTANTIATE_TEST_SUITE_P(
    Sdm, DeliveryFault,
    testing::Values(
        DeliveryFaultCase{"external vector past the IDT limit", [](Guest& g) { g.cpu.idtr.limit = 0x17f; },
                          Event::external(0x30), gp(0x30 * 8 + 3)},
        DeliveryFaultCase{"INT n past the IDT limit", [](Guest& g) { g.cpu.idtr.limit = 0x17f; }, Event::int_n(0x30),
                          gp(0x30 * 8 + 2)},
        DeliveryFaultCase{"call gate in the IDT", [](Guest& g) { g.gate(0x20, kType32BitCallGate); },
                          Event::external(0x20), gp(0x20 * 8 + 3)},
        DeliveryFaultCase{"not-present gate, external", [](Guest& g) { g.gate(0x20, kType32BitInterruptGate, 0, 3, false); },
                          Event::external(0x20), {.vector = kSegmentNotPresent, .error_code = 0x20 * 8 + 3}},
        DeliveryFaultCase{"not-present gate, INT n", [](Guest& g) { g.gate(0x20, kType32BitInterruptGate, 0, 3, false); },
                          Event::int_n(0x20), {.vector = kSegmentNotPresent, .error_code = 0x20 * 8 + 2}},
        DeliveryFaultCase{"null code selector", [](Guest& g) { g.gate(0x20, kType32BitInterruptGate, 0x03); },
                          Event::external(0x20), gp(1)},
        DeliveryFaultCase{"code selector past the GDT limit", [](Guest& g) { g.gate(0x20, kType32BitInterruptGate, kBeyondGdt); },
                          Event::external(0x20), gp(kBeyondGdt | 1)},
        DeliveryFaultCase{"gate to a data segment", [](Guest& g) { g.gate(0x20, kType32BitInterruptGate, kData0); },
                          Event::external(0x20), gp(kData0 | 1)},
        DeliveryFaultCase{"not-present code segment", [](Guest& g) { g.gate(0x20, kType32BitInterruptGate, kAbsentCode0); },
                          Event::external(0x20), {.vector = kSegmentNotPresent, .error_code = kAbsentCode0 | 1u}},
        DeliveryFaultCase{"null SS0", [](Guest& g) { g.mem.put<uint16_t>(kTss + kTss32Ss0, 0); }, Event::external(0x20),
                          {.vector = kInvalidTss, .error_code = 1u}},
        DeliveryFaultCase{"SS0 is a ring-3 segment", [](Guest& g) { g.mem.put<uint16_t>(kTss + kTss32Ss0, kData3 & ~3); },
                          Event::external(0x20), {.vector = kInvalidTss, .error_code = (kData3 & ~3u) | 1u}},
        DeliveryFaultCase{"SS0 RPL is not 0", [](Guest& g) { g.mem.put<uint16_t>(kTss + kTss32Ss0, kData0 | 1); },
                          Event::external(0x20), {.vector = kInvalidTss, .error_code = kData0 | 1u}},
        DeliveryFaultCase{"SS0 is code",
                          [](Guest& g) {
                            g.gate(0x20, kType32BitInterruptGate, kCode0, 3);
                            g.mem.put<uint16_t>(kTss + kTss32Ss0, kCode0);
                          },
                          Event::int_n(0x20), {.vector = kInvalidTss, .error_code = kCode0}},
        DeliveryFaultCase{"TSS too short for SS0", [](Guest& g) { g.cpu.tr.desc.limit = 8; }, Event::external(0x20),
                          {.vector = kInvalidTss, .error_code = kTr | 1u}},
        DeliveryFaultCase{"ESP0 8 leaves no room for 20 bytes",
                          [](Guest& g) {
                            g.mem.put<uint64_t>(kGdt + kData0, 0x004f93000000ffff);  // byte-granular, limit 0xfffff
                            g.mem.put<uint32_t>(kTss + kTss32Esp0, 8);
                          },
                          Event::external(0x20), {.vector = kStackFault, .error_code = kData0 | 1u}},
        DeliveryFaultCase{"entry point past the CS limit",
                          [](Guest& g) {
                            g.mem.put<uint64_t>(kGdt + kConforming0, 0x00409b000000ffff);  // byte-granular, limit 0xffff
                            g.gate(0x20, kType32BitInterruptGate, kConforming0);
                            g.mem.put<uint64_t>(kIdt + 8 * 0x20, encode_gate_low({.selector = kConforming0, .offset = 0x10000,
                                                                                  .type = 0xe, .p = true}));
                          },
                          Event::external(0x20), gp(1)},
        DeliveryFaultCase{"IDT page not mapped", [](Guest& g) { g.mem.fault_at(kIdt + 8 * 0x20); }, Event::external(0x20),
                          {.vector = kPageFault, .error_code = 0u, .cr2 = kIdt + 8 * 0x20}}),
    [](const auto& info) { return "case" + std::to_string(info.index); });

TEST(Protected32, SameRingStackPastTheLimitIsSsExt) {
  Guest g(CpuMode::kProtected, 0);
  g.cpu.ss.desc.g = false;  // limit 0xfffff bytes: ESP 8 leaves room for 8 bytes, 12 needed
  g.cpu.rsp = 8;
  EXPECT_EQ(expect_fault(deliver_event(g.cpu, Event::external(0x20), g.mem)),
            (Fault{.vector = kStackFault, .error_code = 1u}));
}

TEST(Protected32, PageFaultOnThePushWritesNothing) {
  Guest g(CpuMode::kProtected, 3);
  g.mem.fault_at(0x9000 - 24, 4);  // the error-code slot, pushed last
  const std::vector<uint8_t> before = g.mem.bytes(0x9000 - 24, 24);
  const Fault f = expect_fault(deliver_event(g.cpu, hw(kGeneralProtection), g.mem));
  EXPECT_EQ(f, (Fault{.vector = kPageFault, .error_code = kPfErrorWr, .cr2 = 0x9000 - 24}));
  EXPECT_EQ(g.mem.bytes(0x9000 - 24, 24), before);
}

TEST(Protected32, UnsupportedGatesAreNotFaults) {
  for (uint8_t type : {kTypeTaskGate, kType16BitInterruptGate, kType16BitTrapGate}) {
    Guest g(CpuMode::kProtected, 0);
    g.gate(0x20, type);
    EXPECT_TRUE(std::holds_alternative<DeliveryUnsupported>(deliver_event(g.cpu, Event::external(0x20), g.mem)))
        << int{type};
  }
  Guest v86(CpuMode::kProtected, 3);
  v86.cpu.rflags |= kFlagVm;
  EXPECT_TRUE(std::holds_alternative<DeliveryUnsupported>(deliver_event(v86.cpu, Event::external(0x20), v86.mem)));
}

// --- IA-32e mode ---

TEST(Long64, Ring3ToRing0ThroughRsp0) {
  Guest g(CpuMode::kLong64, 3);
  g.mem.put<uint64_t>(kTss + kTss64Rsp0, 0x9008);  // aligned down to 0x9000
  g.cpu.rsp = 0x7ff8;
  const Delivered d = expect_delivered(deliver_event(g.cpu, hw(kPageFault, 6), g.mem));
  EXPECT_EQ(d.frame, slots(8, {6, 0x401000, kCode64_3, 0x10342, 0x7ff8, kData3}));  // RF: #PF is a fault
  EXPECT_EQ(d.frame_linear, 0x9000u - 48);
  EXPECT_EQ(g.mem.bytes(0x9000 - 48, 48), d.frame);
  EXPECT_EQ(d.rsp, 0x9000u - 48);
  EXPECT_EQ(d.cpl, 0u);
  EXPECT_EQ(d.ss.selector, 0);  // NULL selector, RPL = new CPL
  EXPECT_EQ(d.cs, (Segment{kCode64_0, kLongCode0}));
  EXPECT_EQ(d.rip, kHandler + kPageFault);
}

TEST(Long64, SameRingPushesSsRspOnTheAlignedStack) {
  Guest g(CpuMode::kLong64, 0);
  g.cpu.rsp = 0x8ff8;
  const Delivered d = expect_delivered(deliver_event(g.cpu, Event::external(0x20), g.mem));
  EXPECT_EQ(d.frame, slots(8, {0x401000, kCode64_0, 0x0342, 0x8ff8, kData0}));
  EXPECT_EQ(d.rsp, 0x8ff0u - 40);
  EXPECT_EQ(d.ss, g.cpu.ss);
}

TEST(Long64, IstSwitchesEvenWithoutPrivilegeChange) {
  Guest g(CpuMode::kLong64, 0);
  g.gate(kNmi, kType32BitInterruptGate, kCode64_0, 0, true, 1);
  const Delivered d = expect_delivered(deliver_event(g.cpu, Event::nmi(), g.mem));
  EXPECT_EQ(d.frame, slots(8, {0x401000, kCode64_0, 0x0342, 0x9000, kData0}));
  EXPECT_EQ(d.rsp, 0xa000u - 40);
  EXPECT_EQ(d.ss, g.cpu.ss);
}

TEST(Long64, CompatibilityModeDeliversTo64BitHandler) {
  Guest g(CpuMode::kCompatibility, 3);
  g.cpu.cs = {kCode3, kFlatCode3};
  g.cpu.rip = 0xfffffffe;
  const Event int80 = Event::int_n(0x80);
  g.gate(0x80, kType32BitTrapGate, kCode64_0, 3);
  const Delivered d = expect_delivered(deliver_event(g.cpu, int80, g.mem));
  EXPECT_EQ(d.frame, slots(8, {0x0, kCode3, 0x0342, 0x8000, kData3}));  // EIP wraps at 4 GiB
  EXPECT_EQ(d.cs.selector, kCode64_0);
  EXPECT_EQ(d.mode, CpuMode::kLong64);
}

TEST(Long64, IstWinsOverRsp0OnPrivilegeChange) {
  Guest g(CpuMode::kLong64, 3);
  g.gate(kDoubleFault, kType32BitInterruptGate, kCode64_0, 0, true, 1);
  const Delivered d = expect_delivered(deliver_event(g.cpu, hw(kDoubleFault), g.mem));
  EXPECT_EQ(d.rsp, 0xa000u - 48);
  EXPECT_EQ(d.ss.selector, 0);
  EXPECT_EQ(g.mem.bytes(0xa000 - 48, 48), slots(8, {0, 0x401000, kCode64_3, 0x0342, 0x8000, kData3}));
}

TEST(Long64, GateTo32BitCodeIsGp) {
  Guest g(CpuMode::kLong64, 0);
  g.gate(0x20, kType32BitInterruptGate, kCode0);
  EXPECT_EQ(expect_fault(deliver_event(g.cpu, Event::external(0x20), g.mem)), gp(kCode0 | 1));
}

TEST(Long64, IdtLimitCountsSixteenByteGates) {
  Guest g(CpuMode::kLong64, 0);
  g.cpu.idtr.limit = 0x20 * 16 + 14;
  EXPECT_EQ(expect_fault(deliver_event(g.cpu, Event::external(0x20), g.mem)), gp(0x20 * 8 + 3));
}

TEST(Long64, IstPastTheTssLimitIsTs) {
  Guest g(CpuMode::kLong64, 0);
  g.gate(kNmi, kType32BitInterruptGate, kCode64_0, 0, true, 7);
  g.cpu.tr.desc.limit = 0x50;
  EXPECT_EQ(expect_fault(deliver_event(g.cpu, Event::nmi(), g.mem)),
            (Fault{.vector = kInvalidTss, .error_code = kTr | 1u}));
}

// --- Exception combination (SDM 6.15 table 6-5) ---

struct CombineCase {
  ExceptionClass first, second;
  Combination want;
};

class Combine : public testing::TestWithParam<CombineCase> {};

TEST_P(Combine, Table6_5) { EXPECT_EQ(combine(GetParam().first, GetParam().second), GetParam().want); }

using EC = ExceptionClass;
using CB = Combination;
INSTANTIATE_TEST_SUITE_P(
    Sdm, Combine,
    testing::Values(CombineCase{EC::kBenign, EC::kBenign, CB::kSerial}, CombineCase{EC::kBenign, EC::kContributory, CB::kSerial},
                    CombineCase{EC::kBenign, EC::kPageFault, CB::kSerial},
                    CombineCase{EC::kContributory, EC::kBenign, CB::kSerial},
                    CombineCase{EC::kContributory, EC::kContributory, CB::kDoubleFault},
                    CombineCase{EC::kContributory, EC::kPageFault, CB::kSerial},
                    CombineCase{EC::kPageFault, EC::kBenign, CB::kSerial},
                    CombineCase{EC::kPageFault, EC::kContributory, CB::kDoubleFault},
                    CombineCase{EC::kPageFault, EC::kPageFault, CB::kDoubleFault},
                    CombineCase{EC::kDoubleFault, EC::kContributory, CB::kTripleFault},
                    CombineCase{EC::kDoubleFault, EC::kPageFault, CB::kTripleFault}),
    [](const auto& info) { return "case" + std::to_string(info.index); });

TEST(Classify, ContributoryVectorsAndInterruptsAreBenign) {
  for (uint8_t v : {0, 10, 11, 12, 13}) EXPECT_EQ(classify(hw(v)), EC::kContributory) << int{v};
  EXPECT_EQ(classify(hw(kPageFault)), EC::kPageFault);
  EXPECT_EQ(classify(hw(kDoubleFault)), EC::kDoubleFault);
  EXPECT_EQ(classify(hw(kDebug)), EC::kBenign);
  EXPECT_EQ(classify(Event::int_n(kGeneralProtection)), EC::kBenign);  // INT 0DH is an interrupt
  EXPECT_EQ(classify(Event::external(kPageFault)), EC::kBenign);
}

TEST(Describe, Names) {
  EXPECT_EQ(describe(hw(kGeneralProtection, 0x10)), "#GP(0x10)");
  EXPECT_EQ(describe(Event::from_fault({.vector = kPageFault, .error_code = 2u, .cr2 = 0x1000})), "#PF(0x2, cr2=0x1000)");
  EXPECT_EQ(describe(hw(kInvalidOpcode)), "#UD");
  EXPECT_EQ(describe(Event::int_n(0x80)), "INT 0x80");
  EXPECT_EQ(describe(Event::external(0x20)), "INTR 0x20");
  EXPECT_EQ(describe(Event::nmi()), "NMI");
}

TEST(Driver, BenignThenContributoryIsSerial) {
  Guest g(CpuMode::kProtected, 0);
  g.gate(0x20, kType32BitInterruptGate, kBeyondGdt);  // INTR 0x20 raises #GP(0x81)
  const DeliveryOutcome o = deliver_with_combination(g.cpu, Event::external(0x20), g.mem);
  ASSERT_TRUE(std::holds_alternative<Delivered>(o));
  const Delivered& d = std::get<Delivered>(o);
  EXPECT_EQ(d.rip, kHandler + kGeneralProtection);
  EXPECT_EQ(d.frame, slots(4, {kBeyondGdt | 1, 0x401000, kCode0, 0x10342}));  // the #GP's frame: RF set
}

TEST(Driver, ContributoryThenContributoryIsDoubleFault) {
  Guest g(CpuMode::kProtected, 0);
  g.gate(kGeneralProtection, kType32BitInterruptGate, 0, 0, false);  // #GP raises #NP
  const DeliveryOutcome o = deliver_with_combination(g.cpu, hw(kGeneralProtection), g.mem);
  ASSERT_TRUE(std::holds_alternative<Delivered>(o));
  const Delivered& d = std::get<Delivered>(o);
  EXPECT_EQ(d.rip, kHandler + kDoubleFault);
  EXPECT_EQ(d.frame, slots(4, {0, 0x401000, kCode0, 0x0342}));  // #DF(0)
}

TEST(Driver, PageFaultWhilePushingAPageFaultIsDoubleFault) {
  Guest g(CpuMode::kLong64, 3);
  g.gate(kDoubleFault, kType32BitInterruptGate, kCode64_0, 0, true, 1);  // #DF on IST1
  g.mem.fault_at(0x9000 - 8, 8);  // the top of the RSP0 stack
  const DeliveryOutcome o = deliver_with_combination(g.cpu, hw(kPageFault, 4), g.mem);
  ASSERT_TRUE(std::holds_alternative<Delivered>(o));
  const Delivered& d = std::get<Delivered>(o);
  EXPECT_EQ(d.rip, kHandler + kDoubleFault);
  EXPECT_EQ(d.rsp, 0xa000u - 48);
  EXPECT_EQ(d.frame, slots(8, {0, 0x401000, kCode64_3, 0x0342, 0x8000, kData3}));
}

TEST(Driver, FaultWhileDeliveringDoubleFaultIsTriple) {
  Guest g(CpuMode::kProtected, 0);
  g.gate(kGeneralProtection, kType32BitInterruptGate, 0, 0, false);
  g.gate(kDoubleFault, kType32BitInterruptGate, 0, 0, false);
  const DeliveryOutcome o = deliver_with_combination(g.cpu, hw(kGeneralProtection), g.mem);
  ASSERT_TRUE(std::holds_alternative<TripleFault>(o));
  EXPECT_EQ(std::get<TripleFault>(o).description, "triple fault: #NP(0x43) while delivering #DF(0x0) while delivering #GP(0x0)");
}

TEST(Driver, TripleFaultNamesCr2) {
  Guest g(CpuMode::kLong64, 0);
  g.mem.fault_at(0x8000, 0x1000);  // the whole ring-0 stack page
  const DeliveryOutcome o = deliver_with_combination(g.cpu, hw(kGeneralProtection), g.mem);
  ASSERT_TRUE(std::holds_alternative<TripleFault>(o));
  // #GP -> #PF (serial) -> #PF -> #DF -> #PF: shutdown.
  EXPECT_EQ(std::get<TripleFault>(o).description,
            "triple fault: #PF(0x2, cr2=0x8ff8) while delivering #DF(0x0) while delivering #PF(0x2, cr2=0x8ff8) "
            "while delivering #GP(0x0)");
  EXPECT_EQ(std::get<TripleFault>(o).chain.size(), 4u);
}

}  // namespace
}  // namespace topolab::x86
