// SPDX-License-Identifier: GPL-2.0-or-later
// One local APIC as a pure register model: Intel SDM vol. 3A, chapter
// "Advanced Programmable Interrupt Controller (APIC)" (chapter 10 before the
// 2022 editions, 11 since; section numbers below are the chapter-10 ones).
// xAPIC MMIO and x2APIC MSRs go through one register table; an ICR or
// SELF_IPI write *returns* the bus message it caused, and the machine routes
// it (matches() / accept() on each receiver). Time is virtual: every call
// that needs it takes `now` in nanoseconds; there is no host clock.
//
// Not supported (each is a deliberate simplification, not an accident):
// - EOI-broadcast suppression: version bit 24 is 0 and SVR bit 12 is
//   reserved. Every EOI of a level-triggered vector (TMR set) is broadcast:
//   the write returns the vector (ApicWrite::eoi_broadcast) and the
//   machine hands it to the I/O APIC (SDM 10.8.5).
// - Remote read: RRD (xAPIC offset 0xC0) reads 0.
// - Focus processor checking: SVR bit 9 is stored but never consulted.
// - LINT1, thermal, performance-counter and CMCI LVTs are registers only:
//   no pins, sensors or counters raise them. LINT0 takes only the 8259's
//   INTR as ExtINT (accepts_pic_intr; the machine does the INTA). Only the
//   timer and error LVTs deliver vectors. Delivery status (bit 12) and
//   remote IRR (bit 14) read 0.
// - Delivery is instantaneous: ICR delivery status always reads 0.
// - SMI and ExtINT messages are produced by ICR writes but accept() refuses
//   them; the machine counts and reports them.
// - ICR combinations SDM table 10-3 calls invalid (e.g. lowest priority or
//   SIPI with the "self" shorthand) are sent as written; the router decides.
// - Lowest-priority arbitration is the APIC bus's job (devices/apic_bus.h):
//   it picks among the matching APICs by arbitration_priority() (no focus
//   processor).
// - MMIO accesses other than aligned 32-bit: reads of 1 or 2 bytes within a
//   register's first dword return those bytes, other reads return 0; such
//   writes are ignored (SDM 10.4.1 makes only 32-bit accesses architectural).
// - The TSC seen by TSC-deadline mode is `now` at the configured TSC rate;
//   guest writes to IA32_TSC / IA32_TSC_ADJUST are not seen here.
// - A divide-configuration write while the timer counts takes effect at the
//   next initial-count write (real hardware switches rate at once).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "base/event_kinds.h"  // ApicWriteKind
#include "base/memory_map.h"

