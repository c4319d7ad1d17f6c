// SPDX-License-Identifier: GPL-2.0-or-later
// Segment descriptors, gate descriptors and the TSS stack fields, decoded
// from the raw bytes the guest keeps in its GDT, LDT, IDT and TSS.
//
// Follows the Intel SDM Vol. 3A:
//   3.4.2   segment selectors
//   3.4.5   segment descriptors (and table 3-1/3-2, the type field)
//   3.5     system descriptor types; 16-byte system descriptors in IA-32e mode
//   6.11    IDT descriptors (interrupt, trap and task gates)
//   6.14.1  64-bit mode IDT (16-byte gates, IST field)
//   7.2.1   32-bit TSS (SS0:ESP0 .. SS2:ESP2)
//   7.7     64-bit TSS (RSP0-2, IST1-7)
//
// Every table read is an implicit supervisor access (SDM 4.6) through the
// guest's LinearMemory, so a table in unmapped memory raises its #PF here.
//
// Not supported: the accessed bit is never written back to a descriptor the
// rules load (hardware sets it; no guest we run depends on it).
#pragma once

#include <cstdint>
#include <optional>
#include <variant>

#include "arch/x86_arch.h"

namespace topolab::x86 {

// --- Segment selectors (SDM 3.4.2, figure 3-6) ---
constexpr uint16_t kSelectorRplMask = 0x0003;    // requested privilege level
constexpr uint16_t kSelectorTi = 0x0004;         // table indicator: 1 = LDT
constexpr uint16_t kSelectorIndexMask = 0xfff8;  // index * 8 = byte offset in the table

// --- Descriptor type field, S = 1 (SDM 3.4.5.1, table 3-1) ---
constexpr uint8_t kTypeAccessed = 0x1;
constexpr uint8_t kTypeDataWritable = 0x2;
constexpr uint8_t kTypeDataExpandDown = 0x4;
constexpr uint8_t kTypeCodeReadable = 0x2;
constexpr uint8_t kTypeCodeConforming = 0x4;
constexpr uint8_t kTypeCode = 0x8;

// --- System descriptor and gate types, S = 0 (SDM 3.5, table 3-2) ---
constexpr uint8_t kType16BitTssAvailable = 0x1;
constexpr uint8_t kTypeLdt = 0x2;
constexpr uint8_t kType16BitTssBusy = 0x3;
constexpr uint8_t kType16BitCallGate = 0x4;
constexpr uint8_t kTypeTaskGate = 0x5;
constexpr uint8_t kType16BitInterruptGate = 0x6;
constexpr uint8_t kType16BitTrapGate = 0x7;
constexpr uint8_t kType32BitTssAvailable = 0x9;  // the 64-bit TSS in IA-32e mode
constexpr uint8_t kType32BitTssBusy = 0xb;
constexpr uint8_t kType32BitCallGate = 0xc;     // 64-bit call gate in IA-32e mode
constexpr uint8_t kType32BitInterruptGate = 0xe;  // 64-bit interrupt gate in IA-32e mode
constexpr uint8_t kType32BitTrapGate = 0xf;       // 64-bit trap gate in IA-32e mode

// A segment descriptor as the SDM draws it (figure 3-8), fields unscaled.
struct SegmentDescriptor {
  uint64_t base = 0;   // bits 31:0; 63:32 too for a 16-byte system descriptor
  uint32_t limit = 0;  // the raw 20-bit limit field
  uint8_t type = 0;    // 4 bits
  bool s = false;      // descriptor type: 1 = code or data, 0 = system
  uint8_t dpl = 0;
  bool p = false;
  bool avl = false;
  bool l = false;   // 64-bit code segment (IA-32e mode)
  bool db = false;  // default operation size / big
  bool g = false;   // granularity: limit in 4-KByte units

