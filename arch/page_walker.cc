// SPDX-License-Identifier: GPL-2.0-or-later
#include "arch/page_walker.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <span>
#include <stdexcept>
#include <vector>

#include <fmt/format.h>

#include "base/guest_ram.h"

namespace topolab::x86 {

static_assert(std::endian::native == std::endian::little, "paging-structure entries are read as host integers");

namespace {

constexpr uint64_t kPage4K = uint64_t{1} << 12;
constexpr uint64_t kPageOffset4K = kPage4K - 1;
constexpr uint64_t kLinear32Mask = 0xffff'ffff;

// Bits hi:lo set; empty when hi < lo (e.g. "51:M" with M = 52).
constexpr uint64_t bit_range(unsigned hi, unsigned lo) {
  if (hi < lo) return 0;
  uint64_t upto_hi = hi >= 63 ? ~uint64_t{0} : (uint64_t{1} << (hi + 1)) - 1;
  return upto_hi & ~((uint64_t{1} << lo) - 1);
}

// Bits (M-1):12 of an entry: the physical address of a table or page frame.
uint64_t address_mask(unsigned maxphyaddr) { return bit_range(maxphyaddr - 1, 12); }

// SDM 4.6: a user-mode access is one made at CPL 3 that is not an implicit
// supervisor access (descriptor tables, TSS, a ring-0 event frame).
bool is_user_access(Accessor who) { return who.cpl == 3 && !who.implicit_supervisor; }

// The error-code bits that describe the access itself (SDM 4.7); P, RSVD and
// PK describe the cause and are added by the caller.
uint32_t access_error_bits(const PagingState& s, Access access, Accessor who) {
  uint32_t code = 0;
  if (access == Access::kWrite) code |= kPfErrorWr;
  if (is_user_access(who)) code |= kPfErrorUs;
  // I/D: an instruction fetch, reported only when fetches can fault for
  // their own sake: CR4.SMEP = 1, or CR4.PAE = 1 and IA32_EFER.NXE = 1.
  bool fetch_faults = (s.cr4 & kCr4Smep) || ((s.cr4 & kCr4Pae) && (s.efer & kEferNxe));
  if (access == Access::kFetch && fetch_faults) code |= kPfErrorId;
  return code;
}

WalkResult page_fault(const PagingState& s, uint64_t linear, Access access, Accessor who, uint32_t cause) {
  return {Fault{kPageFault, cause | access_error_bits(s, access, who), linear}, {}};
}

unsigned linear_width(PagingMode mode) {
  switch (mode) {
    case PagingMode::k4Level: return 48;
    case PagingMode::k5Level: return 57;
    default: return 32;
  }
}

bool is_long_mode(PagingMode mode) { return mode == PagingMode::k4Level || mode == PagingMode::k5Level; }

// SDM Vol. 3A 3.3.7.1: bits 63:N-1 all equal, N the linear-address width.
bool is_canonical(uint64_t linear, unsigned width) {
  unsigned unused = 64 - width;
  return static_cast<uint64_t>(static_cast<int64_t>(linear << unused) >> unused) == linear;
}

std::optional<Fault> noncanonical_fault(PagingMode mode, uint64_t linear, Accessor who) {
  if (!is_long_mode(mode) || is_canonical(linear, linear_width(mode))) return std::nullopt;
  return Fault{who.stack ? kStackFault : kGeneralProtection, 0u, 0};
}

// SDM 4.6.1 (and 4.6.2 for protection keys): whether `rights` allow the
// access. Returns the cause bits of the #PF (P, plus PK when the protection
// key alone or among others forbids it, per the PK definition in 4.7), or
// nullopt when the access is allowed.
std::optional<uint32_t> protection_fault(const PagingState& s, PagingMode mode, const PageRights& r,
                                         Access access, Accessor who) {
  bool user = is_user_access(who);
  bool wp = s.cr0 & kCr0Wp;
  // SMAP lets a supervisor data access reach a user-mode page only when it
  // is explicit and RFLAGS.AC = 1; implicit accesses never (4.6.1).
  bool smap_blocks = r.user && (s.cr4 & kCr4Smap) && !((s.rflags & kFlagAc) && !who.implicit_supervisor);

  bool allowed = false;
  switch (access) {
    case Access::kRead:
      allowed = user ? r.user : !smap_blocks;
      break;
    case Access::kWrite:
      // A user write needs R/W = 1 whatever CR0.WP; a supervisor write needs
      // it only with CR0.WP = 1.
      allowed = user ? (r.user && r.writable) : (!smap_blocks && (r.writable || !wp));
      break;
    case Access::kFetch:
      allowed = user ? (r.user && r.executable) : (r.executable && !(r.user && (s.cr4 & kCr4Smep)));
      break;
  }

  // Protection keys: IA-32e paging with CR4.PKE = 1, data accesses to
  // user-mode pages, by user and supervisor alike. PKRU holds AD (bit 2i) and
  // WD (bit 2i+1) for key i.
  bool pk_violation = false;
  if (is_long_mode(mode) && (s.cr4 & kCr4Pke) && r.user && access != Access::kFetch) {
    bool ad = (s.pkru >> (2 * r.protection_key)) & 1;
    bool wd = (s.pkru >> (2 * r.protection_key + 1)) & 1;
    pk_violation = ad || (wd && access == Access::kWrite && (user || wp));
  }

  if (allowed && !pk_violation) return std::nullopt;
  return kPfErrorP | (pk_violation ? kPfErrorPk : 0u);
}

void add_update(Translation& t, uint64_t entry_address, uint64_t set) {
  t.updates[t.update_count++] = {entry_address, set};
}

void take_rights(PageRights& r, uint64_t entry) {
  r.user = r.user && (entry & kPteUs);
  r.writable = r.writable && (entry & kPteRw);
  r.executable = r.executable && !(entry & kPteXd);
}

// 32-bit paging (SDM 4.3): a 1024-entry page directory at CR3[31:12] and
// 4-byte entries; a PDE with PS = 1 maps a 4-MByte page when CR4.PSE = 1 and
// is an ordinary table pointer otherwise (PS ignored, table 4-5).
WalkResult walk_32bit(PhysicalMemory& mem, const PagingState& s, uint64_t linear, Access access, Accessor who) {
  Translation t;
  t.entry_bytes = 4;
  uint64_t pde_address = (s.cr3 & 0xffff'f000) + ((linear >> 22) & 0x3ff) * 4;
  uint32_t pde = mem.read_u32(pde_address);
  if (!(pde & kPteP)) return page_fault(s, linear, access, who, 0);
  take_rights(t.rights, pde);

  if ((s.cr4 & kCr4Pse) && (pde & kPtePs)) {
    // Table 4-4: PDE bits (M-20):13 are physical-address bits (M-1):32
    // (PSE-36), bits 21:(M-19) are reserved, with M = min(MAXPHYADDR, 40).
    unsigned m = std::min(s.maxphyaddr, 40u);
    if (pde & bit_range(21, m - 19)) return page_fault(s, linear, access, who, kPfErrorP | kPfErrorRsvd);
    t.page_size = uint64_t{1} << 22;
    t.physical = (pde & 0xffc0'0000) | (uint64_t{(pde >> 13) & 0xff} << 32) | (linear & (t.page_size - 1));
    add_update(t, pde_address, kPteA | (access == Access::kWrite ? kPteD : 0));
    return {std::nullopt, t};
  }
  add_update(t, pde_address, kPteA);

  uint64_t pte_address = (pde & 0xffff'f000) + ((linear >> 12) & 0x3ff) * 4;
  uint32_t pte = mem.read_u32(pte_address);
  if (!(pte & kPteP)) return page_fault(s, linear, access, who, 0);
  take_rights(t.rights, pte);
  t.page_size = kPage4K;
  t.physical = (pte & 0xffff'f000) | (linear & kPageOffset4K);
  add_update(t, pte_address, kPteA | (access == Access::kWrite ? kPteD : 0));
  return {std::nullopt, t};
}

// One level of the 64-bit-entry formats (PAE below the PDPTE, 4- and
// 5-level): the linear-address bits it indexes, and what PS means there.
struct Level {
  unsigned shift;     // the index is linear[shift+8:shift]
  bool ps_reserved;   // PML5E, PML4E: PS must be 0 (tables 4-14, 4-15)
  bool ps_maps_page;  // PDPTE (1 GByte), PDE (2 MByte): PS = 1 maps a page
};
constexpr Level kPml5{48, true, false};
constexpr Level kPml4{39, true, false};
constexpr Level kPdpt{30, false, true};
constexpr Level kPd{21, false, true};
constexpr Level kPt{12, false, false};
constexpr Level k5LevelWalk[] = {kPml5, kPml4, kPdpt, kPd, kPt};

// PAE paging (SDM 4.4), 4-level and 5-level paging (SDM 4.5).
WalkResult walk_64bit_entries(PhysicalMemory& mem, const PagingState& s, PagingMode mode, uint64_t linear,
                              Access access, Accessor who) {
  Translation t;
  const unsigned m = s.maxphyaddr;
  const uint64_t addr = address_mask(m);
  const uint64_t xd_reserved = (s.efer & kEferNxe) ? 0 : kPteXd;
  std::span<const Level> levels;
  uint64_t table = 0;
  uint64_t high_reserved = 0;

  if (mode == PagingMode::kPae) {
    // Four PDPTEs at CR3[31:5] (table 4-8). They carry no R/W, U/S or A:
    // bits 2:1, 8:5 and 63:M are reserved. Read here, at use; see the header.
    uint64_t pdpte_address = (s.cr3 & 0xffff'ffe0) + ((linear >> 30) & 3) * 8;
    uint64_t pdpte = mem.read_u64(pdpte_address);
    if (!(pdpte & kPteP)) return page_fault(s, linear, access, who, 0);
    if (pdpte & (bit_range(63, m) | bit_range(2, 1) | bit_range(8, 5)))
      return page_fault(s, linear, access, who, kPfErrorP | kPfErrorRsvd);
    add_update(t, pdpte_address, 0);
    table = pdpte & addr;
    levels = std::span<const Level>(k5LevelWalk).subspan(3);
    high_reserved = bit_range(62, m);  // tables 4-9..4-11: 62:M reserved, 63 is XD
  } else {
    table = s.cr3 & addr;  // CR3[11:0] are PCID or PWT/PCD, not address
    levels = std::span<const Level>(k5LevelWalk).subspan(mode == PagingMode::k5Level ? 0 : 1);
    high_reserved = bit_range(51, m);  // tables 4-14..4-20: 51:M reserved, 62:52 ignored or PK
  }

  for (const Level& level : levels) {
    uint64_t entry_address = table + ((linear >> level.shift) & 0x1ff) * 8;
    uint64_t entry = mem.read_u64(entry_address);
    if (!(entry & kPteP)) return page_fault(s, linear, access, who, 0);

    bool leaf = level.shift == 12 || (level.ps_maps_page && (entry & kPtePs));
    uint64_t reserved = high_reserved | xd_reserved | (level.ps_reserved ? kPtePs : 0);
    // A large page's frame is aligned to its size: the address bits under it,
    // above the PAT bit 12, are reserved (1 GByte: 29:13; 2 MByte: 20:13).
    if (leaf && level.shift > 12) reserved |= bit_range(level.shift - 1, 13);
    if (entry & reserved) return page_fault(s, linear, access, who, kPfErrorP | kPfErrorRsvd);

    take_rights(t.rights, entry);
    if (leaf) {
      t.page_size = uint64_t{1} << level.shift;
      t.physical = (entry & addr & ~(t.page_size - 1)) | (linear & (t.page_size - 1));
      if (is_long_mode(mode)) t.rights.protection_key = (entry >> kPtePkShift) & 0xf;
      add_update(t, entry_address, kPteA | (access == Access::kWrite ? kPteD : 0));
      return {std::nullopt, t};
    }
    add_update(t, entry_address, kPteA);
    table = entry & addr;
  }
  throw std::logic_error("page walk ran past the page table");  // unreachable: kPt is always a leaf
}

}  // namespace

uint64_t PhysicalMemory::read_u64(uint64_t pa) {
  uint64_t v;
  read(pa, &v, sizeof v);
  return v;
}

uint32_t PhysicalMemory::read_u32(uint64_t pa) {
  uint32_t v;
  read(pa, &v, sizeof v);
  return v;
}

void PhysicalMemory::write_u64(uint64_t pa, uint64_t v) { write(pa, &v, sizeof v); }
void PhysicalMemory::write_u32(uint64_t pa, uint32_t v) { write(pa, &v, sizeof v); }

// Byte by byte where an access straddles the end of a region (paging
// structures are aligned, so walks never do): each byte is RAM or open bus.
void GuestRamMemory::read(uint64_t pa, void* out, size_t len) {
  if (ram_.is_ram(pa, len)) {
    std::memcpy(out, ram_.data() + pa, len);
    return;
  }
  auto* bytes = static_cast<uint8_t*>(out);
  for (size_t i = 0; i < len; ++i) bytes[i] = ram_.is_ram(pa + i, 1) ? ram_.data()[pa + i] : 0xff;
}

void GuestRamMemory::write(uint64_t pa, const void* in, size_t len) {
  if (ram_.is_ram(pa, len)) {
    std::memcpy(ram_.data() + pa, in, len);
    return;
  }
  const auto* bytes = static_cast<const uint8_t*>(in);
  for (size_t i = 0; i < len; ++i)
    if (ram_.is_ram(pa + i, 1)) ram_.data()[pa + i] = bytes[i];
}

std::optional<std::string> paging_state_error(const PagingState& s) {
  if (s.maxphyaddr < 32 || s.maxphyaddr > 52)
    return fmt::format("MAXPHYADDR (CPUID.80000008H:EAX[7:0]) must be 32..52, not {}", s.maxphyaddr);
  if ((s.efer & kEferLma) && !(s.cr0 & kCr0Pg)) return std::string("IA32_EFER.LMA = 1 with CR0.PG = 0");
  if ((s.efer & kEferLma) && !(s.cr4 & kCr4Pae)) return std::string("IA32_EFER.LMA = 1 with CR4.PAE = 0");
  return std::nullopt;
}

PagingMode paging_mode(const PagingState& s) {
  if (auto error = paging_state_error(s)) throw std::invalid_argument("impossible paging state: " + *error);
  if (!(s.cr0 & kCr0Pg)) return PagingMode::kNone;
  if (!(s.cr4 & kCr4Pae)) return PagingMode::k32Bit;
  if (!(s.efer & kEferLma)) return PagingMode::kPae;
  return (s.cr4 & kCr4La57) ? PagingMode::k5Level : PagingMode::k4Level;
}

WalkResult translate(PhysicalMemory& mem, const PagingState& s, uint64_t linear, Access access, Accessor who) {
  PagingMode mode = paging_mode(s);
  if (!is_long_mode(mode)) linear &= kLinear32Mask;
  if (auto fault = noncanonical_fault(mode, linear, who)) return {fault, {}};

  WalkResult r;
  switch (mode) {
    case PagingMode::kNone:
      r.translation.physical = linear;
      r.translation.page_size = kPage4K;
      return r;  // no paging: no rights to check, no entries to update
    case PagingMode::k32Bit:
      r = walk_32bit(mem, s, linear, access, who);
      break;
    default:
      r = walk_64bit_entries(mem, s, mode, linear, access, who);
      break;
  }
  if (r.fault) return r;
  if (auto cause = protection_fault(s, mode, r.translation.rights, access, who))
    return page_fault(s, linear, access, who, *cause);
  return r;
}

void set_accessed_dirty(PhysicalMemory& mem, const Translation& t) {
  for (unsigned i = 0; i < t.update_count; ++i) {
    const Translation::EntryUpdate& u = t.updates[i];
    if (u.set == 0) continue;
    if (t.entry_bytes == 4) {
      uint32_t v = mem.read_u32(u.address);
      if ((v & u.set) != u.set) mem.write_u32(u.address, v | static_cast<uint32_t>(u.set));
    } else {
      uint64_t v = mem.read_u64(u.address);
      if ((v & u.set) != u.set) mem.write_u64(u.address, v | u.set);
    }
  }
}

WalkResult walk(PhysicalMemory& mem, const PagingState& s, uint64_t linear, Access access, Accessor who) {
  WalkResult r = translate(mem, s, linear, access, who);
  if (r.ok()) set_accessed_dirty(mem, r.translation);
  return r;
}

const PagedMemory::Remembered* PagedMemory::remembered(uint64_t linear, Access kind, Accessor who) const {
  const uint64_t page = linear & ~kPageOffset4K;
  for (size_t i = 0; i < remembered_count_; ++i) {
    const Remembered& r = remembered_[i];
    if (r.linear_page == page && r.kind == kind && r.who.cpl == who.cpl &&
        r.who.implicit_supervisor == who.implicit_supervisor && r.who.stack == who.stack)
      return &r;
  }
  return nullptr;
}

void PagedMemory::remember(uint64_t linear, Access kind, Accessor who, const Translation& walk) {
  Remembered& slot = remembered_count_ < kRemembered ? remembered_[remembered_count_++]
                                                     : remembered_[next_victim_++ % kRemembered];
  slot = {linear & ~kPageOffset4K, kind, who, walk.physical & ~kPageOffset4K, walk};
}

void PagedMemory::note_write(uint64_t physical, size_t len) {
  for (size_t i = 0; i < remembered_count_; ++i) {
    const Translation& t = remembered_[i].walk;
    for (unsigned u = 0; u < t.update_count; ++u)
      if (t.updates[u].address < physical + len && physical < t.updates[u].address + t.entry_bytes) {
        remembered_count_ = 0;
        return;
      }
  }
}

std::optional<Fault> PagedMemory::access(uint64_t linear, size_t len, Access kind, Accessor who, uint8_t* out,
                                         const uint8_t* in) {
  if (len == 0) return std::nullopt;
  PagingMode mode = paging_mode(state_);
  const uint64_t wrap = is_long_mode(mode) ? ~uint64_t{0} : kLinear32Mask;

  // The access split at 4-KByte boundaries: every page size is a multiple of
  // 4 KBytes, so each piece lies in one page whatever the mapping. Accesses
  // of up to a page (every one the CPU makes) have at most two pieces; a
  // longer one (the host reading a table) goes piece by piece the same way.
  struct Piece {
    uint64_t linear;
    size_t offset, len;
    uint64_t physical;
  };
  std::array<Piece, 2> few;
  std::vector<Piece> many;
  std::span<Piece> pieces;
  {
    size_t count = 0;
    for (size_t offset = 0; offset < len; ++count) {
      const uint64_t at = (linear + offset) & wrap;
      offset += static_cast<size_t>(std::min<uint64_t>(len - offset, kPage4K - (at & kPageOffset4K)));
    }
    if (count > few.size()) many.resize(count);
    pieces = count > few.size() ? std::span<Piece>(many) : std::span<Piece>(few).first(count);
    size_t i = 0;
    for (size_t offset = 0; offset < len; ++i) {
      const uint64_t at = (linear + offset) & wrap;
      const size_t n = static_cast<size_t>(std::min<uint64_t>(len - offset, kPage4K - (at & kPageOffset4K)));
      pieces[i] = {at, offset, n, 0};
      offset += n;
    }
  }
  // Canonicality is checked for the whole access before paging looks at any
  // of it (SDM Vol. 3A 3.3.7.1).
  for (const Piece& p : pieces)
    if (auto fault = noncanonical_fault(mode, p.linear, who)) return fault;
  // Every piece is translated before any A/D bit is set or byte moves, so
  // a fault on the second page changes nothing.
  std::array<std::optional<Translation>, 2> walked_few;
  std::vector<std::optional<Translation>> walked_many(pieces.size() > 2 ? pieces.size() : 0);
  for (size_t i = 0; i < pieces.size(); ++i) {
    Piece& p = pieces[i];
    if (const Remembered* r = remembered(p.linear, kind, who)) {
      p.physical = r->physical_page | (p.linear & kPageOffset4K);
      continue;
    }
    WalkResult w = translate(mem_, state_, p.linear, kind, who);
    if (w.fault) return w.fault;
    p.physical = w.translation.physical;
    (pieces.size() > 2 ? walked_many[i] : walked_few[i]) = w.translation;
  }
  for (size_t i = 0; i < pieces.size(); ++i)
    if (const std::optional<Translation>& t = pieces.size() > 2 ? walked_many[i] : walked_few[i]) {
      set_accessed_dirty(mem_, *t);
      remember(pieces[i].linear, kind, who, *t);
    }
  for (const Piece& p : pieces) {
    if (in) {
      mem_.write(p.physical, in + p.offset, p.len);
      note_write(p.physical, p.len);
    } else {
      mem_.read(p.physical, out + p.offset, p.len);
    }
  }
  return std::nullopt;
}

std::optional<Fault> PagedMemory::read(uint64_t linear, void* out, size_t len, Accessor who) {
  return access(linear, len, Access::kRead, who, static_cast<uint8_t*>(out), nullptr);
}

std::optional<Fault> PagedMemory::write(uint64_t linear, const void* in, size_t len, Accessor who) {
  return access(linear, len, Access::kWrite, who, nullptr, static_cast<const uint8_t*>(in));
}

std::optional<Fault> PagedMemory::fetch(uint64_t linear, void* out, size_t len, Accessor who) {
  return access(linear, len, Access::kFetch, who, static_cast<uint8_t*>(out), nullptr);
}

}  // namespace topolab::x86
