// One virtual CPU on one Unicorn engine. This header and vcpu.cc are the only
// places that know Unicorn exists; everything the guest does that the machine
// must see comes out either as a synchronous call on VcpuHost or as the
// VcpuExit that run() returns. See ../shared/UNICORN_NOTES.md for why each
// workaround exists.
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>

#include "emu/cpuid_regs.h"
#include "emu/guest_ram.h"

namespace topolab {

// What a vCPU asks of the machine while the guest runs. Calls arrive in the
// middle of a quantum; Vcpu::instructions() is exact during every one of them.
class VcpuHost {
 public:
  virtual ~VcpuHost() = default;
  virtual CpuidRegs cpuid(uint32_t leaf, uint32_t subleaf) = 0;
  virtual uint32_t port_in(uint16_t port, unsigned size) = 0;
  virtual void port_out(uint16_t port, unsigned size, uint32_t value) = 0;
  // nullopt / false: no such MSR (or a bad value); the vCPU exits with
  // VcpuExit::Reason::GeneralProtection instead of silently ignoring it.
  virtual std::optional<uint64_t> read_msr(uint32_t msr) = 0;
  virtual bool write_msr(uint32_t msr, uint64_t value) = 0;
  // The time-stamp counter the guest sees: virtual time, never the host's.
  virtual uint64_t read_tsc() = 0;
};

struct VcpuExit {
  enum class Reason {
    QuantumEnd,         // the instruction budget of run() is used up
    StopRequested,      // the host called request_stop() during a callback
    Halt,               // HLT retired; rip is the instruction after it
    GeneralProtection,  // #GP the vCPU itself raised (unknown MSR, ...)
    InvalidOpcode,      // #UD
    Exception,          // any other CPU exception; see vector
    UnmappedMemory,     // fetch, read or write outside RAM and MMIO; for a
                        // read or write, rip and instructions() stand at the
                        // start of its block (Unicorn 2.0.1 does not say
                        // which instruction of the block it was)
  };
  Reason reason = Reason::QuantumEnd;
  uint64_t rip = 0;        // where the vCPU stands now
  int vector = -1;         // Exception: the vector number
  uint64_t address = 0;    // UnmappedMemory: the faulting address
  std::string detail;      // one human-readable line, for diagnostics
};

const char* to_string(VcpuExit::Reason reason);

// Register snapshot for post-mortems and traces.
struct VcpuState {
  uint64_t rax, rbx, rcx, rdx, rsi, rdi, rbp, rsp;
  uint64_t r8, r9, r10, r11, r12, r13, r14, r15;
  uint64_t rip, rflags;
  uint64_t cr0, cr3, cr4, efer;
  uint16_t cs, ds, es, ss;
};

class Vcpu {
 public:
  Vcpu(unsigned index, GuestRam& ram, VcpuHost& host);
  ~Vcpu();
  Vcpu(const Vcpu&) = delete;
  Vcpu& operator=(const Vcpu&) = delete;

  // The state a Multiboot 1 loader hands over: 32-bit protected mode, flat
  // 4 GiB code and data segments (CS 0x08, the others 0x10), paging and
  // interrupts off, CR4 and EFER clear. No guest memory is touched: as the
  // Multiboot spec allows, GDTR is left invalid (base 0, limit 0), so the
  // guest must load its own GDT before it reloads a segment register.
  void enter_multiboot(uint32_t entry, uint32_t eax, uint32_t ebx);

  // Runs at most `budget` instructions (counted exactly, at block
  // granularity: a block that would overrun the budget does not start,
  // except the first block of a run).
  VcpuExit run(uint64_t budget);

  // From a VcpuHost callback: stop at the next block boundary (the stop is
  // exact there; see "the stop trap" in UNICORN_NOTES.md), or right after
  // the instruction when it was an RDMSR, WRMSR or RDTSC(P). A request that
  // no block boundary consumed (the run ended first, e.g. at HLT) is
  // dropped when the next run() starts.
  void request_stop();

  // Instructions retired since construction. During a VcpuHost callback it
  // counts the instructions retired before the one that made the call. A
  // REP string instruction counts once, when its last iteration is done.
  uint64_t instructions() const;

  // Prints every executed instruction, disassembled, to `out` (nullptr: off);
  // a REP string instruction once per iteration. Off costs nothing: the
  // per-instruction hook exists only while on. Call it between runs:
  // switching retranslates all code.
  void set_trace(std::FILE* out);

  // Drops translated code, e.g. after the host wrote guest code. Call it
  // between runs.
  void flush_translations();

  VcpuState state() const;
  unsigned index() const;

 private:
  struct Engine;
  std::unique_ptr<Engine> engine_;
};

}  // namespace topolab
