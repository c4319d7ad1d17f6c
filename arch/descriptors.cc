// SPDX-License-Identifier: GPL-2.0-or-later
#include "arch/descriptors.h"

namespace topolab::x86 {
namespace {

uint64_t bits(uint64_t v, unsigned hi, unsigned lo) { return (v >> lo) & ((uint64_t{1} << (hi - lo + 1)) - 1); }

}  // namespace

// SDM Vol. 3A 3.4.5, figure 3-8.
SegmentDescriptor decode_descriptor(uint64_t raw) {
  SegmentDescriptor d;
  d.limit = static_cast<uint32_t>(bits(raw, 15, 0) | (bits(raw, 51, 48) << 16));
  d.base = bits(raw, 39, 16) | (bits(raw, 63, 56) << 24);
  d.type = static_cast<uint8_t>(bits(raw, 43, 40));
  d.s = bits(raw, 44, 44);
  d.dpl = static_cast<uint8_t>(bits(raw, 46, 45));
  d.p = bits(raw, 47, 47);
  d.avl = bits(raw, 52, 52);
  d.l = bits(raw, 53, 53);
  d.db = bits(raw, 54, 54);
  d.g = bits(raw, 55, 55);
  return d;
}

// SDM Vol. 3A 3.5, figure 7-4 (LDT/TSS descriptor in 64-bit mode).
SegmentDescriptor decode_system_descriptor16(uint64_t low, uint64_t high) {
  SegmentDescriptor d = decode_descriptor(low);
  d.base |= bits(high, 31, 0) << 32;
  return d;
}

uint64_t encode_descriptor(const SegmentDescriptor& d) {
  uint64_t raw = 0;
  raw |= uint64_t{d.limit & 0xffff};
  raw |= (d.base & 0xffffff) << 16;
  raw |= uint64_t{d.type & 0xfu} << 40;
  raw |= uint64_t{d.s} << 44;
  raw |= uint64_t{d.dpl & 3u} << 45;
  raw |= uint64_t{d.p} << 47;
  raw |= uint64_t{(d.limit >> 16) & 0xf} << 48;
  raw |= uint64_t{d.avl} << 52;
  raw |= uint64_t{d.l} << 53;
  raw |= uint64_t{d.db} << 54;
  raw |= uint64_t{d.g} << 55;
  raw |= ((d.base >> 24) & 0xff) << 56;
  return raw;
}

SegmentDescriptor flat_code(uint8_t dpl, bool long_mode) {
  return SegmentDescriptor{.base = 0,
                           .limit = 0xfffff,
                           .type = kTypeCode | kTypeCodeReadable | kTypeAccessed,
                           .s = true,
                           .dpl = dpl,
                           .p = true,
                           .avl = false,
                           .l = long_mode,
                           .db = !long_mode,
                           .g = true};
}

SegmentDescriptor flat_data(uint8_t dpl) {
  return SegmentDescriptor{.base = 0,
                           .limit = 0xfffff,
                           .type = kTypeDataWritable | kTypeAccessed,
                           .s = true,
                           .dpl = dpl,
                           .p = true,
                           .avl = false,
                           .l = false,
                           .db = true,
                           .g = true};
}

DescriptorLookup read_descriptor(LinearMemory& mem, const TableRegister& gdtr, const Segment& ldtr,
                                 uint16_t selector, bool sixteen_bytes) {
  const bool in_ldt = selector & kSelectorTi;
  const uint64_t table_base = in_ldt ? ldtr.desc.base : gdtr.base;
  const uint64_t table_limit = in_ldt ? ldtr.desc.effective_limit() : gdtr.limit;
  const uint64_t offset = selector & kSelectorIndexMask;
  const uint64_t size = sixteen_bytes ? 16 : 8;
  DescriptorLookup out;
  // SDM 3.5.1: the whole descriptor must lie within the limit. A null LDTR
  // is modelled as limit 0, which no 8-byte descriptor fits under.
  if ((in_ldt && ldtr.selector == 0) || offset + size - 1 > table_limit) {
    out.status = LookupStatus::kBeyondLimit;
    return out;
  }
  uint64_t raw[2] = {0, 0};
  if (auto f = mem.read(table_base + offset, raw, size, system_table_access())) {
    out.status = LookupStatus::kMemoryFault;
    out.fault = *f;
    return out;
  }
  out.desc = sixteen_bytes ? decode_system_descriptor16(raw[0], raw[1]) : decode_descriptor(raw[0]);
  return out;
}

// SDM Vol. 3A 6.11, figure 6-2.
GateDescriptor decode_gate(uint64_t raw) {
  GateDescriptor g;
  g.offset = bits(raw, 15, 0) | (bits(raw, 63, 48) << 16);
  g.selector = static_cast<uint16_t>(bits(raw, 31, 16));
  g.type = static_cast<uint8_t>(bits(raw, 43, 40));
  g.dpl = static_cast<uint8_t>(bits(raw, 46, 45));
  g.p = bits(raw, 47, 47);
  return g;
}

// SDM Vol. 3A 6.14.1, figure 6-8: IST in bits 2:0 of byte 4, offset 63:32
// in the upper 8 bytes.
GateDescriptor decode_gate16(uint64_t low, uint64_t high) {
  GateDescriptor g = decode_gate(low);
  g.ist = static_cast<uint8_t>(bits(low, 34, 32));
  g.offset |= bits(high, 31, 0) << 32;
  return g;
}

uint64_t encode_gate_low(const GateDescriptor& g) {
  uint64_t raw = 0;
  raw |= g.offset & 0xffff;
  raw |= uint64_t{g.selector} << 16;
  raw |= uint64_t{g.ist & 7u} << 32;
  raw |= uint64_t{g.type & 0xfu} << 40;
  raw |= uint64_t{g.dpl & 3u} << 45;
  raw |= uint64_t{g.p} << 47;
  raw |= ((g.offset >> 16) & 0xffff) << 48;
  return raw;
}

uint64_t encode_gate_high(const GateDescriptor& g) { return (g.offset >> 32) & 0xffffffff; }

namespace {

struct FieldRead {
  LookupStatus status = LookupStatus::kOk;
  Fault fault;
};

FieldRead read_tss_field(LinearMemory& mem, const Segment& tr, uint32_t offset, void* value, uint32_t size) {
  // SDM 6.12.1 / 7.2.1: a stack field past the TSS limit is #TS(TSS selector).
  if (uint64_t{offset} + size - 1 > tr.desc.effective_limit()) return {LookupStatus::kBeyondLimit, {}};
  if (auto f = mem.read(tr.desc.base + offset, value, size, system_table_access())) {
    return {LookupStatus::kMemoryFault, *f};
  }
  return {};
}

}  // namespace

TssRead<StackPointer32> read_tss32_stack(LinearMemory& mem, const Segment& tr, unsigned privilege) {
  // ESPn and SSn are adjacent: one 8-byte read covers both (SS in the low
  // word of the second dword, the high word reserved).
  uint32_t raw[2] = {0, 0};
  FieldRead r = read_tss_field(mem, tr, kTss32Esp0 + kTss32StackStride * privilege, raw, 6);
  TssRead<StackPointer32> out{.status = r.status, .value = {}, .fault = r.fault};
  out.value.esp = raw[0];
  out.value.ss = static_cast<uint16_t>(raw[1]);
  return out;
}

TssRead<uint64_t> read_tss64_rsp(LinearMemory& mem, const Segment& tr, unsigned privilege) {
  uint64_t rsp = 0;
  FieldRead r = read_tss_field(mem, tr, kTss64Rsp0 + 8 * privilege, &rsp, 8);
  return {.status = r.status, .value = rsp, .fault = r.fault};
}

TssRead<uint64_t> read_tss64_ist(LinearMemory& mem, const Segment& tr, unsigned ist) {
  uint64_t rsp = 0;
  FieldRead r = read_tss_field(mem, tr, kTss64Ist1 + 8 * (ist - 1), &rsp, 8);
  return {.status = r.status, .value = rsp, .fault = r.fault};
}

}  // namespace topolab::x86
