// SPDX-License-Identifier: GPL-2.0-or-later
// One virtual CPU as the machine sees it: the Vcpu interface, what it asks
// of the machine (VcpuHost, MmioHandler) and why it stops (VcpuExit).
// Everything the guest does that the machine must see comes out either as a
// synchronous call on VcpuHost or as the VcpuExit that run() returns. The
// real one runs on Unicorn (emu/unicorn_vcpu.h, the only code that knows
// Unicorn exists); the machine's unit tests drive a scripted fake.
#pragma once

#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "emu/pause_loop.h"
#include "model/cpu_model.h"  // EngineCpuModel
#include "model/cpuid_regs.h"
#include "arch/register_file.h"
#include "arch/x86_arch.h"
#include "base/guest_ram.h"

#include "devices/kvm_hypercall.h"

namespace topolab {

// What a debugger sets on a vCPU (emu/machine_debug): breakpoints at linear
// addresses (CS.base + RIP, as the trace prints them) and watchpoints on
// linear ranges. None writes guest memory: each is a hook of the engine's.
struct DebugWatch {
  uint64_t address = 0;   // linear, as the debugger named it (the stop reports it)
  uint64_t physical = 0;  // where it is watched: the bytes, through every alias
  uint64_t length = 1;
  bool reads = false;   // Z3, Z4
  bool writes = false;  // Z2, Z4
  friend bool operator==(const DebugWatch&, const DebugWatch&) = default;
};
struct DebugPoints {
  std::set<uint64_t> breakpoints;
  std::vector<DebugWatch> watches;
  bool empty() const { return breakpoints.empty() && watches.empty(); }
};

// Why a vCPU stopped for the debugger (VcpuHost::debug_stop).
struct DebugStop {
  enum class Kind : uint8_t {
    kBreakpoint,  // in front of the instruction at a breakpoint
    kStep,        // in front of the next instruction after a step
    kWatch,       // right after the instruction that made a watched access
  };
  Kind kind = Kind::kBreakpoint;
  uint64_t address = 0;        // kWatch: the linear address of the access (the first byte watched)
  bool write = false;          // kWatch: a store (else a load)
};

// What a vCPU asks of the machine while the guest runs. Calls arrive in the
// middle of a quantum; Vcpu::instructions() is exact during every one of them.
class VcpuHost {
 public:
  virtual ~VcpuHost() = default;
  virtual CpuidRegs cpuid(uint32_t leaf, uint32_t subleaf) = 0;
  // What CPUID answers, for the vCPU's own use (MAXPHYADDR, the vendor),
  // with no guest CPUID executed and so no exit charged. Zeros: unknown.
  virtual CpuidRegs describe_cpuid(uint32_t leaf, uint32_t subleaf) { return {}; }
  virtual uint32_t port_in(uint16_t port, unsigned size) = 0;
  virtual void port_out(uint16_t port, unsigned size, uint32_t value) = 0;
  // nullopt / false: no such MSR (or a bad value); the vCPU exits with
  // VcpuExit::Reason::GeneralProtection instead of silently ignoring it.
  virtual std::optional<uint64_t> read_msr(uint32_t msr) = 0;
  virtual bool write_msr(uint32_t msr, uint64_t value) = 0;
  // Whether the CPU has `msr` as far as CPUID announces it (model/msr_features),
  // for the MSRs the vCPU keeps in the engine (EFER, STAR, PAT, SYSENTER, FS/GS
  // base...), which never reach read_msr/write_msr: false makes RDMSR and
  // WRMSR of it #GP(0).
  virtual bool msr_announced(uint32_t msr) { return true; }
  // RDPMC's counter ECX (SDM Vol. 2 RDPMC; AMD APM RDPMC): nullopt for one
  // the CPU does not have, which is #GP(0).
  virtual std::optional<uint64_t> read_pmc(uint32_t ecx) { return std::nullopt; }
  // The time-stamp counter the guest sees: virtual time, never the host's.
  virtual uint64_t read_tsc() = 0;
  // RDTSCP's IA32_TSC_AUX: nullopt where the CPU has none (RDTSCP is then
  // #UD). Unlike RDMSR no exit: KVM runs RDTSCP in the guest (VMX's
  // "enable RDTSCP"), with TSC offsetting.
  virtual std::optional<uint64_t> read_tsc_aux() { return read_msr(x86::kMsrTscAux); }
  // A load or store at a physical address where there is no RAM and no
  // device: the load read all ones (open bus) and the store was dropped.
  virtual void open_bus_access(uint64_t physical, unsigned size, bool write) {}
  // An exception the engine raised (a fault, trap or abort, not INT n) went
  // through the guest's IDT: each one stops the engine, so they count.
  virtual void exception_taken(uint8_t vector) {}
  // VMCALL or VMMCALL (devices/kvm_hypercall.h): what RAX receives from a
  // KVM-like host, or nullopt where there is none, and the instruction is
  // #UD as on bare metal.
  virtual std::optional<int64_t> hypercall(const KvmHypercall& call) { return std::nullopt; }
  // CR8, the local APIC's TPR[7:4] (SDM Vol. 3A 11.8.6.5): the engine has no
  // APIC of its own. write_cr8 gets a value the vCPU checked (0..15).
  virtual uint64_t read_cr8() { return 0; }
  virtual void write_cr8(uint64_t value) {}
  // A serializing system instruction (base/event_kinds.h) is about to run,
  // for the clock to charge its cycles (model/cost_model.h).
  virtual void system_instruction(SystemInstruction kind) {}
  // The vCPU stopped for its debugger, inside run(), between two
  // instructions: instructions() is exact and RIP is the next instruction.
  // The host may read and write the vCPU's registers and memory and change
  // its debug points and step before it returns; then the run goes on with
  // the rest of its budget, exactly as if it had never stopped.
  virtual void debug_stop(const DebugStop& stop) {}
};

struct VcpuExit {
  enum class Reason {
    QuantumEnd,         // the instruction budget of run() is used up
    StopRequested,      // the host called request_stop() during a callback
    Halt,               // HLT retired; rip is the instruction after it
    Monitor,            // MONITOR (0F 01 C8) or MWAIT (0F 01 C9), which the
    Mwait,              // engine cannot run: rip is at the instruction, not
                        // yet retired, and `operands` holds what it reads
                        // (`address`: the physical address of DS:rAX). The
                        // machine emulates it and calls
                        // retire_emulated_instruction(), or raises #UD.
    TripleFault,        // a fault while delivering #DF (SDM 6.15): the CPU
                        // would shut down; `detail` names all three events
    Unsupported,        // the guest needs what topolab does not model (a task
                        // gate, a fetch from no RAM, ...); `detail` says what
    PauseLoop,          // a pause-loop exit (set_pause_loop_exiting): rip is at
                        // the PAUSE, not yet retired, and the loop is at a
                        // fixed point (emu/pause_loop.h); `loop_reads_time`
                        // says whether it read the TSC
  };
  Reason reason = Reason::QuantumEnd;
  uint64_t rip = 0;        // where the vCPU stands now
  uint64_t address = 0;    // Monitor: the physical address of DS:rAX
  struct {
    uint32_t eax = 0, ecx = 0, edx = 0;  // Monitor, Mwait: the instruction's operands
  } operands;
  bool loop_reads_time = false;  // PauseLoop: the loop read the TSC
  // PauseLoop: the run did nothing but come back to the loop of the last
  // pause-loop exit and find it unchanged (nothing it did is visible outside).
  bool spin_recheck = false;
  // PauseLoop: not a PAUSE loop but an idle loop proved so: a jump to
  // itself (`jmp .`), which only an interrupt, NMI or INIT can end, or a
  // loop that only reads memory and whose last turn changed no register
  // (`1: cmp dword [x], 0; je 1b`), which a store by someone else can end
  // too; `detail` names the loop. KVM has no exit for either: nothing is
  // charged, no PLE exit is counted.
  bool idle_loop = false;
  // PauseLoop with idle_loop: the loop has no way out (no branch leaves it,
  // nothing in it can fault) but its registers move from turn to turn. Only
  // an interrupt, NMI or INIT can end it, but it is no fixed point: the
  // machine may not skip it to an earlier event (the handler would see
  // registers of the wrong turn), only end the run as a hang when nothing
  // can end it before the time limit.
  bool loop_state_moves = false;
  std::string detail;      // one human-readable line, for diagnostics
};

const char* to_string(VcpuExit::Reason reason);

// A device register window the guest reaches with loads and stores (the
// local APIC page). Calls are synchronous, in the middle of a block, like
// the VcpuHost port calls; a write may call Vcpu::request_stop(). Unicorn
// (as measured on 2.0.1) delivers 1-, 2- and 4-byte accesses as they are;
// an 8-byte access arrives as two 4-byte ones (low half first) and an unaligned 4-byte access
// is split wrongly, so a handler sees what the library gives it.
// During a call, Vcpu::instructions() counts up to the start of the block
// holding the access (Unicorn does not say which instruction it was).
class MmioHandler {
 public:
  virtual ~MmioHandler() = default;
  virtual uint64_t read(uint64_t offset, unsigned size) = 0;
  virtual void write(uint64_t offset, unsigned size, uint64_t value) = 0;
};

// What inject_interrupt / inject_exception did. When the guest has no usable
// handler (IVT/IDT entry beyond the limit, gate not present or of a kind the
// vCPU does not deliver, a frame that does not fit in RAM), nothing about the
// vCPU has changed and `detail` names the vector, the gate and the mode in
// one line: the machine reports it as a triple-fault-like state.
struct [[nodiscard]] Injection {
  bool delivered = false;
  std::string detail;  // not delivered: why
  explicit operator bool() const { return delivered; }
};

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
  virtual ~Vcpu() = default;

