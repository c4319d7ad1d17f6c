// SPDX-License-Identifier: GPL-2.0-or-later
// The x86 page walker: the one place where the emulator itself translates a
// guest linear address, when it touches guest memory on the guest's behalf
// (interrupt and exception frames, descriptor tables, the TSS, the MONITOR
// address, instruction bytes), and where the exact #PF error code is made.
// Pure: no engine, no global state; the guest's paging registers come in a
// PagingState and its physical memory through a PhysicalMemory.
//
// Follows the Intel SDM Vol. 3A chapter 4 ("Paging"):
//   - 4.1.1 the paging modes: none, 32-bit, PAE, 4-level and 5-level;
//   - 4.3, 4.4.2, 4.5.4 the entry formats and their reserved bits;
//   - 4.6 access rights (U/S, R/W with CR0.WP, XD with EFER.NXE, SMEP, SMAP
//     with RFLAGS.AC, protection keys with CR4.PKE and PKRU);
//   - 4.7 the #PF error code (P, W/R, U/S, RSVD, I/D, PK);
//   - 4.8 accessed and dirty flags;
//   - 3.3.7.1 canonical addresses: a non-canonical one is #GP(0), or #SS(0)
//     for a stack access, not a #PF.
//
// Where this differs from hardware, on purpose:
//   - No TLB and no paging-structure caches (4.10): every access walks the
//     tables as they are in memory now, so a guest that edits an entry and
//     relies on the stale translation until INVLPG sees the new one at once.
//   - PAE PDPTEs are read at walk time, not loaded at MOV to CR3 (4.4.1). A
//     PDPTE with a reserved bit set therefore gives #PF(P|RSVD) when used
//     instead of #GP(0) at the CR3 load; QEMU TCG does the same.
//   - A faulting walk changes nothing: no A bit is set, not even in the
//     entries above the one that faulted. The SDM allows it (4.8: A flags
//     "may" be set when the access faults) and it is the simplest
//     deterministic choice; a successful walk sets A in every entry it used
//     and, for a write, D in the entry that maps the page.
//   - RSVD faults never carry PK: the walk stops at the bad entry, before the
//     page's protection key is looked at.
//   - For a #PF on the second page of an access that crosses a page, CR2 is
//     the first byte of that page.
//   - Paging-structure entries live in RAM only; one outside RAM (or in
//     MMIO) reads as all ones (open bus), which sets reserved bits in every
//     64-bit format, so it gives #PF(P|RSVD) rather than a device read.
//
// Where this differs from QEMU 7.2's walker (target/i386/tcg/sysemu/
// excp_helper.c, which Unicorn 2.1.3 runs for the guest's own accesses):
//   - a reserved-bit fault reports P|RSVD as the SDM says (4.7: RSVD "can be
//     set only if bit 0 is also set"); QEMU 7.2 reports RSVD without P;
//   - QEMU sets A in each valid upper-level entry as it walks, even when the
//     walk then faults; here a faulting walk sets nothing (see above).
//
// Not modelled: supervisor protection keys (CR4.PKS), CET shadow stacks (the
// SS error-code bit), HLAT, SGX (bit 15), linear-address masking, memory
// types (PWT/PCD/PAT/MTRRs). 1-GByte pages (CPUID.80000001H:EDX[26]) and
// PSE-36 (CPUID.01H:EDX[17]) are taken as supported.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <variant>

#include "arch/x86_arch.h"

namespace topolab {
class GuestRam;
}

namespace topolab::x86 {

// Guest physical memory as the walker reaches it. Bytes outside RAM read as
// 0xff (open bus) and writes to them are dropped.
class PhysicalMemory {
 public:
  virtual ~PhysicalMemory() = default;
  virtual void read(uint64_t pa, void* out, size_t len) = 0;
  virtual void write(uint64_t pa, const void* in, size_t len) = 0;

  // Little-endian, as x86 stores paging-structure entries.
  uint64_t read_u64(uint64_t pa);
  uint32_t read_u32(uint64_t pa);
  void write_u64(uint64_t pa, uint64_t v);
  void write_u32(uint64_t pa, uint32_t v);
};

// The project's GuestRam as a PhysicalMemory: its RAM regions, open bus elsewhere.
class GuestRamMemory final : public PhysicalMemory {
 public:
  explicit GuestRamMemory(GuestRam& ram) : ram_(ram) {}
  void read(uint64_t pa, void* out, size_t len) override;
  void write(uint64_t pa, const void* in, size_t len) override;