namespace topolab {

// Register offsets in the xAPIC page (SDM table 10-1); the x2APIC MSR is
// 0x800 + offset / 16 (table 10-6). Bit names follow the SDM figures.
namespace apic {
inline constexpr uint32_t REG_ID = 0x020;
inline constexpr uint32_t REG_VERSION = 0x030;
inline constexpr uint32_t REG_TPR = 0x080;
inline constexpr uint32_t REG_APR = 0x090;
inline constexpr uint32_t REG_PPR = 0x0a0;
inline constexpr uint32_t REG_EOI = 0x0b0;
inline constexpr uint32_t REG_RRD = 0x0c0;
inline constexpr uint32_t REG_LDR = 0x0d0;
inline constexpr uint32_t REG_DFR = 0x0e0;
inline constexpr uint32_t REG_SVR = 0x0f0;
inline constexpr uint32_t REG_ISR = 0x100;  // 8 registers, 0x100-0x170
inline constexpr uint32_t REG_TMR = 0x180;  // 0x180-0x1f0
inline constexpr uint32_t REG_IRR = 0x200;  // 0x200-0x270
inline constexpr uint32_t REG_ESR = 0x280;
inline constexpr uint32_t REG_LVT_CMCI = 0x2f0;
inline constexpr uint32_t REG_ICR_LOW = 0x300;
inline constexpr uint32_t REG_ICR_HIGH = 0x310;
inline constexpr uint32_t REG_LVT_TIMER = 0x320;
inline constexpr uint32_t REG_LVT_THERMAL = 0x330;
inline constexpr uint32_t REG_LVT_PERF = 0x340;
inline constexpr uint32_t REG_LVT_LINT0 = 0x350;
inline constexpr uint32_t REG_LVT_LINT1 = 0x360;
inline constexpr uint32_t REG_LVT_ERROR = 0x370;
inline constexpr uint32_t REG_TIMER_INITIAL_COUNT = 0x380;
inline constexpr uint32_t REG_TIMER_CURRENT_COUNT = 0x390;
inline constexpr uint32_t REG_TIMER_DIVIDE_CONFIG = 0x3e0;
inline constexpr uint32_t REG_SELF_IPI = 0x3f0;  // x2APIC only

// Seven LVT entries (CMCI, timer, thermal, perf, LINT0, LINT1, error):
// version[23:16] = max LVT entry = 6; version[24] (EOI-broadcast
// suppression) = 0; 0x14 = integrated APIC.
inline constexpr uint32_t APIC_VERSION = 0x14 | (6u << 16);

inline constexpr uint32_t LVT_VECTOR = 0xff;
inline constexpr uint32_t LVT_DELIVERY_MODE_SHIFT = 8;  // bits 10:8, LINT0/LINT1 and the perf/thermal/CMCI LVTs
inline constexpr uint32_t LVT_DELIVERY_STATUS = 1u << 12;
inline constexpr uint32_t LVT_REMOTE_IRR = 1u << 14;  // LINT0/LINT1, read-only
inline constexpr uint32_t LVT_MASKED = 1u << 16;
inline constexpr uint32_t LVT_TIMER_MODE = 3u << 17;
inline constexpr uint32_t TIMER_MODE_ONE_SHOT = 0u << 17;
inline constexpr uint32_t TIMER_MODE_PERIODIC = 1u << 17;
inline constexpr uint32_t TIMER_MODE_TSC_DEADLINE = 2u << 17;

inline constexpr uint32_t SVR_VECTOR = 0xff;
inline constexpr uint32_t SVR_APIC_ENABLED = 1u << 8;
inline constexpr uint32_t SVR_FOCUS_DISABLED = 1u << 9;

inline constexpr uint32_t DFR_MODEL_FLAT = 0xf;  // DFR[31:28]
inline constexpr uint32_t DFR_MODEL_CLUSTER = 0x0;

inline constexpr uint32_t ICR_VECTOR = 0xff;
inline constexpr uint32_t ICR_DELIVERY_MODE_SHIFT = 8;
inline constexpr uint32_t ICR_DESTINATION_LOGICAL = 1u << 11;
inline constexpr uint32_t ICR_DELIVERY_STATUS = 1u << 12;
inline constexpr uint32_t ICR_LEVEL_ASSERT = 1u << 14;
inline constexpr uint32_t ICR_TRIGGER_LEVEL = 1u << 15;
inline constexpr uint32_t ICR_SHORTHAND_SHIFT = 18;

inline constexpr uint32_t ESR_SEND_ILLEGAL_VECTOR = 1u << 5;
inline constexpr uint32_t ESR_RECEIVE_ILLEGAL_VECTOR = 1u << 6;
inline constexpr uint32_t ESR_ILLEGAL_REGISTER_ADDRESS = 1u << 7;

inline constexpr uint64_t APIC_BASE_BSP = 1u << 8;
inline constexpr uint64_t APIC_BASE_EXTD = 1u << 10;
inline constexpr uint64_t APIC_BASE_EN = 1u << 11;
inline constexpr uint64_t APIC_BASE_ADDRESS = 0xffffff000ull;  // bits 35:12 (MAXPHYADDR 36)

inline constexpr uint32_t X2APIC_BROADCAST = 0xffffffff;
inline constexpr uint32_t XAPIC_BROADCAST = 0xff;
}  // namespace apic

// ICR[10:8] encodings (SDM 10.6.1). Reserved (011b) is kept, not rejected,
// so the router can report the guest's bad ICR write by name.
enum class ApicDeliveryMode : uint8_t {
  Fixed = 0,
  LowestPriority = 1,
  Smi = 2,
  Reserved = 3,
  Nmi = 4,
  Init = 5,
  StartUp = 6,
  ExtInt = 7,
};
inline constexpr size_t kApicDeliveryModes = static_cast<size_t>(ApicDeliveryMode::ExtInt) + 1;
enum class ApicDestinationMode : uint8_t { Physical = 0, Logical = 1 };
enum class ApicTriggerMode : uint8_t { Edge = 0, Level = 1 };
// ICR[19:18].
enum class ApicShorthand : uint8_t { None = 0, Self = 1, AllIncludingSelf = 2, AllExcludingSelf = 3 };
inline constexpr size_t kApicShorthands = static_cast<size_t>(ApicShorthand::AllExcludingSelf) + 1;

// An interrupt message on the (virtual) APIC bus.
struct ApicMessage {
  ApicDeliveryMode delivery_mode = ApicDeliveryMode::Fixed;
  uint8_t vector = 0;
  ApicDestinationMode destination_mode = ApicDestinationMode::Physical;
  bool level_assert = true;  // ICR[14]
  ApicTriggerMode trigger_mode = ApicTriggerMode::Edge;
  ApicShorthand shorthand = ApicShorthand::None;
  // xAPIC: ICR[63:56] (8 bits). x2APIC: ICR[63:32] (32 bits).
  uint32_t destination = 0;
  uint32_t source_id = 0;  // the sender's APIC ID (x2APIC ID in x2APIC mode)
  bool x2apic = false;     // the sender was in x2APIC mode: 32-bit destination
  template <class Archive>
  void serialize(Archive& ar) {  // an IPI on its way is part of a snapshot
    ar(delivery_mode, vector, destination_mode, level_assert, trigger_mode, shorthand, destination, source_id, x2apic);
  }