  // The state a Multiboot 1 loader hands over: 32-bit protected mode, flat
  // 4 GiB code and data segments (CS 0x08, the others 0x10), paging and
  // interrupts off, CR4 and EFER clear. No guest memory is touched: as the
  // Multiboot spec allows, GDTR is left invalid (base 0, limit 0), so the
  // guest must load its own GDT before it reloads a segment register.
  // The PVH boot ABI (Xen's docs/misc/pvh.pandoc) asks for the same state,
  // with EBX the hvm_start_info address and GDTR unspecified too.
  virtual void enter_multiboot(uint32_t entry, uint32_t eax, uint32_t ebx) = 0;

  // The state Linux's 32-bit boot protocol asks for (boot.rst, "32-bit boot
  // protocol"): protected mode with paging and interrupts off, GDTR at a
  // table in guest RAM whose 0x10 is flat code (CS) and 0x18 flat data (the
  // other segments), ESI the boot_params address, EBP, EDI and EBX zero.
  virtual void enter_linux32(uint32_t entry, uint32_t boot_params, uint32_t gdt, uint16_t gdt_limit) = 0;

  // INIT (SDM Vol. 3A 9.1.1, table 9-1): real mode, CR0 = 0x60000010, CR3,
  // CR4 and EFER clear, RFLAGS = 2, general registers 0, GDTR/IDTR base 0
  // limit 0xFFFF, data segments 0. CS:IP = F000:FFF0 but with the real-mode
  // base 0xF0000, not the reset base 0xFFFF0000: an AP only waits for SIPI
  // here, and run() refuses to run a vCPU that waits for SIPI. MSRs other
  // than EFER keep their values, as on hardware.
  virtual void reset_for_init() = 0;
  // SIPI (SDM Vol. 3A 10.4.4): from the INIT state, real mode at
  // CS = vector << 8 (base vector << 12), IP = 0, with translated code
  // dropped (the boot CPU wrote the trampoline).
  virtual void start_at_sipi(uint8_t vector) = 0;
  // From the INIT state, real mode at CS:IP = `selector`:`ip` (base
  // selector << 4), translated code dropped: the firmware's jump to an
  // S3 waking vector (ACPI's FACS firmware_waking_vector, as SeaBIOS's
  // s3_resume makes it).
  virtual void start_in_real_mode(uint16_t selector, uint16_t ip) = 0;
  // True from reset_for_init() until start_at_sipi() or start_in_real_mode().
  virtual bool waiting_for_sipi() const = 0;

