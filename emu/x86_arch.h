// The x86 architectural vocabulary the pure CPU rules share: exception
// vectors, a fault as the CPU raises it, and guest memory as the CPU itself
// reaches it on the guest's behalf (through the guest's paging). No engine
// here: the page walker, the event-delivery rules and the vCPU all speak it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>

namespace topolab::x86 {

// Exception and interrupt vectors (SDM Vol. 3A 6.3.1, table 6-1).
enum Vector : uint8_t {
  kDivideError = 0,          // #DE
  kDebug = 1,                // #DB
  kNmi = 2,
  kBreakpoint = 3,           // #BP
  kOverflow = 4,             // #OF
  kBoundRange = 5,           // #BR
  kInvalidOpcode = 6,        // #UD
  kDeviceNotAvailable = 7,   // #NM
  kDoubleFault = 8,          // #DF
  kInvalidTss = 10,          // #TS
  kSegmentNotPresent = 11,   // #NP
  kStackFault = 12,          // #SS
  kGeneralProtection = 13,   // #GP
  kPageFault = 14,           // #PF
  kFpuError = 16,            // #MF
  kAlignmentCheck = 17,      // #AC
  kMachineCheck = 18,        // #MC
  kSimdError = 19,           // #XM
  kVirtualization = 20,      // #VE
  kControlProtection = 21,   // #CP
};

// An exception as the CPU raises it: the vector, the error code it pushes
// (none for the vectors that push none), and for #PF the linear address
// that goes to CR2.
struct Fault {
  uint8_t vector = 0;
  std::optional<uint32_t> error_code;
  uint64_t cr2 = 0;  // #PF only
  friend bool operator==(const Fault&, const Fault&) = default;
};

// Who makes an access, for the page walker's permission checks (SDM Vol. 3A
// 4.6): `cpl` is the current privilege level; an implicit supervisor access
// (GDT/LDT/IDT/TSS reads, and the stack frame of an event delivered to a
// ring-0 handler) is a supervisor access whatever the CPL.
struct Accessor {
  unsigned cpl = 0;
  bool implicit_supervisor = false;
  bool stack = false;  // an SS-relative access: non-canonical gives #SS(0), not #GP(0)
};

// Guest linear memory as the CPU sees it under its current paging mode. A
// failed access returns the fault the CPU would raise (#PF with its error
// code and CR2, or #GP(0)/#SS(0) for a non-canonical address) and writes
// nothing; a successful walk sets accessed and dirty bits as hardware does.
class LinearMemory {
 public:
  virtual ~LinearMemory() = default;
  virtual std::optional<Fault> read(uint64_t linear, void* out, size_t len, Accessor who) = 0;
  virtual std::optional<Fault> write(uint64_t linear, const void* in, size_t len, Accessor who) = 0;
};

}  // namespace topolab::x86