  // INIT level de-assert (SDM 10.6.1): only P6-era APICs act on it (to
  // re-synchronise arbitration IDs). It is returned so it can be counted;
  // the router should then ignore it.
  bool is_init_level_deassert() const {
    return delivery_mode == ApicDeliveryMode::Init && !level_assert && trigger_mode == ApicTriggerMode::Level;
  }
  bool operator==(const ApicMessage&) const = default;
};

// What accept() did with a message, for the vCPU to act on.
enum class ApicAccept : uint8_t {
  Interrupt,  // fixed / lowest priority: now in IRR, see pending_vector()
  Nmi,        // take an NMI (the APIC keeps no NMI state; blocking is the vCPU's)
  Init,       // the APIC has reset itself (reset()); the vCPU enters wait-for-SIPI
  StartUp,    // SIPI with `vector`: starts the vCPU at vector << 8 if it waits for SIPI
  Dropped,    // illegal vector, software-disabled APIC, INIT de-assert
  Refused,    // SMI, ExtINT, reserved delivery mode: not modelled
};
struct ApicAcceptResult {
  ApicAccept kind = ApicAccept::Dropped;
  uint8_t vector = 0;  // Interrupt and StartUp
  bool operator==(const ApicAcceptResult&) const = default;
};

// What a register write caused, so the caller need not decode the offset
// or poll the APIC around the write.
struct ApicWrite {
  bool gp = false;  // x2APIC / MSR path: the caller raises #GP(0); nothing changed
  std::optional<ApicMessage> message;  // an ICR or SELF IPI write: the bus message
  ApicWriteKind kind = ApicWriteKind::Trapped;
  bool timer_changed = false;      // next_timer_event() moved
  bool interrupt_pending = false;  // pending_vector() holds a vector after the write
  bool id_changed = false;         // id() answers to another ID now
  bool base_written = false;       // IA32_APIC_BASE: the page may have moved or gone
  // An EOI retired this level-triggered vector (its TMR bit was set): the
  // EOI message the I/O APICs must hear (SDM 10.8.5).
  std::optional<uint8_t> eoi_broadcast = std::nullopt;
  bool operator==(const ApicWrite&) const = default;
};

// IA32_APIC_BASE[11:10] (SDM 10.12.5, figure 10-27). EN=0 EXTD=1 is invalid
// and never reached.
enum class ApicMode : uint8_t { Disabled, XApic, X2Apic };

// Access in one mode. x2APIC turns every violation into #GP (SDM 10.12.1.2).
enum class ApicAccess : uint8_t { None = 0, Read = 1, Write = 2, ReadWrite = 3 };

// One row of the register table shared by both access paths.
struct ApicRegisterInfo {
  uint16_t offset;  // xAPIC MMIO offset; the x2APIC MSR is 0x800 + offset / 16
  uint8_t count;    // consecutive 16-byte slots (ISR/TMR/IRR: 8, else 1)
  const char* name;
  ApicAccess xapic;
  ApicAccess x2apic;
  uint32_t reset;       // power-on value (ID: the configured ID, filled in at run time)
  uint32_t write_mask;  // bits software may set; x2APIC #GPs on any other bit
};
// Every implemented register, ordered by offset.
std::span<const ApicRegisterInfo> apic_registers();

struct LocalApicConfig {
  uint32_t apic_id = 0;  // initial (x2)APIC ID, from the topology
  bool bsp = false;      // IA32_APIC_BASE[8]
  bool x2apic_supported = true;  // CPUID.01H:ECX[21]; without it EXTD is reserved
  uint64_t tsc_hz = 2'000'000'000;
  uint64_t timer_hz = 1'000'000'000;  // the clock the divide configuration divides
};

class LocalApic {
 public:
  static constexpr uint64_t kDefaultBase = memory_map::kLocalApicBase;
  static constexpr uint32_t kMmioSize = 0x1000;
  static constexpr uint32_t MSR_IA32_APIC_BASE = 0x1b;
  static constexpr uint32_t MSR_IA32_TSC_DEADLINE = 0x6e0;
  static constexpr uint32_t MSR_X2APIC_FIRST = 0x800;
  static constexpr uint32_t MSR_X2APIC_LAST = 0x8ff;
  static constexpr uint32_t MSR_X2APIC_ICR = 0x830;
  static constexpr uint32_t MSR_X2APIC_SELF_IPI = 0x83f;

