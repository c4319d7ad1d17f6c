// SPDX-License-Identifier: GPL-2.0-or-later
#include "arch/descriptors.h"

#include <gtest/gtest.h>

#include "arch/fake_linear_memory.h"

namespace topolab::x86 {
namespace {

// Raw descriptors as a guest's GDT holds them, decoded per SDM figure 3-8.
struct DescriptorCase {
  const char* what;
  uint64_t raw;
  SegmentDescriptor want;
  uint32_t effective_limit;
};

class DecodeDescriptor : public testing::TestWithParam<DescriptorCase> {};

TEST_P(DecodeDescriptor, FieldsAndEncodeRoundTrip) {
  const DescriptorCase& c = GetParam();
  EXPECT_EQ(decode_descriptor(c.raw), c.want) << c.what;
  EXPECT_EQ(decode_descriptor(c.raw).effective_limit(), c.effective_limit) << c.what;
  EXPECT_EQ(encode_descriptor(c.want), c.raw) << c.what;
}

INSTANTIATE_TEST_SUITE_P(
    Sdm, DecodeDescriptor,
    testing::Values(
        DescriptorCase{"flat 32-bit ring-0 code", 0x00cf9b000000ffff,
                       {.base = 0, .limit = 0xfffff, .type = 0xb, .s = true, .dpl = 0, .p = true, .db = true, .g = true},
                       0xffffffff},
        DescriptorCase{"64-bit ring-3 code", 0x00affb000000ffff,
                       {.base = 0, .limit = 0xfffff, .type = 0xb, .s = true, .dpl = 3, .p = true, .l = true, .g = true},
                       0xffffffff},
        DescriptorCase{"byte-granular data, base 0x12345678, limit 0xabcde, AVL", 0x121a92345678bcde,
                       {.base = 0x12345678, .limit = 0xabcde, .type = 0x2, .s = true, .dpl = 0, .p = true, .avl = true},
                       0xabcde},
        DescriptorCase{"not-present 32-bit TSS", 0x0000090000000067,
                       {.base = 0, .limit = 0x67, .type = kType32BitTssAvailable, .s = false, .dpl = 0, .p = false},
                       0x67}),
    [](const auto& info) { return "case" + std::to_string(info.index); });

TEST(SystemDescriptor16, BaseBits63To32FromTheUpperHalf) {
  const SegmentDescriptor d = decode_system_descriptor16(0x12008b3456780067, 0x00000000ffff8000);
  EXPECT_EQ(d.base, 0xffff800012345678ull);
  EXPECT_EQ(d.type, kType32BitTssBusy);
  EXPECT_EQ(d.limit, 0x67u);
}

TEST(Gate, Decode32BitInterruptGate) {
  // Offset 0x12345678, selector 0x08, DPL 3, present, type 0xE.
  const GateDescriptor g = decode_gate(0x1234ee0000085678);
  EXPECT_EQ(g, (GateDescriptor{.selector = 8, .offset = 0x12345678, .type = 0xe, .dpl = 3, .p = true, .ist = 0}));
}

TEST(Gate, Decode64BitTrapGateWithIst) {
  const GateDescriptor want{.selector = 0x10, .offset = 0xffffffff81234567, .type = 0xf, .dpl = 0, .p = true, .ist = 5};
  EXPECT_EQ(decode_gate16(encode_gate_low(want), encode_gate_high(want)), want);
  EXPECT_EQ(encode_gate_low(want), 0x81238f0500104567ull);
}

struct SelectorCase {
  const char* what;
  uint16_t selector;
  LookupStatus want;
  uint64_t raw;  // what is read, when kOk
};

class ReadDescriptor : public testing::TestWithParam<SelectorCase> {};

// GDT at 0x1000 with limit 0x17 (3 entries), LDT at 0x2000 with limit 0x0f.
TEST_P(ReadDescriptor, ThroughTheTiBitAndLimit) {
  const SelectorCase& c = GetParam();
  FakeLinearMemory mem;
  mem.put<uint64_t>(0x1010, 0x00cf93000000ffff);
  mem.put<uint64_t>(0x2008, 0x00cffb000000ffff);
  const TableRegister gdtr{.base = 0x1000, .limit = 0x17};
  const Segment ldtr{.selector = 0x18, .desc = {.base = 0x2000, .limit = 0x0f, .type = kTypeLdt, .p = true}};
  const DescriptorLookup r = read_descriptor(mem, gdtr, ldtr, c.selector);
  EXPECT_EQ(r.status, c.want) << c.what;
  if (c.want == LookupStatus::kOk) {
    EXPECT_EQ(r.desc, decode_descriptor(c.raw)) << c.what;
  }
}

INSTANTIATE_TEST_SUITE_P(Sdm, ReadDescriptor,
                         testing::Values(SelectorCase{"GDT entry 2, RPL ignored", 0x13, LookupStatus::kOk, 0x00cf93000000ffff},
                                         SelectorCase{"GDT entry 3 is past limit 0x17", 0x18, LookupStatus::kBeyondLimit, 0},
                                         SelectorCase{"LDT entry 1", 0x0f, LookupStatus::kOk, 0x00cffb000000ffff},
                                         SelectorCase{"LDT entry 2 is past limit 0x0f", 0x14, LookupStatus::kBeyondLimit, 0}),
                         [](const auto& info) { return "case" + std::to_string(info.index); });

TEST(ReadDescriptor, SixteenByteTssDescriptorInLongMode) {
  FakeLinearMemory mem;
  mem.put<uint64_t>(0x1028, 0x12008b3456780067);
  mem.put<uint64_t>(0x1030, 0x00000000ffff8000);
  const TableRegister gdtr{.base = 0x1000, .limit = 0x37};
  const DescriptorLookup r = read_descriptor(mem, gdtr, Segment{}, 0x28, true);
  ASSERT_EQ(r.status, LookupStatus::kOk);
  EXPECT_EQ(r.desc.base, 0xffff800012345678ull);
  // Both halves must lie within the limit.
  EXPECT_EQ(read_descriptor(mem, TableRegister{.base = 0x1000, .limit = 0x2f}, Segment{}, 0x28, true).status,
            LookupStatus::kBeyondLimit);
}

TEST(ReadDescriptor, NullLdtrHasNoEntries) {
  FakeLinearMemory mem;
  const DescriptorLookup r = read_descriptor(mem, TableRegister{.base = 0x1000, .limit = 0xffff}, Segment{}, 0x0c);
  EXPECT_EQ(r.status, LookupStatus::kBeyondLimit);
}

TEST(ReadDescriptor, FaultingGdtPageIsAnImplicitSupervisorPageFault) {
  FakeLinearMemory mem;
  mem.fault_at(0x1008, 8);
  const DescriptorLookup r = read_descriptor(mem, TableRegister{.base = 0x1000, .limit = 0xffff}, Segment{}, 0x0b);
  ASSERT_EQ(r.status, LookupStatus::kMemoryFault);
  EXPECT_EQ(r.fault, (Fault{.vector = kPageFault, .error_code = 0u, .cr2 = 0x1008}));
}

TEST(Tss32, StackFieldsPerPrivilege) {
  FakeLinearMemory mem;
  const Segment tr{.selector = 0x28, .desc = {.base = 0x3000, .limit = 0x67, .type = kType32BitTssBusy, .p = true}};
  for (unsigned n = 0; n < 3; ++n) {
    mem.put<uint32_t>(0x3000 + kTss32Esp0 + 8 * n, 0x1000 * (n + 1));
    mem.put<uint16_t>(0x3000 + kTss32Ss0 + 8 * n, static_cast<uint16_t>(0x10 + 8 * n + n));
  }
  for (unsigned n = 0; n < 3; ++n) {
    const auto r = read_tss32_stack(mem, tr, n);
    ASSERT_EQ(r.status, LookupStatus::kOk);
    EXPECT_EQ(r.value.esp, 0x1000 * (n + 1));
    EXPECT_EQ(r.value.ss, 0x10 + 8 * n + n);
  }
}

TEST(Tss32, Ss0PastTheLimit) {
  FakeLinearMemory mem;
  const Segment tr{.selector = 0x28, .desc = {.base = 0x3000, .limit = 0x08, .type = kType32BitTssBusy, .p = true}};
  EXPECT_EQ(read_tss32_stack(mem, tr, 0).status, LookupStatus::kBeyondLimit);  // SS0 ends at offset 9
}

TEST(Tss64, RspAndIstOffsets) {
  FakeLinearMemory mem;
  const Segment tr{.selector = 0x40, .desc = {.base = 0x4000, .limit = 0x67, .type = kType32BitTssBusy, .p = true}};
  mem.put<uint64_t>(0x4004, 0xffff800000001000);  // RSP0
  mem.put<uint64_t>(0x4014, 0xffff800000003000);  // RSP2
  mem.put<uint64_t>(0x4024, 0xffff800000011000);  // IST1
  mem.put<uint64_t>(0x4054, 0xffff800000017000);  // IST7
  EXPECT_EQ(read_tss64_rsp(mem, tr, 0).value, 0xffff800000001000);
  EXPECT_EQ(read_tss64_rsp(mem, tr, 2).value, 0xffff800000003000);
  EXPECT_EQ(read_tss64_ist(mem, tr, 1).value, 0xffff800000011000);
  EXPECT_EQ(read_tss64_ist(mem, tr, 7).value, 0xffff800000017000);
  const Segment short_tr{.selector = 0x40, .desc = {.base = 0x4000, .limit = 0x50, .type = kType32BitTssBusy, .p = true}};
  EXPECT_EQ(read_tss64_ist(mem, short_tr, 7).status, LookupStatus::kBeyondLimit);
}

}  // namespace
}  // namespace topolab::x86
