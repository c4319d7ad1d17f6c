// SPDX-License-Identifier: GPL-2.0-or-later
// Delivering an interrupt or exception through the guest's IVT/IDT, as a
// pure function of a CPU state snapshot and guest linear memory.
//
// Unicorn never vectors an event through the guest's IDT, so topolab does it
// on the host side with these rules and loads the result into the vCPU.
//
// Follows the Intel SDM:
//   Vol. 2A INT n/INTO/INT3/INT1 pseudocode (the whole delivery algorithm)
//   Vol. 3A 6.4.2  software interrupts: gate DPL check (INT n, INT3, INTO only)
//   Vol. 3A 6.12   protected-mode delivery: privilege change, stack switch, flags
//   Vol. 3A 6.13   error codes: EXT (bit 0), IDT (bit 1), TI (bit 2)
//   Vol. 3A 6.14   64-bit mode: 16-byte gates, RSPn, IST, 16-byte alignment
//   Vol. 3A 6.15   table 6-5, conditions for a double fault; triple fault
//   Vol. 3A 20.1.4 real-address mode: the IVT
//
// Not supported (reported as DeliveryUnsupported, never as a fault, so the
// vCPU can refuse the guest with one clear line):
//   - task gates (no hardware task switching),
//   - 16-bit interrupt and trap gates, and 16-bit TSSs,
//   - virtual-8086 mode (RFLAGS.VM = 1).
// The pushed EFLAGS image has RF set for fault-class exceptions but #DB
// (SDM 18.3.1.1), as the hardware's.
// Not modelled: shadow stacks (CET), the accessed bit of the loaded descriptors, and the SMAP
// difference between implicit and explicit supervisor stack pushes beyond
// what Accessor carries.
#pragma once

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "arch/descriptors.h"
#include "arch/x86_arch.h"

namespace topolab::x86 {

// --- Error code fields (SDM Vol. 3A 6.13, figure 6-7) ---
constexpr uint32_t kErrorCodeExt = 1u << 0;  // the event was external to the program
constexpr uint32_t kErrorCodeIdt = 1u << 1;  // the index names an IDT gate
constexpr uint32_t kErrorCodeTi = 1u << 2;   // the index names an LDT entry (IDT = 0)

enum class CpuMode {
  kReal,           // real-address mode (CR0.PE = 0)
  kProtected,      // legacy protected mode, 32-bit code and gates
  kCompatibility,  // IA-32e mode, CS.L = 0
  kLong64,         // IA-32e mode, CS.L = 1
};

inline bool is_ia32e(CpuMode m) { return m == CpuMode::kCompatibility || m == CpuMode::kLong64; }

// What the delivery rules read of the CPU. `cpl` is kept explicitly (it is
// CS.RPL after any architectural CS load, but a snapshot should not make
// the rules guess).
struct CpuState {
  CpuMode mode = CpuMode::kReal;
  unsigned cpl = 0;
  Segment cs, ss;
  uint64_t rip = 0;  // the instruction the event interrupts (faults, INT n: its first byte)
  uint64_t rsp = 0;
  uint64_t rflags = kFlagReserved1;
  TableRegister gdtr, idtr;
  Segment ldtr, tr;
};

enum class EventKind {
  kExternalInterrupt,       // INTR from the local APIC / PIC
  kNmi,
  kHardwareException,       // a fault, trap or abort the CPU raises
  kSoftwareInterrupt,       // INT n
  kSoftwareException,       // INT3, INTO
  kPrivilegedSoftwareException,  // INT1 (ICEBP): no DPL check, EXT set
};

struct Event {
  EventKind kind = EventKind::kHardwareException;
  uint8_t vector = 0;
  // Hardware exceptions: the error code to push, for the vectors that push
  // one (kErrorCodeVectors). Ignored for every other kind and vector.
  uint32_t error_code = 0;
  // Software interrupts and exceptions: the instruction length; the pushed
  // return address is rip + instruction_length (a trap).
  uint8_t instruction_length = 0;
  uint64_t cr2 = 0;  // #PF: only to name the event

  static Event from_fault(const Fault& f);
  static Event external(uint8_t vector) { return {.kind = EventKind::kExternalInterrupt, .vector = vector}; }
  static Event nmi() { return {.kind = EventKind::kNmi, .vector = kNmi}; }
  static Event int_n(uint8_t vector, uint8_t length = 2) {
    return {.kind = EventKind::kSoftwareInterrupt, .vector = vector, .instruction_length = length};
  }
};

// True for the exceptions that push an error code outside real mode:
// #DF, #TS, #NP, #SS, #GP, #PF, #AC, #CP (SDM Vol. 3A table 6-1).
bool pushes_error_code(uint8_t vector);

// "#GP(0x10)", "#PF(0x2, cr2=0x1000)", "INT 0x80", "INTR 0x20", "NMI".
std::string describe(const Event& e);
// The vector's mnemonic (SDM Vol. 3A table 6-1: "#GP"), or "exception 0x9"
// for a reserved one.
std::string exception_mnemonic(uint32_t vector);

// The state to load after a successful delivery, and what was pushed.
struct Delivered {
  CpuMode mode = CpuMode::kReal;  // IA-32e delivery always lands in 64-bit mode
  unsigned cpl = 0;
  Segment cs, ss;
  uint64_t rip = 0, rsp = 0, rflags = 0;
  uint64_t frame_linear = 0;   // linear address of the lowest pushed byte
  std::vector<uint8_t> frame;  // the bytes pushed, lowest address first
};

struct DeliveryUnsupported {
  std::string reason;  // one line, e.g. "vector 0x20: task gate (hardware task switching)"
};

// One delivery attempt: the event is delivered, or raising it raised a fault
// (which exception combination then turns into the next event), or the
// guest uses something outside what we model. The frame is written through
// `mem` only when the result is Delivered (SDM: a fault during delivery is
// reported with the old state intact).
using DeliveryResult = std::variant<Delivered, Fault, DeliveryUnsupported>;

DeliveryResult deliver_event(const CpuState& cpu, const Event& event, LinearMemory& mem);

// --- Exception combination (SDM Vol. 3A 6.15, tables 6-4 and 6-5) ---

enum class ExceptionClass { kBenign, kContributory, kPageFault, kDoubleFault };

// Interrupts (external, NMI, INT n, INT3, INTO, INT1) are benign whatever
// their vector; hardware exceptions are classed by vector.
ExceptionClass classify(const Event& e);
ExceptionClass classify_vector(uint8_t vector);

enum class Combination {
  kSerial,       // deliver the second exception (the first is lost or re-raised later)
  kDoubleFault,  // deliver #DF(0) instead
  kTripleFault,  // a fault while delivering #DF: shutdown
};

// The second exception is raised while the CPU delivers the first.
Combination combine(ExceptionClass first, ExceptionClass second);

struct TripleFault {
  std::vector<Event> chain;  // the events in the order they were raised
  std::string description;   // "triple fault: #PF(0x0, cr2=0x...) while delivering #DF(0x0) while delivering #GP(0x0)"
};

using DeliveryOutcome = std::variant<Delivered, TripleFault, DeliveryUnsupported>;

// Delivers `event`; a fault raised during its delivery is combined with it
// per table 6-5 and delivered in turn (serially, or as #DF), until something
// is delivered or the CPU would shut down.
DeliveryOutcome deliver_with_combination(const CpuState& cpu, const Event& event, LinearMemory& mem);

}  // namespace topolab::x86