  // Power-on state: xAPIC mode, enabled, at kDefaultBase, software-disabled.
  explicit LocalApic(const LocalApicConfig& config);

  // INIT reset (SDM 10.4.7.3, 10.12.5.1): registers to their power-on values
  // except the APIC ID; IA32_APIC_BASE (mode, base, BSP) is unchanged, so an
  // APIC in x2APIC mode stays there. Timers are disarmed.
  void reset();

  // --- IA32_APIC_BASE -------------------------------------------------
  ApicMode mode() const;
  uint64_t apic_base_msr() const { return apic_base_; }
  uint64_t base_address() const;  // IA32_APIC_BASE[35:12] << 12
  // The 4 KiB page at base_address() decodes as the APIC (xAPIC mode only).
  bool mmio_enabled() const { return mode() == ApicMode::XApic; }
  bool x2apic_supported() const { return config_.x2apic_supported; }
  bool is_bsp() const { return config_.bsp; }
  // The ID this APIC answers to: the x2APIC ID in x2APIC mode, else the xAPIC
  // ID register's bits 31:24 (guest-writable in xAPIC mode).
  uint32_t id() const;
  uint32_t initial_id() const { return config_.apic_id; }

  // --- xAPIC MMIO: `offset` within the 4 KiB page -----------------------
  // The caller checks mmio_enabled(). Unknown offsets read 0, ignore writes
  // and set ESR "illegal register address".
  uint32_t mmio_read(uint32_t offset, unsigned size, uint64_t now);
  ApicWrite mmio_write(uint32_t offset, unsigned size, uint32_t value, uint64_t now);

  // --- CR8 (SDM Vol. 3A 11.8.6.5): TPR[7:4], in xAPIC and x2APIC mode ---
  // alike; MOV to CR8 clears TPR[3:0]. The caller checks CPL 0 and that
  // bits 63:4 of a write are clear (else #GP).
  uint64_t read_cr8() const { return (slot(apic::REG_TPR) >> 4) & 0xf; }
  uint32_t tpr() const { return slot(apic::REG_TPR); }
  ApicWrite write_cr8(uint64_t value, uint64_t now);

  // --- MSRs: IA32_APIC_BASE, IA32_TSC_DEADLINE, x2APIC 0x800-0x8FF -----
  static bool is_apic_msr(uint32_t msr);
  // nullopt: the caller raises #GP(0).
  std::optional<uint64_t> rdmsr(uint32_t msr, uint64_t now) const;
  ApicWrite wrmsr(uint32_t msr, uint64_t value, uint64_t now);

  // --- The bus ------------------------------------------------------------
  // Whether this APIC is a destination of `msg` (shorthands compare with
  // msg.source_id). Hardware-disabled APICs match nothing. Lowest priority
  // is not arbitrated here: ApicBus picks, among the matching APICs, the
  // lowest arbitration_priority(), ties to the lowest APIC ID.
  bool matches(const ApicMessage& msg) const;
  // Take a message this APIC matched.
  ApicAcceptResult accept(const ApicMessage& msg);

