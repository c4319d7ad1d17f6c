// SPDX-License-Identifier: GPL-2.0-or-later
#include "arch/page_walker.h"

#include <array>
#include <map>
#include <vector>

#include <gtest/gtest.h>

#include "base/guest_ram.h"
#include "arch/x86_test_printers.h"

namespace topolab::x86 {

namespace {

constexpr uint64_t k4K = uint64_t{1} << 12;
constexpr uint64_t k2M = uint64_t{1} << 21;
constexpr uint64_t k4M = uint64_t{1} << 22;
constexpr uint64_t k1G = uint64_t{1} << 30;
constexpr uint64_t kUserRw = kPteP | kPteRw | kPteUs;
constexpr uint64_t kHigherHalf = 0xffff'ffff'8000'0000;  // the -2 GiB kernel image of x86-64 ABIs
constexpr Accessor kSupervisor{0, false, false};
constexpr Accessor kUser{3, false, false};
constexpr Accessor kImplicitSupervisor{3, true, false};  // e.g. the GDT read of a CPL-3 far call

Fault page_fault(uint32_t error, uint64_t cr2) { return Fault{kPageFault, error, cr2}; }

// Sparse fake RAM: the pages `back` was called for are RAM (zeroed); every
// other byte is open bus, reading 0xff and dropping writes.
class Ram final : public PhysicalMemory {
 public:
  void back(uint64_t pa, uint64_t len = k4K) {
    for (uint64_t page = pa >> 12; page <= (pa + len - 1) >> 12; ++page) pages_.try_emplace(page);
  }
  void read(uint64_t pa, void* out, size_t len) override {
    auto* o = static_cast<uint8_t*>(out);
    for (size_t i = 0; i < len; ++i) {
      auto it = pages_.find((pa + i) >> 12);
      o[i] = it == pages_.end() ? 0xff : it->second[(pa + i) & 0xfff];
    }
  }
  void write(uint64_t pa, const void* in, size_t len) override {
    auto* b = static_cast<const uint8_t*>(in);
    for (size_t i = 0; i < len; ++i) {
      auto it = pages_.find((pa + i) >> 12);
      if (it != pages_.end()) it->second[(pa + i) & 0xfff] = b[i];
    }
  }

 private:
  std::map<uint64_t, std::array<uint8_t, 4096>> pages_;
};

// Builds page tables for one paging mode in a Ram, allocating table pages
// upwards from `first_table`.
class Tables {
 public:
  Tables(Ram& ram, PagingMode mode, uint64_t first_table = 0x10'0000) : ram_(ram), mode_(mode), next_(first_table) {
    root_ = alloc();
  }
  uint64_t cr3() const { return root_; }