 private:
  GuestRam& ram_;
};

// The registers paging reads (SDM 4.1.1). Only RFLAGS.AC is read from
// `rflags` (the SMAP override) and only PKRU's AD/WD pairs from `pkru`.
struct PagingState {
  uint64_t cr0 = 0;
  uint64_t cr3 = 0;
  uint64_t cr4 = 0;
  uint64_t efer = 0;
  uint64_t rflags = 0;
  uint32_t pkru = 0;
  unsigned maxphyaddr = 40;  // CPUID.80000008H:EAX[7:0], as model/cpuid.cc reports
};

// SDM 4.1.1, table 4-1.
enum class PagingMode : uint8_t {
  kNone,    // CR0.PG = 0: linear = physical, 32 bits
  k32Bit,   // CR0.PG = 1, CR4.PAE = 0
  kPae,     // CR0.PG = 1, CR4.PAE = 1, IA32_EFER.LMA = 0
  k4Level,  // IA32_EFER.LMA = 1, CR4.LA57 = 0
  k5Level,  // IA32_EFER.LMA = 1, CR4.LA57 = 1
};

// Why a state no CPU can be in (EFER.LMA without CR0.PG and CR4.PAE, a
// MAXPHYADDR outside 32..52), or nullopt when it is a real one. These are
// host bugs, never guest-caused: the CPU refuses the register writes
// (#GP) that would lead there.
std::optional<std::string> paging_state_error(const PagingState& state);

// The mode `state` selects. Throws std::invalid_argument on a state that
// paging_state_error rejects.
PagingMode paging_mode(const PagingState& state);

enum class Access : uint8_t { kRead, kWrite, kFetch };

// The rights every entry used grants together (SDM 4.6.1): a user-mode page
// has U/S = 1 in all of them, a writable one R/W = 1 in all, an executable
// one XD = 0 in all. `protection_key` is the leaf's bits 62:59 (4/5-level).
struct PageRights {
  bool user = true;
  bool writable = true;
  bool executable = true;
  unsigned protection_key = 0;
  friend bool operator==(const PageRights&, const PageRights&) = default;
};

// A successful translation, and the A/D bits the access sets (SDM 4.8).
struct Translation {
  uint64_t physical = 0;   // where `linear` itself lands
  uint64_t page_size = 0;  // 4 KiB, 2 MiB, 4 MiB or 1 GiB (4 KiB without paging)
  PageRights rights;
  // Every entry the walk used, top level first, and the bits the access
  // sets in it: A in each, and also D in the leaf for a write. PAE PDPTEs
  // have no A bit and appear with `set` = 0.
  struct EntryUpdate {
    uint64_t address = 0;
    uint64_t set = 0;
  };
  std::array<EntryUpdate, 5> updates{};
  unsigned update_count = 0;
  unsigned entry_bytes = 8;  // 4 in 32-bit paging
};

// A walk's outcome: a fault (#PF with CR2 and error code, or #GP(0)/#SS(0)
// for a non-canonical address), or the translation.
struct WalkResult {
  std::optional<Fault> fault;
  Translation translation;  // meaningful only when `fault` is empty
  bool ok() const { return !fault; }
};

// Translates `linear` for one access by `who`, with no side effect on
// memory. Outside 4/5-level paging the linear address is 32 bits and the
// higher bits are dropped (the address space wraps at 4 GiB).
WalkResult translate(PhysicalMemory& mem, const PagingState& state, uint64_t linear, Access access,
                     Accessor who);

// Sets the A/D bits a successful translation asks for, leaving entries that
// already have them untouched (a read-modify-write of the entry as it is now).
void set_accessed_dirty(PhysicalMemory& mem, const Translation& t);

// translate() and, when it succeeds, set_accessed_dirty(): one access as the
// CPU makes it.
WalkResult walk(PhysicalMemory& mem, const PagingState& state, uint64_t linear, Access access,
                Accessor who);

// Guest linear memory under one PagingState. An access of any length may
// cross pages; it is all-or-nothing: every page is translated first, and only
// when all succeed are A/D bits set and bytes moved. The fault is that of the
// first failing page in access order (a non-canonical address anywhere in
// the access wins over any #PF, as the canonical check comes before paging).
// Translations are remembered for the object's life (one event delivery,
// one instruction the host emulates), per 4 KiB page, access kind and
// accessor: the walk and its A/D bits are done once per page, as a TLB
// does. A write through this object that lands on a paging-structure entry
// a remembered walk used forgets them all, so the result is what walking
// every time gives.
class PagedMemory final : public LinearMemory {
 public:
  PagedMemory(PhysicalMemory& mem, const PagingState& state) : mem_(mem), state_(state) {}
  void set_state(const PagingState& state) {
    state_ = state;
    remembered_count_ = 0;
  }
  const PagingState& state() const { return state_; }

  std::optional<Fault> read(uint64_t linear, void* out, size_t len, Accessor who) override;
  std::optional<Fault> write(uint64_t linear, const void* in, size_t len, Accessor who) override;
  // Instruction bytes: a read checked as an instruction fetch (XD, SMEP).
  std::optional<Fault> fetch(uint64_t linear, void* out, size_t len, Accessor who);

 private:
  // Moves bytes into `out` (read, fetch) or from `in` (write).
  std::optional<Fault> access(uint64_t linear, size_t len, Access kind, Accessor who, uint8_t* out,
                              const uint8_t* in);
  struct Remembered {
    uint64_t linear_page;
    Access kind;
    Accessor who;
    uint64_t physical_page;
    Translation walk;  // its entries, for note_write
  };
  static constexpr size_t kRemembered = 4;
  // A remembered walk of this page for this kind and accessor, if any.
  const Remembered* remembered(uint64_t linear, Access kind, Accessor who) const;
  void remember(uint64_t linear, Access kind, Accessor who, const Translation& walk);
  // Writes to [physical, +len) drop every remembered walk that used an entry there.
  void note_write(uint64_t physical, size_t len);


  PhysicalMemory& mem_;
  PagingState state_;
  std::array<Remembered, kRemembered> remembered_{};
  size_t remembered_count_ = 0;
  size_t next_victim_ = 0;
};

}  // namespace topolab::x86