  // Delivers an external interrupt (or NMI: vector 2) or an exception through
  // the guest's IVT (real mode) or IDT (protected and long mode), between
  // runs, as the CPU would at an instruction boundary: the next run() starts
  // in the handler, and instructions() does not change (a delivery is not an
  // instruction). The caller decides whether the event may be delivered now
  // (interrupt_window_open() for maskable interrupts; exceptions and NMI are
  // not masked by IF or the shadow).
  // Supported (SDM Vol. 3A 6.12, 20.1.4):
  // - real mode: 4-byte IVT entries; pushes FLAGS, CS, IP; clears IF, TF, AC;
  //   no error code is pushed in real mode.
  // - 32-bit protected mode: 32-bit interrupt (0xE) and trap (0xF) gates;
  //   pushes EFLAGS, CS, EIP and the error code; clears TF, NT, RF, VM and,
  //   for an interrupt gate, IF.
  // - long mode (64-bit and compatibility code): 16-byte 64-bit interrupt and
  //   trap gates; aligns RSP down to 16, pushes SS, RSP, RFLAGS, CS, RIP and
  //   the error code; IST stacks are taken from the TSS at TR.base.
  // A handler at a higher privilege than the interrupted code is entered
  // with the ring change and the stack switch through the TSS (RSPn, or an
  // IST stack in long mode), as arch/event_delivery rules.
  // Not supported (delivery fails with a detail): task gates, 16-bit gates
  // and 16-bit TSSs, and virtual-8086 mode (arch/event_delivery.h).
  virtual Injection inject_interrupt(uint8_t vector) = 0;
  // An NMI (vector 2): once delivered, further NMIs are blocked until the
  // guest's next IRET (SDM 6.7.1); the machine holds them pending till then.
  virtual Injection inject_nmi() = 0;
  virtual bool nmi_blocked() const = 0;
  // While on, run() also stops at the first block boundary where the vCPU
  // could take an interrupt (IF set, no shadow) or right after an IRET: the
  // machine turns it on while it holds an interrupt or NMI the vCPU could
  // not take when the run began, so delivery is not a quantum late.
  virtual void stop_when_interruptible(bool on) = 0;
  virtual Injection inject_exception(uint8_t vector, std::optional<uint32_t> error_code) = 0;