  // Maps the page of `size` at `linear` to `pa`: `leaf` goes into the entry
  // that maps it (with PS for a large page), `upper` into the entries above
  // it that this creates. Returns the addresses of the entries used, top
  // level first.
  std::vector<uint64_t> map(uint64_t linear, uint64_t pa, uint64_t size, uint64_t leaf = kUserRw,
                            uint64_t upper = kUserRw) {
    std::vector<uint64_t> path;
    uint64_t table = root_;
    for (unsigned shift : shifts()) {
      uint64_t entry_address = table + ((linear >> shift) & index_mask()) * entry_bytes();
      path.push_back(entry_address);
      if ((uint64_t{1} << shift) == size) {
        uint64_t e = pa | leaf | (size > k4K ? kPtePs : 0);
        // A 4-MByte PDE keeps physical-address bits 39:32 in its bits 20:13 (PSE-36).
        if (mode_ == PagingMode::k32Bit && size == k4M)
          e = (pa & 0xffc0'0000) | (((pa >> 32) & 0xff) << 13) | leaf | kPtePs;
        put(entry_address, e);
        return path;
      }
      uint64_t e = get(entry_address);
      if (!(e & kPteP)) {
        // PAE PDPTEs have only P: their R/W and U/S positions are reserved.
        e = alloc() | (mode_ == PagingMode::kPae && shift == 30 ? kPteP : upper);
        put(entry_address, e);
      }
      table = e & (entry_bytes() == 4 ? 0xffff'f000 : 0x000f'ffff'ffff'f000);
    }
    ADD_FAILURE() << "no level maps pages of " << size << " bytes";
    return path;
  }

  uint64_t get(uint64_t entry_address) {
    return entry_bytes() == 4 ? ram_.read_u32(entry_address) : ram_.read_u64(entry_address);
  }
  void put(uint64_t entry_address, uint64_t e) {
    if (entry_bytes() == 4)
      ram_.write_u32(entry_address, static_cast<uint32_t>(e));
    else
      ram_.write_u64(entry_address, e);
  }

 private:
  std::vector<unsigned> shifts() const {
    switch (mode_) {
      case PagingMode::k32Bit: return {22, 12};
      case PagingMode::kPae: return {30, 21, 12};
      case PagingMode::k4Level: return {39, 30, 21, 12};
      default: return {48, 39, 30, 21, 12};
    }
  }
  uint64_t index_mask() const { return mode_ == PagingMode::k32Bit ? 0x3ff : 0x1ff; }
  unsigned entry_bytes() const { return mode_ == PagingMode::k32Bit ? 4 : 8; }
  uint64_t alloc() {
    uint64_t t = next_;
    next_ += k4K;
    ram_.back(t);
    return t;
  }

  Ram& ram_;
  PagingMode mode_;
  uint64_t next_;
  uint64_t root_ = 0;
};

// The usual register settings for `mode`: CR0.WP on, CR4.PSE with 32-bit
// paging, IA32_EFER.NXE with the 64-bit entry formats.
PagingState state_for(PagingMode mode, uint64_t cr3) {
  PagingState s;
  s.cr3 = cr3;
  switch (mode) {
    case PagingMode::kNone: break;
    case PagingMode::k32Bit: s.cr0 = kCr0Pg | kCr0Wp, s.cr4 = kCr4Pse; break;
    case PagingMode::kPae: s.cr0 = kCr0Pg | kCr0Wp, s.cr4 = kCr4Pae, s.efer = kEferNxe; break;
    case PagingMode::k4Level: s.cr0 = kCr0Pg | kCr0Wp, s.cr4 = kCr4Pae, s.efer = kEferLma | kEferNxe; break;
    case PagingMode::k5Level:
      s.cr0 = kCr0Pg | kCr0Wp, s.cr4 = kCr4Pae | kCr4La57, s.efer = kEferLma | kEferNxe;
      break;
  }
  return s;
}

// --- Modes and page sizes ---

TEST(PagingMode, FromControlRegisters) {
  EXPECT_EQ(paging_mode(state_for(PagingMode::kNone, 0)), PagingMode::kNone);
  EXPECT_EQ(paging_mode(state_for(PagingMode::k32Bit, 0)), PagingMode::k32Bit);
  EXPECT_EQ(paging_mode(state_for(PagingMode::kPae, 0)), PagingMode::kPae);
  EXPECT_EQ(paging_mode(state_for(PagingMode::k4Level, 0)), PagingMode::k4Level);
  EXPECT_EQ(paging_mode(state_for(PagingMode::k5Level, 0)), PagingMode::k5Level);
  // CR4.LA57 means nothing outside IA-32e mode.
  PagingState pae = state_for(PagingMode::kPae, 0);
  pae.cr4 |= kCr4La57;
  EXPECT_EQ(paging_mode(pae), PagingMode::kPae);
}

TEST(PagingMode, ImpossibleStatesAreHostBugs) {
  PagingState no_pae = state_for(PagingMode::k4Level, 0);
  no_pae.cr4 &= ~kCr4Pae;
  EXPECT_EQ(paging_state_error(no_pae), "IA32_EFER.LMA = 1 with CR4.PAE = 0");
  PagingState no_pg = state_for(PagingMode::k4Level, 0);
  no_pg.cr0 = 0;
  EXPECT_EQ(paging_state_error(no_pg), "IA32_EFER.LMA = 1 with CR0.PG = 0");
  PagingState wide = state_for(PagingMode::k4Level, 0);
  wide.maxphyaddr = 57;
  EXPECT_EQ(paging_state_error(wide), "MAXPHYADDR (CPUID.80000008H:EAX[7:0]) must be 32..52, not 57");
  Ram ram;
  EXPECT_THROW(translate(ram, no_pae, 0, Access::kRead, kSupervisor), std::invalid_argument);
  EXPECT_EQ(paging_state_error(state_for(PagingMode::k4Level, 0)), std::nullopt);
}

TEST(NoPaging, LinearIsPhysicalIn32Bits) {
  Ram ram;
  PagingState s = state_for(PagingMode::kNone, 0);
  for (auto [linear, physical] : {std::pair<uint64_t, uint64_t>{0x1234'5678, 0x1234'5678},
                                  {0xffff'fff0, 0xffff'fff0},
                                  {0x1'0000'1000, 0x1000}}) {
    WalkResult r = walk(ram, s, linear, Access::kWrite, kUser);
    ASSERT_TRUE(r.ok()) << std::hex << linear;
    EXPECT_EQ(r.translation.physical, physical);
    EXPECT_EQ(r.translation.update_count, 0u);
  }
}

struct MapCase {
  const char* name;
  PagingMode mode;
  uint64_t linear;  // of the page
  uint64_t physical;
  uint64_t size;
};

class Maps : public testing::TestWithParam<MapCase> {};

TEST_P(Maps, TranslateEveryByteOfThePage) {
  const MapCase& c = GetParam();
  Ram ram;
  Tables tables(ram, c.mode);
  tables.map(c.linear, c.physical, c.size);
  PagingState s = state_for(c.mode, tables.cr3());
  for (uint64_t offset : {uint64_t{0}, uint64_t{0x123}, c.size - 1}) {
    WalkResult r = translate(ram, s, c.linear + offset, Access::kRead, kUser);
    ASSERT_TRUE(r.ok()) << "offset " << offset;
    EXPECT_EQ(r.translation.physical, c.physical + offset);
    EXPECT_EQ(r.translation.page_size, c.size);
    EXPECT_EQ(r.translation.rights, (PageRights{true, true, true, 0}));
  }
  // The next page is not mapped.
  WalkResult next = translate(ram, s, c.linear + c.size, Access::kRead, kUser);
  ASSERT_FALSE(next.ok());
  EXPECT_EQ(next.fault->vector, kPageFault);
}

INSTANTIATE_TEST_SUITE_P(
    EveryModeAndSize, Maps,
    testing::Values(MapCase{"Bit32Identity4K", PagingMode::k32Bit, 0x0040'1000, 0x0040'1000, k4K},
                    MapCase{"Bit32Moved4K", PagingMode::k32Bit, 0xc000'0000, 0x0012'3000, k4K},
                    MapCase{"Bit32Pse4M", PagingMode::k32Bit, 0x00c0'0000, 0x0100'0000, k4M},
                    MapCase{"Bit32Pse36Above4G", PagingMode::k32Bit, 0x0080'0000, 0xab'0040'0000, k4M},
                    MapCase{"PaeIdentity4K", PagingMode::kPae, 0x0040'1000, 0x0040'1000, k4K},
                    MapCase{"PaeAbove4G", PagingMode::kPae, 0xc000'0000, 0x1'2345'6000, k4K},
                    MapCase{"Pae2M", PagingMode::kPae, 0x0060'0000, 0x0020'0000, k2M},
                    MapCase{"Level4Identity4K", PagingMode::k4Level, 0x0040'1000, 0x0040'1000, k4K},
                    MapCase{"Level4Moved4K", PagingMode::k4Level, 0x7fff'ffff'e000, 0x0000'3000, k4K},
                    MapCase{"Level4HigherHalf2M", PagingMode::k4Level, kHigherHalf, 0x0020'0000, k2M},
                    MapCase{"Level4HigherHalf4K", PagingMode::k4Level, kHigherHalf + 0x5000, 0x0010'5000, k4K},
                    MapCase{"Level4OneG", PagingMode::k4Level, 0x0000'0080'4000'0000, 0xc0'4000'0000, k1G},
                    MapCase{"Level5Wide4K", PagingMode::k5Level, 0x00ff'8000'0000'1000, 0x0000'2000, k4K},
                    MapCase{"Level5HigherHalf2M", PagingMode::k5Level, kHigherHalf, 0x0020'0000, k2M}),
    [](const testing::TestParamInfo<MapCase>& info) { return info.param.name; });

// --- The #PF error code, one bit at a time ---

struct ErrorCase {
  const char* name;
  PagingMode mode = PagingMode::k4Level;
  uint64_t size = k4K;
  uint64_t leaf = kUserRw;   // the entry that maps the page
  uint64_t upper = kUserRw;  // every entry above it
  int poke_level = -1;       // OR `poke` into the entry at this level (0 = top)
  uint64_t poke = 0;
  uint64_t cr0_clear = 0;
  uint64_t cr4_set = 0;
  uint64_t cr4_clear = 0;
  uint64_t efer_clear = 0;
  uint64_t rflags = 0;
  uint32_t pkru = 0;
  unsigned maxphyaddr = 40;
  Access access = Access::kRead;
  Accessor who = kSupervisor;
  std::optional<uint32_t> error;  // nullopt: the access is allowed
};

constexpr std::optional<uint32_t> kAllowed;  // ErrorCase::error when the access succeeds
constexpr uint32_t P = kPfErrorP, W = kPfErrorWr, U = kPfErrorUs, R = kPfErrorRsvd, I = kPfErrorId, K = kPfErrorPk;
constexpr uint64_t kKey1 = uint64_t{1} << kPtePkShift;
constexpr uint32_t kPkruAd1 = 1u << 2, kPkruWd1 = 1u << 3;

class ErrorCode : public testing::TestWithParam<ErrorCase> {};

TEST_P(ErrorCode, FollowsTheSdm) {
  const ErrorCase& c = GetParam();
  bool legacy = c.mode == PagingMode::k32Bit || c.mode == PagingMode::kPae;
  uint64_t page = legacy ? 0x8000'0000 : 0x7f00'4000'0000;
  uint64_t linear = page + 0x123;
  Ram ram;
  Tables tables(ram, c.mode);
  std::vector<uint64_t> path = tables.map(page, 0x4000'0000, c.size, c.leaf, c.upper);
  if (c.poke_level >= 0) tables.put(path[c.poke_level], tables.get(path[c.poke_level]) | c.poke);
  PagingState s = state_for(c.mode, tables.cr3());
  s.cr0 &= ~c.cr0_clear;
  s.cr4 |= c.cr4_set;
  s.cr4 &= ~c.cr4_clear;
  s.efer &= ~c.efer_clear;
  s.rflags = c.rflags;
  s.pkru = c.pkru;
  s.maxphyaddr = c.maxphyaddr;

  WalkResult r = translate(ram, s, linear, c.access, c.who);
  if (c.error) {
    EXPECT_EQ(r.fault, page_fault(*c.error, linear));
  } else {
    EXPECT_EQ(r.fault, std::nullopt);
    EXPECT_EQ(r.translation.physical, 0x4000'0123u);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Sdm, ErrorCode,
    testing::Values(
        // P = 0: not present, with the access bits.
        ErrorCase{.name = "NotPresentRead", .leaf = kPteRw | kPteUs, .error = 0},
        ErrorCase{.name = "NotPresentUserWrite", .leaf = kPteRw | kPteUs, .access = Access::kWrite, .who = kUser,
                  .error = W | U},
        ErrorCase{.name = "NotPresentUpperLevel", .upper = kPteRw | kPteUs, .error = 0},
        ErrorCase{.name = "NotPresentFetchNxe", .leaf = 0, .access = Access::kFetch, .error = I},
        ErrorCase{.name = "NotPresentFetchNoNxeNoSmep", .leaf = 0, .efer_clear = kEferNxe, .access = Access::kFetch,
                  .error = 0},
        ErrorCase{.name = "NotPresentReservedBitsUnchecked", .leaf = kPteRw | (uint64_t{1} << 51), .error = 0},
        // U/S.
        ErrorCase{.name = "UserReadsSupervisorPage", .leaf = kPteP | kPteRw, .who = kUser, .error = P | U},
        ErrorCase{.name = "UserReadsViaSupervisorUpperEntries", .upper = kPteP | kPteRw, .who = kUser, .error = P | U},
        ErrorCase{.name = "UserReadsUserPage", .who = kUser, .error = kAllowed},
        ErrorCase{.name = "ImplicitSupervisorAtCpl3", .leaf = kPteP | kPteRw, .who = kImplicitSupervisor,
                  .error = kAllowed},
        ErrorCase{.name = "SupervisorReadsUserPage", .who = kSupervisor, .error = kAllowed},
        // R/W and CR0.WP.
        ErrorCase{.name = "UserWritesReadOnly", .leaf = kPteP | kPteUs, .access = Access::kWrite, .who = kUser,
                  .error = P | W | U},
        ErrorCase{.name = "UserWritesReadOnlyWp0", .leaf = kPteP | kPteUs, .cr0_clear = kCr0Wp,
                  .access = Access::kWrite, .who = kUser, .error = P | W | U},
        ErrorCase{.name = "UserWritesViaReadOnlyUpperEntries", .upper = kPteP | kPteUs, .access = Access::kWrite,
                  .who = kUser, .error = P | W | U},
        ErrorCase{.name = "SupervisorWritesReadOnlyWp1", .leaf = kPteP, .access = Access::kWrite, .error = P | W},
        ErrorCase{.name = "SupervisorWritesReadOnlyWp0", .leaf = kPteP, .cr0_clear = kCr0Wp, .access = Access::kWrite,
                  .error = kAllowed},
        // XD with IA32_EFER.NXE, and I/D.
        ErrorCase{.name = "FetchXd", .leaf = kUserRw | kPteXd, .access = Access::kFetch, .error = P | I},
        ErrorCase{.name = "UserFetchXdInUpperEntries", .upper = kUserRw | kPteXd, .access = Access::kFetch, .who = kUser,
                  .error = P | U | I},
        ErrorCase{.name = "ReadXdIsFine", .leaf = kUserRw | kPteXd, .access = Access::kRead, .error = kAllowed},
        ErrorCase{.name = "XdWithoutNxeIsReserved", .leaf = kUserRw | kPteXd, .efer_clear = kEferNxe, .error = P | R},
        ErrorCase{.name = "FetchWithoutNxeHasNoId", .leaf = kPteP | kPteRw, .efer_clear = kEferNxe,
                  .access = Access::kFetch, .who = kUser, .error = P | U},
        // SMEP (CR4 bit 20).
        ErrorCase{.name = "SmepSupervisorFetchUserPage", .cr4_set = kCr4Smep, .access = Access::kFetch,
                  .error = P | I},
        ErrorCase{.name = "SmepGivesIdWithoutNxe", .cr4_set = kCr4Smep, .efer_clear = kEferNxe,
                  .access = Access::kFetch, .error = P | I},
        ErrorCase{.name = "SmepSupervisorFetchSupervisorPage", .leaf = kPteP | kPteRw, .cr4_set = kCr4Smep,
                  .access = Access::kFetch, .error = kAllowed},
        ErrorCase{.name = "NoSmepSupervisorFetchUserPage", .access = Access::kFetch, .error = kAllowed},
        ErrorCase{.name = "SmepUserFetchUserPage", .cr4_set = kCr4Smep, .access = Access::kFetch, .who = kUser,
                  .error = kAllowed},
        // SMAP (CR4 bit 21) and RFLAGS.AC.
        ErrorCase{.name = "SmapReadAc0", .cr4_set = kCr4Smap, .error = P},
        ErrorCase{.name = "SmapWriteAc0", .cr4_set = kCr4Smap, .access = Access::kWrite, .error = P | W},
        ErrorCase{.name = "SmapReadAc1", .cr4_set = kCr4Smap, .rflags = kFlagAc, .error = kAllowed},
        ErrorCase{.name = "SmapWriteAc1StillHonoursWp", .leaf = kPteP | kPteUs, .cr4_set = kCr4Smap,
                  .rflags = kFlagAc, .access = Access::kWrite, .error = P | W},
        ErrorCase{.name = "SmapImplicitIgnoresAc", .cr4_set = kCr4Smap, .rflags = kFlagAc,
                  .who = kImplicitSupervisor, .error = P},
        ErrorCase{.name = "SmapSupervisorPage", .leaf = kPteP | kPteRw, .cr4_set = kCr4Smap, .error = kAllowed},
        ErrorCase{.name = "SmapUserAccess", .cr4_set = kCr4Smap, .who = kUser, .error = kAllowed},
        ErrorCase{.name = "SmapFetchIsSmepsBusiness", .cr4_set = kCr4Smap, .access = Access::kFetch,
                  .error = kAllowed},
        // Protection keys (CR4.PKE, PKRU).
        ErrorCase{.name = "PkAccessDisableUserRead", .leaf = kUserRw | kKey1, .cr4_set = kCr4Pke, .pkru = kPkruAd1,
                  .who = kUser, .error = P | U | K},
        ErrorCase{.name = "PkAccessDisableSupervisorRead", .leaf = kUserRw | kKey1, .cr4_set = kCr4Pke,
                  .pkru = kPkruAd1, .error = P | K},
        ErrorCase{.name = "PkWriteDisableUserWrite", .leaf = kUserRw | kKey1, .cr4_set = kCr4Pke, .pkru = kPkruWd1,
                  .access = Access::kWrite, .who = kUser, .error = P | W | U | K},
        ErrorCase{.name = "PkWriteDisableUserWriteWp0", .leaf = kUserRw | kKey1, .cr0_clear = kCr0Wp,
                  .cr4_set = kCr4Pke, .pkru = kPkruWd1, .access = Access::kWrite, .who = kUser,
                  .error = P | W | U | K},
        ErrorCase{.name = "PkWriteDisableUserRead", .leaf = kUserRw | kKey1, .cr4_set = kCr4Pke, .pkru = kPkruWd1,
                  .who = kUser, .error = kAllowed},
        ErrorCase{.name = "PkWriteDisableSupervisorWriteWp1", .leaf = kUserRw | kKey1, .cr4_set = kCr4Pke,
                  .pkru = kPkruWd1, .access = Access::kWrite, .error = P | W | K},
        ErrorCase{.name = "PkWriteDisableSupervisorWriteWp0", .leaf = kUserRw | kKey1, .cr0_clear = kCr0Wp,
                  .cr4_set = kCr4Pke, .pkru = kPkruWd1, .access = Access::kWrite, .error = kAllowed},
        ErrorCase{.name = "PkAndReadOnly", .leaf = kPteP | kPteUs | kKey1, .cr4_set = kCr4Pke, .pkru = kPkruWd1,
                  .access = Access::kWrite, .who = kUser, .error = P | W | U | K},
        ErrorCase{.name = "PkOtherKey", .leaf = kUserRw | kKey1, .cr4_set = kCr4Pke, .pkru = 0xffff'fff3, .who = kUser,
                  .error = kAllowed},
        ErrorCase{.name = "PkNotForFetches", .leaf = kUserRw | kKey1, .cr4_set = kCr4Pke, .pkru = kPkruAd1,
                  .access = Access::kFetch, .who = kUser, .error = kAllowed},
        ErrorCase{.name = "PkNotForSupervisorPages", .leaf = kPteP | kPteRw | kKey1, .cr4_set = kCr4Pke,
                  .pkru = kPkruAd1, .error = kAllowed},
        ErrorCase{.name = "PkeOff", .leaf = kUserRw | kKey1, .pkru = kPkruAd1, .who = kUser, .error = kAllowed},
        // RSVD: always with P (reserved bits are checked only in present entries).
        ErrorCase{.name = "RsvdAboveMaxphyaddrInPte", .leaf = kUserRw | (uint64_t{1} << 40), .error = P | R},
        ErrorCase{.name = "RsvdAboveMaxphyaddrInPml4e", .poke_level = 0, .poke = uint64_t{1} << 51,
                  .access = Access::kWrite, .who = kUser, .error = P | R | W | U},
        ErrorCase{.name = "IgnoredBit52WithMaxphyaddr52", .leaf = kUserRw | (uint64_t{1} << 52), .maxphyaddr = 52,
                  .error = kAllowed},
        ErrorCase{.name = "RsvdPsInPml4e", .poke_level = 0, .poke = kPtePs, .error = P | R},
        ErrorCase{.name = "RsvdPsInPml5e", .mode = PagingMode::k5Level, .poke_level = 0, .poke = kPtePs,
                  .error = P | R},
        ErrorCase{.name = "Rsvd2MPdeBit13", .size = k2M, .leaf = kUserRw | (uint64_t{1} << 13), .error = P | R},
        ErrorCase{.name = "Rsvd2MPdeBit20", .size = k2M, .leaf = kUserRw | (uint64_t{1} << 20), .error = P | R},
        ErrorCase{.name = "Pat2MPdeBit12IsFine", .size = k2M, .leaf = kUserRw | (uint64_t{1} << 12),
                  .error = kAllowed},
        ErrorCase{.name = "Rsvd1GPdpteBit29", .size = k1G, .leaf = kUserRw | (uint64_t{1} << 29), .error = P | R},
        ErrorCase{.name = "RsvdFetchHasId", .leaf = kUserRw | (uint64_t{1} << 45), .access = Access::kFetch,
                  .error = P | R | I},
        ErrorCase{.name = "RsvdWinsOverUs", .leaf = kPteP | (uint64_t{1} << 45), .who = kUser, .error = P | R | U},
        ErrorCase{.name = "IgnoredBits62To52AreFine", .upper = kUserRw | (uint64_t{0x7ff} << 52), .error = kAllowed},
        // 32-bit paging: 4-byte entries, no XD, CR4.PSE.
        ErrorCase{.name = "Bit32NotPresentUserWrite", .mode = PagingMode::k32Bit, .leaf = kPteRw,
                  .access = Access::kWrite, .who = kUser, .error = W | U},
        ErrorCase{.name = "Bit32UserReadsSupervisorPage", .mode = PagingMode::k32Bit, .leaf = kPteP | kPteRw,
                  .who = kUser, .error = P | U},
        ErrorCase{.name = "Bit32FetchHasNoId", .mode = PagingMode::k32Bit, .leaf = 0, .access = Access::kFetch,
                  .error = 0},
        ErrorCase{.name = "Bit32SmepGivesId", .mode = PagingMode::k32Bit, .cr4_set = kCr4Smep,
                  .access = Access::kFetch, .error = P | I},
        ErrorCase{.name = "Bit32Rsvd4MBit21", .mode = PagingMode::k32Bit, .size = k4M,
                  .leaf = kUserRw | (uint64_t{1} << 21), .error = P | R},
        ErrorCase{.name = "Bit32Rsvd4MAboveMaxphyaddr36", .mode = PagingMode::k32Bit, .size = k4M,
                  .leaf = kUserRw | (uint64_t{1} << 17), .maxphyaddr = 36, .error = P | R},
        ErrorCase{.name = "Bit32PsIgnoredWithoutPse", .mode = PagingMode::k32Bit, .poke_level = 0, .poke = kPtePs,
                  .cr4_clear = kCr4Pse, .error = kAllowed},
        // PAE paging: PDPTEs, XD, reserved bits 62:M.
        ErrorCase{.name = "PaePdpteRwIsReserved", .mode = PagingMode::kPae, .poke_level = 0, .poke = kPteRw,
                  .error = P | R},
        ErrorCase{.name = "PaePdpteXdIsReserved", .mode = PagingMode::kPae, .poke_level = 0, .poke = kPteXd,
                  .access = Access::kFetch, .error = P | R | I},
        ErrorCase{.name = "PaeRsvdBit62InPte", .mode = PagingMode::kPae, .leaf = kUserRw | (uint64_t{1} << 62),
                  .error = P | R},
        ErrorCase{.name = "PaeFetchXd", .mode = PagingMode::kPae, .upper = kUserRw | kPteXd, .access = Access::kFetch,
                  .who = kUser, .error = P | U | I},
        ErrorCase{.name = "PaeXdWithoutNxeIsReserved", .mode = PagingMode::kPae, .leaf = kUserRw | kPteXd,
                  .efer_clear = kEferNxe, .error = P | R},
        ErrorCase{.name = "PaeSupervisorWritesReadOnly", .mode = PagingMode::kPae, .leaf = kPteP | kPteUs,
                  .access = Access::kWrite, .error = P | W},
        ErrorCase{.name = "PaeNoProtectionKeys", .mode = PagingMode::kPae, .leaf = kUserRw, .cr4_set = kCr4Pke,
                  .pkru = ~0u, .who = kUser, .error = kAllowed}),
    [](const testing::TestParamInfo<ErrorCase>& info) { return info.param.name; });

TEST(PaePdpte, NotPresentIsAPageFault) {
  Ram ram;
  Tables tables(ram, PagingMode::kPae);
  PagingState s = state_for(PagingMode::kPae, tables.cr3());
  EXPECT_EQ(translate(ram, s, 0x4000'0000, Access::kWrite, kUser).fault, page_fault(W | U, 0x4000'0000));
}

// --- Canonical addresses (SDM Vol. 3A 3.3.7.1) ---

TEST(Canonical, NonCanonicalIsGpOrSsNotPf) {
  Ram ram;
  PagingState s = state_for(PagingMode::k4Level, Tables(ram, PagingMode::k4Level).cr3());
  const Fault gp{kGeneralProtection, 0u, 0};
  const Fault ss{kStackFault, 0u, 0};
  const uint64_t kNonCanonical[] = {0x0000'8000'0000'0000, 0xffff'7fff'ffff'ffff, 0x8000'0000'0000'0000};
  for (uint64_t linear : kNonCanonical) {
    EXPECT_EQ(translate(ram, s, linear, Access::kRead, kSupervisor).fault, gp) << std::hex << linear;
    EXPECT_EQ(translate(ram, s, linear, Access::kWrite, Accessor{0, false, true}).fault, ss) << std::hex << linear;
  }
  // Canonical but unmapped: a #PF.
  EXPECT_EQ(translate(ram, s, kHigherHalf, Access::kRead, kSupervisor).fault, page_fault(0, kHigherHalf));
  // 57-bit linear addresses with CR4.LA57.
  s.cr4 |= kCr4La57;
  const uint64_t kBit47 = 0x0000'8000'0000'0000;
  EXPECT_EQ(translate(ram, s, kBit47, Access::kRead, kSupervisor).fault, page_fault(0, kBit47));
  EXPECT_EQ(translate(ram, s, 0x0100'0000'0000'0000, Access::kRead, kSupervisor).fault, gp);
}

TEST(Canonical, LegacyModesDropBitsAbove31) {
  Ram ram;
  Tables tables(ram, PagingMode::kPae);
  tables.map(0x1000, 0x5000, k4K);
  PagingState s = state_for(PagingMode::kPae, tables.cr3());
  WalkResult r = translate(ram, s, 0xdead'0000'0000'1000, Access::kRead, kSupervisor);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.translation.physical, 0x5000u);
  EXPECT_EQ(translate(ram, s, 0x1'0000'2000, Access::kRead, kSupervisor).fault, page_fault(0, 0x2000));
}

// CR3 bits below the table address are PCID (4-level) or PWT/PCD, not address;
// the PAE PDPT is only 32-byte aligned (CR3[31:5], SDM 4.4.1).
TEST(Cr3, LowBits) {
  Ram ram;
  Tables level4(ram, PagingMode::k4Level);
  level4.map(0x1000, 0x5000, k4K);
  PagingState s = state_for(PagingMode::k4Level, level4.cr3() | 0xfff);
  EXPECT_EQ(translate(ram, s, 0x1234, Access::kRead, kSupervisor).translation.physical, 0x5234u);

  Tables pae(ram, PagingMode::kPae, 0x20'0000);
  pae.map(0x1000, 0x6000, k4K);
  ram.write_u64(pae.cr3() + 0x60, ram.read_u64(pae.cr3()));  // PDPTE 0 again at PDPT + 0x60
  s = state_for(PagingMode::kPae, pae.cr3() + 0x60);
  EXPECT_EQ(translate(ram, s, 0x1234, Access::kRead, kSupervisor).translation.physical, 0x6234u);
  s.cr3 += 0x1f;  // CR3[4:0] are ignored
  EXPECT_EQ(translate(ram, s, 0x1234, Access::kRead, kSupervisor).translation.physical, 0x6234u);
}

// --- Accessed and dirty flags (SDM 4.8) ---

struct AdCase {
  const char* name;
  PagingMode mode;
  uint64_t size;
  Access access;
};

class AccessedDirty : public testing::TestWithParam<AdCase> {};

TEST_P(AccessedDirty, SetByASuccessfulWalk) {
  const AdCase& c = GetParam();
  Ram ram;
  Tables tables(ram, c.mode);
  std::vector<uint64_t> path = tables.map(c.size * 3, c.size * 5, c.size);
  PagingState s = state_for(c.mode, tables.cr3());
  std::vector<uint64_t> before;
  for (uint64_t e : path) before.push_back(tables.get(e));

  ASSERT_TRUE(walk(ram, s, c.size * 3 + 8, c.access, kUser).ok());
  for (size_t i = 0; i < path.size(); ++i) {
    uint64_t expect = before[i] | kPteA;
    if (c.mode == PagingMode::kPae && i == 0) expect = before[i];  // PDPTEs have no A bit
    if (i + 1 == path.size() && c.access == Access::kWrite) expect |= kPteD;
    EXPECT_EQ(tables.get(path[i]), expect) << "level " << i;
  }
  // The neighbouring entries are untouched (4-byte entries are written as 4 bytes).
  EXPECT_EQ(tables.get(path.back() + (c.mode == PagingMode::k32Bit ? 4 : 8)), 0u);
}

INSTANTIATE_TEST_SUITE_P(
    Sdm, AccessedDirty,
    testing::Values(AdCase{"Bit32Read", PagingMode::k32Bit, k4K, Access::kRead},
                    AdCase{"Bit32Write", PagingMode::k32Bit, k4K, Access::kWrite},
                    AdCase{"Bit32Write4M", PagingMode::k32Bit, k4M, Access::kWrite},
                    AdCase{"PaeWrite", PagingMode::kPae, k4K, Access::kWrite},
                    AdCase{"PaeFetch2M", PagingMode::kPae, k2M, Access::kFetch},
                    AdCase{"Level4Read", PagingMode::k4Level, k4K, Access::kRead},
                    AdCase{"Level4Write", PagingMode::k4Level, k4K, Access::kWrite},
                    AdCase{"Level4Write1G", PagingMode::k4Level, k1G, Access::kWrite},
                    AdCase{"Level5Write2M", PagingMode::k5Level, k2M, Access::kWrite}),
    [](const testing::TestParamInfo<AdCase>& info) { return info.param.name; });

TEST(AccessedDirtyOnFault, AFaultingWalkChangesNothing) {
  Ram ram;
  Tables tables(ram, PagingMode::k4Level);
  std::vector<uint64_t> read_only = tables.map(0x1000, 0x8000, k4K, kPteP | kPteUs);
  std::vector<uint64_t> absent = tables.map(0x2000, 0x9000, k4K, kPteRw | kPteUs);
  PagingState s = state_for(PagingMode::k4Level, tables.cr3());
  EXPECT_FALSE(walk(ram, s, 0x1000, Access::kWrite, kUser).ok());
  EXPECT_FALSE(walk(ram, s, 0x2000, Access::kRead, kUser).ok());
  for (uint64_t e : read_only) EXPECT_EQ(tables.get(e) & (kPteA | kPteD), 0u);
  for (uint64_t e : absent) EXPECT_EQ(tables.get(e) & (kPteA | kPteD), 0u);
  // translate() alone never writes.
  ASSERT_TRUE(translate(ram, s, 0x1000, Access::kRead, kUser).ok());
  EXPECT_EQ(tables.get(read_only.back()) & kPteA, 0u);
}

// --- Open bus: paging structures outside RAM read as all ones ---

TEST(OpenBus, TableOutsideRamIsAReservedBitFault) {
  Ram ram;
  Tables tables(ram, PagingMode::k4Level);
  std::vector<uint64_t> path = tables.map(0x1000, 0x8000, k4K);
  tables.put(path[1], 0x8000'0000 | kUserRw);  // the PDPTE points at a PD outside RAM
  PagingState s = state_for(PagingMode::k4Level, tables.cr3());
  EXPECT_EQ(walk(ram, s, 0x1000, Access::kWrite, kSupervisor).fault, page_fault(P | R | W, 0x1000));
  // CR3 itself outside RAM: the PML4E is all ones, PS set in a PML4E is reserved too.
  s.cr3 = 0x7000'0000;
  s.maxphyaddr = 52;
  EXPECT_EQ(walk(ram, s, 0x1000, Access::kRead, kSupervisor).fault, page_fault(P | R, 0x1000));
}

TEST(GuestRamMemory, OpenBusAboveRam) {
  GuestRam guest(2 * k4K);
  GuestRamMemory mem(guest);
  mem.write_u32(0x1ffe, 0x1122'3344);  // the top half falls off the end
  EXPECT_EQ(guest.read<uint16_t>(0x1ffe), 0x3344);
  EXPECT_EQ(mem.read_u32(0x1ffe), 0xffff'3344u);
  EXPECT_EQ(mem.read_u64(0x10'0000), ~uint64_t{0});
  mem.write_u64(0x10'0000, 0);  // dropped, no throw
}

// RAM in two regions with a gap (the pc machine's below and above 4 GiB):
// the gap is open bus, and a walk reaches tables above it.
TEST(GuestRamMemory, GapBetweenRegionsIsOpenBus) {
  constexpr uint64_t kHigh = uint64_t{1} << 32;
  GuestRam guest(std::vector<RamRegion>{{0, 2 * k4K}, {kHigh, 6 * k4K}});
  GuestRamMemory mem(guest);
  EXPECT_EQ(mem.read_u64(3 * k4K), ~uint64_t{0});
  mem.write_u64(3 * k4K, 0);  // dropped
  mem.write_u32(kHigh - 2, 0x1122'3344);  // the bottom half falls into the gap
  EXPECT_EQ(guest.read<uint16_t>(kHigh), 0x1122);
  EXPECT_EQ(mem.read_u32(kHigh - 2), 0x1122'ffffu);
  mem.write_u64(kHigh + 8, 0x0102'0304'0506'0708);
  EXPECT_EQ(mem.read_u64(kHigh + 8), 0x0102'0304'0506'0708u);

  // 4-level tables at 4 GiB, mapping linear 0x5000 to the page at 4 GiB + 20 KiB.
  PagingState s = state_for(PagingMode::k4Level, kHigh + k4K);
  s.maxphyaddr = 40;
  guest.write<uint64_t>(kHigh + k4K, (kHigh + 2 * k4K) | 0x3);      // PML4E -> PDPT
  guest.write<uint64_t>(kHigh + 2 * k4K, (kHigh + 3 * k4K) | 0x3);  // PDPTE -> PD
  guest.write<uint64_t>(kHigh + 3 * k4K, (kHigh + 4 * k4K) | 0x3);  // PDE -> PT
  guest.write<uint64_t>(kHigh + 4 * k4K + 5 * 8, (kHigh + 5 * k4K) | 0x3);
  const WalkResult r = walk(mem, s, 0x5123, Access::kRead, kSupervisor);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.translation.physical, kHigh + 5 * k4K + 0x123);
}

// --- PagedMemory: accesses of any length, all-or-nothing ---

class Paged : public testing::Test {
 protected:
  // Linear 0x10000 -> physical 0x30000 (user RW), 0x11000 -> 0x20000
  // (user RW), 0x12000 -> 0x40000 (user read-only), 0x13000 not present.
  Paged() : tables_(ram_, PagingMode::k4Level) {
    for (uint64_t pa : {0x20000, 0x30000, 0x40000}) ram_.back(pa);
    first_ = tables_.map(0x10000, 0x30000, k4K);
    second_ = tables_.map(0x11000, 0x20000, k4K);
    read_only_ = tables_.map(0x12000, 0x40000, k4K, kPteP | kPteUs);
  }
  PagingState state() { return state_for(PagingMode::k4Level, tables_.cr3()); }

  Ram ram_;
  Tables tables_;
  std::vector<uint64_t> first_, second_, read_only_;
};

TEST_F(Paged, ReadAndWriteAcrossAPageBoundary) {
  PagedMemory mem(ram_, state());
  const uint64_t v = 0x0102'0304'0506'0708;
  ASSERT_EQ(mem.write(0x10ffc, &v, sizeof v, kUser), std::nullopt);
  EXPECT_EQ(ram_.read_u32(0x30ffc), 0x0506'0708u);
  EXPECT_EQ(ram_.read_u32(0x20000), 0x0102'0304u);
  uint64_t back = 0;
  ASSERT_EQ(mem.read(0x10ffc, &back, sizeof back, kUser), std::nullopt);
  EXPECT_EQ(back, v);
  EXPECT_TRUE(tables_.get(first_.back()) & kPteD);
  EXPECT_TRUE(tables_.get(second_.back()) & kPteD);
}

TEST_F(Paged, AFaultingWriteWritesNothing) {
  PagedMemory mem(ram_, state());
  const std::array<uint8_t, 16> bytes{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
  // Into the read-only page: the fault names its first byte.
  EXPECT_EQ(mem.write(0x11ff8, bytes.data(), bytes.size(), kUser), page_fault(P | W | U, 0x12000));
  EXPECT_EQ(ram_.read_u64(0x20ff8), 0u);
  EXPECT_EQ(tables_.get(second_.back()) & (kPteA | kPteD), 0u);
  // Into the absent page, across two good ones.
  std::vector<uint8_t> big(2 * k4K + 8, 0xaa);
  PagingState s = state();
  s.cr0 &= ~kCr0Wp;  // supervisor writes to the read-only page are allowed now
  mem.set_state(s);
  EXPECT_EQ(mem.write(0x11000, big.data(), big.size(), kSupervisor), page_fault(W, 0x13000));
  EXPECT_EQ(ram_.read_u64(0x20000), 0u);
  EXPECT_EQ(ram_.read_u64(0x40000), 0u);
}

TEST_F(Paged, AFaultingReadReportsTheFaultingPage) {
  PagedMemory mem(ram_, state());
  std::array<uint8_t, 8> out{};
  EXPECT_EQ(mem.read(0x12ffc, out.data(), out.size(), kUser), page_fault(U, 0x13000));
  EXPECT_EQ(tables_.get(read_only_.back()) & kPteA, 0u);
  EXPECT_EQ(mem.read(0x0fffc, out.data(), out.size(), kUser), page_fault(U, 0x0fffc));
}

TEST_F(Paged, FetchChecksExecute) {
  tables_.put(second_.back(), tables_.get(second_.back()) | kPteXd);
  PagedMemory mem(ram_, state());
  std::array<uint8_t, 15> insn{};
  EXPECT_EQ(mem.fetch(0x10ff8, insn.data(), insn.size(), kUser), page_fault(P | U | I, 0x11000));
  EXPECT_EQ(mem.read(0x10ff8, insn.data(), insn.size(), kUser), std::nullopt);
  EXPECT_EQ(mem.fetch(0x10ff0, insn.data(), 8, kUser), std::nullopt);
}

TEST_F(Paged, NonCanonicalAnywhereBeatsAPageFault) {
  PagedMemory mem(ram_, state());
  std::array<uint8_t, 16> out{};
  // The first half is canonical but not mapped; the second half is past bit 47.
  EXPECT_EQ(mem.read(0x7fff'ffff'fff8, out.data(), out.size(), kUser), (Fault{kGeneralProtection, 0u, 0}));
  const Accessor user_stack{3, false, true};
  EXPECT_EQ(mem.write(0x7fff'ffff'fff8, out.data(), out.size(), user_stack), (Fault{kStackFault, 0u, 0}));
}

TEST_F(Paged, HigherHalfFrame) {
  // An interrupt frame pushed at the top of a -2 GiB kernel stack page.
  ram_.back(0x50000);
  tables_.map(kHigherHalf, 0x50000, k4K, kPteP | kPteRw);
  PagedMemory mem(ram_, state());
  const std::array<uint64_t, 5> frame{0x11, 0x22, 0x33, 0x44, 0x55};  // SS, RSP, RFLAGS, CS, RIP
  const Accessor frame_writer{3, true, true};  // an implicit supervisor stack access from CPL 3
  ASSERT_EQ(mem.write(kHigherHalf + k4K - 40, frame.data(), 40, frame_writer), std::nullopt);
  EXPECT_EQ(ram_.read_u64(0x50000 + k4K - 40), 0x11u);
  EXPECT_EQ(ram_.read_u64(0x50000 + k4K - 8), 0x55u);
  // The same push by a user-mode access faults: the page is supervisor-only.
  EXPECT_EQ(mem.write(kHigherHalf + k4K - 40, frame.data(), 40, kUser), page_fault(P | W | U, kHigherHalf + k4K - 40));
}

TEST(PagedMemory, NoPagingWrapsAt4G) {
  Ram ram;
  ram.back(0);
  ram.write_u32(0, 0xaabb'ccdd);
  PagedMemory mem(ram, state_for(PagingMode::kNone, 0));
  uint32_t v = 0;
  ASSERT_EQ(mem.read(0xffff'fffe, &v, sizeof v, kSupervisor), std::nullopt);
  EXPECT_EQ(v, 0xccdd'ffffu);  // two open-bus bytes at 4 GiB - 2, then physical 0
  EXPECT_EQ(mem.read(0x1234, &v, 0, kSupervisor), std::nullopt);
}

}  // namespace
}  // namespace topolab::x86