  // The limit in bytes: G scales the field to 4-KByte units, low 12 bits set.
  uint32_t effective_limit() const { return g ? (limit << 12) | 0xfff : limit; }
  bool is_code() const { return s && (type & kTypeCode); }
  bool is_writable_data() const { return s && !(type & kTypeCode) && (type & kTypeDataWritable); }
  bool is_conforming_code() const { return is_code() && (type & kTypeCodeConforming); }
  bool is_expand_down_data() const { return s && !(type & kTypeCode) && (type & kTypeDataExpandDown); }
  friend bool operator==(const SegmentDescriptor&, const SegmentDescriptor&) = default;
};

// The low 8 bytes of a descriptor (SDM figure 3-8). For a 16-byte system
// descriptor, base[63:32] is the low dword of the upper 8 bytes.
SegmentDescriptor decode_descriptor(uint64_t raw);
SegmentDescriptor decode_system_descriptor16(uint64_t low, uint64_t high);
uint64_t encode_descriptor(const SegmentDescriptor& d);  // low 8 bytes

// Flat segments as SYSCALL/SYSENTER load them (SDM Vol. 2B): base 0,
// limit FFFFFH, G = 1, DPL 0 (or 3 for the SYSRET/SYSEXIT side), present.
SegmentDescriptor flat_code(uint8_t dpl, bool long_mode);
SegmentDescriptor flat_data(uint8_t dpl);

// A segment register: the visible selector and its descriptor cache.
struct Segment {
  uint16_t selector = 0;
  SegmentDescriptor desc;
  friend bool operator==(const Segment&, const Segment&) = default;
};

// GDTR and IDTR (SDM 2.4.1, 2.4.3). LDTR and TR are Segments: their base and
// limit are in their descriptor caches; a null LDTR has limit 0, so every
// LDT selector lies beyond it.
struct TableRegister {
  uint64_t base = 0;
  uint32_t limit = 0;  // bytes, inclusive
};

enum class LookupStatus {
  kOk,
  kBeyondLimit,  // selector index past the table limit (or a null LDTR)
  kMemoryFault,  // the table read faulted (see `fault`)
};

struct DescriptorLookup {
  LookupStatus status = LookupStatus::kOk;
  SegmentDescriptor desc;
  Fault fault;  // kMemoryFault only
};

// Reads the descriptor `selector` names from the GDT or the LDT (TI bit).
// `sixteen_bytes` reads a 16-byte system descriptor (IA-32e mode, SDM 3.5).
// A null selector is the caller's business (each rule faults differently),
// so this only checks the table limit.
DescriptorLookup read_descriptor(LinearMemory& mem, const TableRegister& gdtr, const Segment& ldtr,
                                 uint16_t selector, bool sixteen_bytes = false);

// An IDT gate (SDM 6.11 figure 6-2; 6.14.1 figure 6-8 for 64-bit mode).
struct GateDescriptor {
  uint16_t selector = 0;  // target code segment (TSS selector for a task gate)
  uint64_t offset = 0;    // entry point; bits 63:32 only in 64-bit mode
  uint8_t type = 0;
  uint8_t dpl = 0;
  bool p = false;
  uint8_t ist = 0;  // 64-bit mode only: interrupt stack table index, 0 = none
  friend bool operator==(const GateDescriptor&, const GateDescriptor&) = default;
};

GateDescriptor decode_gate(uint64_t raw);
GateDescriptor decode_gate16(uint64_t low, uint64_t high);
uint64_t encode_gate_low(const GateDescriptor& g);   // the 8-byte legacy form, or the low half
uint64_t encode_gate_high(const GateDescriptor& g);  // the upper 8 bytes of a 64-bit gate

// --- TSS stack fields ---
// 32-bit TSS (SDM 7.2.1, figure 7-2): ESPn at 4 + 8n, SSn at 8 + 8n.
constexpr uint32_t kTss32Esp0 = 0x04;
constexpr uint32_t kTss32Ss0 = 0x08;
constexpr uint32_t kTss32StackStride = 8;
// 64-bit TSS (SDM 7.7, figure 7-11): RSPn at 4 + 8n, ISTn at 0x24 + 8(n-1).
constexpr uint32_t kTss64Rsp0 = 0x04;
constexpr uint32_t kTss64Ist1 = 0x24;
constexpr unsigned kIstEntries = 7;

struct StackPointer32 {
  uint16_t ss = 0;
  uint32_t esp = 0;
};

// What a TSS stack read gives: the value, or why not. A field beyond the TR
// limit is #TS(TSS selector) whose EXT bit the caller knows (SDM 6.13), so
// it is reported as kBeyondLimit; a faulting read gives its fault.
template <typename T>
struct TssRead {
  LookupStatus status = LookupStatus::kOk;
  T value{};
  Fault fault;
};

// SSn:ESPn of a 32-bit TSS, n = 0..2.
TssRead<StackPointer32> read_tss32_stack(LinearMemory& mem, const Segment& tr, unsigned privilege);
// RSPn of a 64-bit TSS, n = 0..2.
TssRead<uint64_t> read_tss64_rsp(LinearMemory& mem, const Segment& tr, unsigned privilege);
// ISTn of a 64-bit TSS, n = 1..7.
TssRead<uint64_t> read_tss64_ist(LinearMemory& mem, const Segment& tr, unsigned ist);

// The implicit supervisor access every system-table read is (SDM 4.6).
inline Accessor system_table_access() { return Accessor{.cpl = 0, .implicit_supervisor = true, .stack = false}; }

}  // namespace topolab::x86