  // RFLAGS.IF = 1 and the vCPU is not in an STI / MOV SS / POP SS shadow
  // (SDM Vol. 3A 6.8.3): if the run stopped right after one of those, the
  // window stays closed until the next run() has executed at least one more
  // instruction (a run always executes at least one block). With `sti; hlt`
  // the machine therefore runs the HLT, sees Halt with the window open and
  // injects then: the wakeup is not lost and IRET returns after the HLT.
  virtual bool interrupt_window_open() const = 0;
  // The run stopped right after an STI, MOV SS or POP SS: the shadow, which
  // on a KVM host holds NMIs too (vmx_nmi_allowed; SDM Vol. 3C 26.3.1.5
  // says some processors block NMIs there), until one more instruction ran.
  virtual bool in_interrupt_shadow() const = 0;

  // Maps a device window per vCPU (each vCPU sees its own local APIC).
  // `base` and `size` must be 4 KiB aligned and must not overlap RAM or
  // another window. Relocation: unmap_mmio, then map_mmio at the new base.
  virtual void map_mmio(uint64_t base, uint64_t size, MmioHandler& handler) = 0;
  virtual void unmap_mmio(uint64_t base, uint64_t size) = 0;

  // Runs at most `budget` instructions (counted exactly, at block
  // granularity: a block that would overrun the budget does not start,
  // except the first block of a run).
  virtual VcpuExit run(uint64_t budget) = 0;
  // VcpuExit::rip and VcpuState::rip are RIP, the offset in CS. In real mode
  // the instruction is at the linear address CS.base + IP; the trace and
  // the exit details print linear addresses.

  // From a VcpuHost callback: stop at the next block boundary (the stop is
  // exact there; docs/unicorn.md, "exact exits"), which is right
  // after the instruction when it was an RDMSR or WRMSR (each ends its
  // block). A request that
  // no block boundary consumed (the run ended first, e.g. at HLT) is
  // dropped when the next run() starts.
  virtual void request_stop() = 0;
  // The local APIC's TPR[7:4], which MOV from CR8 reads in the engine (it
  // has no APIC of its own); the machine sets it whenever the TPR may have
  // changed, before each slice and after each APIC write.
  virtual void set_cr8(uint64_t value) {}