  // --- The CPU side -------------------------------------------------------
  // The highest IRR vector whose class beats PPR's (SDM 10.8.3.1).
  std::optional<uint8_t> pending_vector() const;
  // INTA: move pending_vector() from IRR to ISR and return it. With nothing
  // pending (the vCPU raced a TPR raise) returns the spurious vector (SVR
  // [7:0]) and changes nothing, as hardware does (SDM 10.9).
  uint8_t acknowledge();
  uint8_t task_priority() const;
  uint8_t processor_priority() const;  // SDM 10.8.3.1
  // APR per SDM 10.6.2.4 from TPR, ISRV and IRRV; also what offset 0x90 reads.
  uint8_t arbitration_priority() const;
  bool software_enabled() const;  // SVR[8]
  // The 8259's INTR reaches this CPU: the APIC is hardware-disabled (the
  // pin bypasses it), or LINT0 is unmasked with delivery mode ExtINT (SDM
  // 10.5.1; QEMU's apic_accept_pic_intr, KVM's kvm_apic_accept_pic_intr).
  // ExtINT is always level-sensitive, so the CPU sees INTR's level.
  bool accepts_pic_intr() const;
  // Whether the timer, when it expires, raises an interrupt at all (its LVT
  // entry is unmasked and the APIC software-enabled).
  bool timer_interrupts() const;
  bool irr(uint8_t vector) const;
  bool isr(uint8_t vector) const;
  bool tmr(uint8_t vector) const;

  // --- Timer (SDM 10.5.4) ---------------------------------------------------
  // When the timer next expires, whether or not the LVT is masked (a masked
  // periodic timer still reloads). nullopt: disarmed.
  std::optional<uint64_t> next_timer_event() const;
  // Fire every expiry due at `now`: set IRR for the LVT timer vector unless
  // masked; periodic re-arms (several missed periods coalesce into one IRR
  // bit, as they would in hardware); one-shot and TSC-deadline disarm.
  void on_time(uint64_t now);
  uint64_t tsc(uint64_t now) const;

  // A QEMU "info lapic"-like dump, one register per line.
  std::string describe(uint64_t now) const;

  // Snapshots (base/state_archive.h). config_ is the configuration. The
  // timer's start and the TSC deadline are virtual-time instants: they hold
  // when the machine's time is restored with them. eoi_broadcast_ is empty
  // between calls, and kept so that nothing is assumed.
  template <class Archive>
  void serialize(Archive& ar) {
    ar(apic_base_, regs_, esr_pending_, timer_, tsc_deadline_, eoi_broadcast_);
  }

 private:
  struct Timer {
    bool armed = false;
    uint64_t start = 0;     // ns at which the count was loaded
    uint32_t divisor = 1;   // divide configuration at load time
    uint64_t expired = 0;   // periods already delivered (periodic)

    template <class Archive>
    void serialize(Archive& ar) {
      ar(armed, start, divisor, expired);
    }
  };

  // Register-level access shared by MMIO and MSR paths; `reg` is the table row.
  uint32_t read_register(const ApicRegisterInfo& reg, uint32_t offset, uint64_t now) const;
  std::optional<ApicMessage> write_register(const ApicRegisterInfo& reg, uint32_t offset, uint32_t value, uint64_t now);
  // The part of each write the two paths share: classify, write, observe.
  template <typename Write>
  ApicWrite observe_write(ApicWriteKind kind, Write&& write);
  std::optional<ApicMessage> write_mmio_register(uint32_t offset, unsigned size, uint32_t value, uint64_t now);
  ApicWrite write_msr_register(uint32_t msr, uint64_t value, uint64_t now);
  bool set_apic_base(uint64_t value);
  void power_on_registers();

  uint32_t& slot(uint32_t offset) { return regs_[offset >> 4]; }
  uint32_t slot(uint32_t offset) const { return regs_[offset >> 4]; }
  void set_bit(uint32_t base, uint8_t vector, bool value);
  bool get_bit(uint32_t base, uint8_t vector) const;
  std::optional<uint8_t> highest(uint32_t base) const;

  std::optional<ApicMessage> send(uint64_t icr);
  void raise_error(uint32_t esr_bits);
  void deliver_local(uint32_t lvt_offset);  // fixed delivery from an LVT
  void eoi();
  void write_lvt_timer(uint32_t value, uint64_t now);
  void arm_count(uint64_t now);
  uint32_t current_count(uint64_t now) const;
  uint64_t ticks_to_ns(uint64_t ticks, uint32_t divisor) const;
  uint64_t ns_to_ticks(uint64_t ns, uint32_t divisor) const;
  uint32_t timer_mode() const;

  LocalApicConfig config_;
  uint64_t apic_base_ = 0;
  uint32_t regs_[64] = {};  // one dword per 16-byte slot of the xAPIC page
  uint32_t esr_pending_ = 0;  // errors since the last ESR write
  Timer timer_;
  uint64_t tsc_deadline_ = 0;
  // Set by eoi() for a level-triggered vector, taken by observe_write.
  std::optional<uint8_t> eoi_broadcast_;
};

}  // namespace topolab