  // Retires the MONITOR or MWAIT that run() stopped at (Reason::Monitor or
  // Mwait) once the machine has emulated it: RIP steps over its 3 bytes and
  // an STI shadow that covered it is over.
  virtual void retire_emulated_instruction() = 0;

  // PAUSE instructions retired since construction (spin-loop iterations).
  virtual uint64_t pauses() const = 0;

  // Pause-loop exiting (emu/pause_loop.h): with it, run() returns
  // Reason::PauseLoop at a PAUSE once the guest has spun, at a fixed point,
  // for the window. nullopt (the default): never; every PAUSE runs.
  virtual void set_pause_loop_exiting(std::optional<PauseLoopExiting> ple) = 0;

  // Instructions retired since construction. During a VcpuHost callback it
  // counts the instructions retired before the one that made the call. A
  // REP string instruction counts once, when its last iteration is done.
  virtual uint64_t instructions() const = 0;

  // Prints every executed instruction, disassembled, to `out` (nullptr: off);
  // a REP string instruction once per iteration. Off costs nothing: the
  // per-instruction hook exists only while on. Call it between runs:
  // switching retranslates all code.
  virtual void set_trace(std::FILE* out) = 0;

  // Drops translated code, e.g. after the host wrote guest code. Call it
  // between runs.
  virtual void flush_translations() = 0;

  virtual VcpuState state() const = 0;

  // --- The debugger's view (emu/machine_debug). Between runs, or from
  // VcpuHost::debug_stop. A vCPU without a debugger pays nothing: no hook
  // exists until a point is set.
  // Replaces every breakpoint and watchpoint. Code already translated is
  // translated again where a breakpoint lands; a watchpoint hooks every load
  // and store (slow, as only a debugger asks) and every instruction.
  virtual void set_debug_points(const DebugPoints& points) {}
  // On: the vCPU stops (debug_stop, kStep) in front of the next instruction
  // that is not the one it stands at now (it retired that one, or an event
  // moved it into a handler). Stays on until turned off.
  virtual void set_debug_step(bool on) {}
  // The vCPU stops (debug_stop, kStep) in front of the instruction it
  // reaches with instructions() == `count`: where a replay of the run must
  // stop for reverse execution (emu/machine_debug.h). nullopt: off.
  virtual void set_debug_stop_at(std::optional<uint64_t> count) {}
  // A register as gdb sees it (arch/register_file.h): register_bytes(id)
  // bytes, little-endian. false: this vCPU cannot say (it is not started).
  virtual bool read_register(x86::RegisterId id, std::span<uint8_t> out) { return false; }
  // false: a register this vCPU does not let a debugger write.
  virtual bool write_register(x86::RegisterId id, std::span<const uint8_t> in) { return false; }
  // The guest-physical address of a linear one through the vCPU's paging
  // (no fault raised, no accessed or dirty bit set); nullopt: not mapped.
  virtual std::optional<uint64_t> translate_linear(uint64_t linear) { return std::nullopt; }
  // The linear address of RIP (CS.base + RIP), where breakpoints are set.
  virtual uint64_t linear_rip() { return state().rip; }
  // CR4 alone, for the CPUID exit's OSPKE bit: one register, not state().
  virtual uint64_t cr4() const { return state().cr4; }
  virtual unsigned index() const = 0;

  // --- Snapshots (emu/machine_snapshot.h) --------------------------------------
  // The vCPU's whole state between two runs (never inside one): its CPU
  // state as the engine holds it, the instruction count and what outlives
  // a run (spin and loop detection, the interrupt shadow, NMI blocking).
  // Bytes only the same build reads back. Caches the vCPU rebuilds (decoded
  // blocks, translations, trap sites) are not in it.
  virtual std::string save_state() const { throw std::logic_error("this vCPU cannot be saved"); }
  // Into a vCPU made for the same machine and configuration, that has not
  // run: from then on it runs as the saved one would have.
  virtual void load_state(std::string_view bytes) { throw std::logic_error("this vCPU cannot be loaded"); }
};

// Makes vCPU `index`'s engine, at its first SIPI (the boot CPU's at once).
using VcpuFactory =
    std::function<std::unique_ptr<Vcpu>(unsigned index, GuestRam& ram, VcpuHost& host, EngineCpuModel cpu)>;

}  // namespace topolab
