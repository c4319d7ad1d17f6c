// SPDX-License-Identifier: GPL-2.0-or-later
// The MSR file (model/msr_file.h) of a CPU whose CPUID the input gives:
// either a -cpu model topolab knows (with or without pmu=on) or raw CPUID
// registers for the leaves the MSRs depend on (vendor, family and feature
// bits, leaf 0AH's PMU, 80000008H's MAXPHYADDR), so that combinations no
// model has are tried too. Then a program of RDMSR / WRMSR / RDPMC.
// Invariants (SDM Vol. 4 table 2-2, Vol. 3B, AMD APM Vol. 2 13.2):
// - no MSR the CPUID does not announce exists (MsrAvailability, built here
//   from the same CPUID): it reads and writes as #GP; nor do those kept
//   elsewhere (IA32_APIC_BASE, TSC_DEADLINE, x2APIC, EFER, STAR...);
// - a refused WRMSR changes nothing; an accepted one reads back as the
//   SDM's mask says: the value itself for plain registers; PMCs take bits
//   31:0 sign-extended to the counter width, fixed and AMD counters drop
//   the bits past theirs, MISC_ENABLE keeps its read-only bits, writing the
//   TSC or TSC_ADJUST moves both by the same amount, GLOBAL_OVF_CTRL and
//   AMD's SYSCFG/NB_CFG read 0, BIOS_SIGN_ID keeps the revision, PRED_CMD
//   stays write-only; and the value obeys the MSR's rule (MCi_STATUS only
//   0, MCG_CTL all zeros or ones, MTRR types valid and addresses below
//   MAXPHYADDR, TSC_AUX 32 bits, VM_HSAVE_PA page-aligned);
// - the read-only MSRs (MTRRCAP, MCG_CAP, ARCH_CAPABILITIES,
//   PERF_CAPABILITIES, PERF_GLOBAL_STATUS) refuse every write, and every
//   other MSR takes back the value it reads (a read-modify-write of no bit);
// - RDPMC reads what RDMSR of the counter reads.
#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>

#include "arch/x86_arch.h"
#include "model/cpuid.h"
#include "model/msr_file.h"
#include "fuzz/fuzz_check.h"
#include "fuzz/fuzz_input.h"

using namespace topolab;
using namespace topolab::x86;

namespace {

constexpr uint64_t low_bits(unsigned width) { return width >= 64 ? ~uint64_t{0} : (uint64_t{1} << width) - 1; }

// MSRs worth aiming at: every one the file or its neighbours know, and the
// ones kept elsewhere.
constexpr uint32_t kInteresting[] = {
    kMsrTsc, kMsrTscAdjust, kMsrSpecCtrl, kMsrPredCmd, kMsrBiosSignId, kMsrPmc0, kMsrMtrrCap, kMsrArchCapabilities,
    kMsrMcgCap, kMsrMcgStatus, kMsrMcgCtl, kMsrPerfEvtSel0, kMsrMiscEnable, kMsrDebugCtl, kMsrMtrrPhysBase0,
    kMsrMtrrFix64k00000, kMsrMtrrFix16k80000, kMsrMtrrFix16kA0000, kMsrMtrrFix4kC0000, kMsrMtrrDefType,
    kMsrFixedCtr0, kMsrPerfCapabilities, kMsrFixedCtrCtrl, kMsrPerfGlobalStatus, kMsrPerfGlobalCtrl,
    kMsrPerfGlobalOvfCtrl, kMsrMc0Ctl, kMsrTscAux, kMsrK7PerfCtl0, kMsrK7PerfCtr0, kMsrAmdSyscfg, kMsrAmdNbCfg,
    kMsrAmdIntPendingMsg, kMsrVmHsavePa, kMsrF15hPerfCtl0, kMsrSysenterCs, kMsrPat, kMsrEfer, kMsrStar,
    kMsrLstar, kMsrFsBase, kMsrKernelGsBase, 0x1b /* APIC_BASE */, 0x6e0 /* TSC_DEADLINE */, 0x800 /* x2APIC */};
// Kept by the local APIC or the engine, never by the file.
bool kept_elsewhere(uint32_t msr) {
  return msr == 0x1b || msr == 0x6e0 || (msr >= 0x800 && msr <= 0x8ff) ||
         (msr >= kMsrSysenterCs && msr <= kMsrSysenterEip) || msr == kMsrPat ||
         (msr >= kMsrEfer && msr <= kMsrFmask) || (msr >= kMsrFsBase && msr <= kMsrKernelGsBase);
}
bool read_only(uint32_t msr) {
  return msr == kMsrMtrrCap || msr == kMsrMcgCap || msr == kMsrArchCapabilities || msr == kMsrPerfCapabilities ||
         msr == kMsrPerfGlobalStatus;
}
bool is_memory_type(uint64_t t) { return t == 0 || t == 1 || t == 4 || t == 5 || t == 6; }

// CPUID from raw registers: the leaves the file reads, the rest zero.
class RawCpuid {
 public:
  explicit RawCpuid(fuzz::Input& in) {
    static constexpr std::pair<uint32_t, uint32_t> kLeaves[] = {{0, 0}, {1, 0}, {7, 0}, {7, 2}, {0xa, 0},
                                                                {0x80000000, 0}, {0x80000001, 0}, {0x80000008, 0}};
    for (const auto& key : kLeaves) {
      CpuidRegs r;
      r.eax = in.take<uint32_t>();
      r.ebx = in.take<uint32_t>();
      r.ecx = in.take<uint32_t>();
      r.edx = in.take<uint32_t>();
      leaves_[key] = r;
    }
    // Keep the maximum leaves sane often enough that the others are read.
    const uint8_t shape = in.take<uint8_t>();
    if (shape & 1) leaves_[{0, 0}].eax = 0xd;
    if (shape & 2) leaves_[{0x80000000, 0}].eax = 0x80000008;
    if (shape & 4) {  // AuthenticAMD
      leaves_[{0, 0}].ebx = 0x68747541, leaves_[{0, 0}].edx = 0x69746e65, leaves_[{0, 0}].ecx = 0x444d4163;
    } else if (shape & 8) {  // GenuineIntel
      leaves_[{0, 0}].ebx = 0x756e6547, leaves_[{0, 0}].edx = 0x49656e69, leaves_[{0, 0}].ecx = 0x6c65746e;
    }
  }
  CpuidRegs operator()(uint32_t leaf, uint32_t subleaf) const {
    auto it = leaves_.find({leaf, subleaf});
    return it == leaves_.end() ? CpuidRegs{} : it->second;
  }

 private:
  std::map<std::pair<uint32_t, uint32_t>, CpuidRegs> leaves_;
};

uint32_t pick_msr(fuzz::Input& in) {
  const uint8_t how = in.take<uint8_t>();
  if (how < 0xe0) return kInteresting[how % std::size(kInteresting)] + (in.take<uint8_t>() % 20);
  return in.take<uint32_t>();
}

uint64_t pick_value(fuzz::Input& in, const std::optional<uint64_t>& current) {
  const uint8_t how = in.take<uint8_t>();
  switch (how & 3) {
    case 0: return in.take<uint64_t>();
    case 1: return current.value_or(0) ^ (uint64_t{1} << (in.take<uint8_t>() & 63));  // one bit flipped
    case 2: return in.take<uint8_t>();
    default: return how & 4 ? ~uint64_t{0} : 0;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::Input in(data, size);
  const uint8_t source = in.take<uint8_t>();
  CpuidQuery query;
  std::optional<CpuidModel> model;
  if (source & 1) {
    query = RawCpuid(in);
  } else {
    static const char* kModels[] = {"qemu64", "kvm64", "Skylake-Server", "EPYC", "AlderLake", "max",
                                    "Opteron_G1", "Opteron_G2", "Skylake-Server,pmu=on", "EPYC,pmu=on",
                                    "qemu64,pmu=on", "max,pmu=on"};
    try {
      model.emplace(Topology::parse("1"), parse_cpu(kModels[(source >> 1) % std::size(kModels)]));
    } catch (const ConfigError&) {
      return 0;
    }
    query = [&model](uint32_t leaf, uint32_t subleaf) { return model->query(0, leaf, subleaf); };
  }
  const MsrFileOptions options{.arch_capabilities = in.take<uint64_t>(), .perf_capabilities = in.take<uint64_t>()};
  MsrFile msrs(query, options);
  const MsrAvailability announced(query);
  const MsrCpuid& cpu = msrs.cpu();
  uint64_t vtsc = in.take<uint32_t>();

  for (int ops = 0; !in.done() && ops < 1024; ++ops) {
    const uint8_t op = in.take<uint8_t>();
    vtsc += op >> 4;
    const uint32_t msr = pick_msr(in);
    const std::optional<uint64_t> before = msrs.read(msr, vtsc);
    if ((msr_requirement(msr) && !announced.announced(msr)) || kept_elsewhere(msr)) {
      FUZZ_CHECK(!msrs.exists(msr) && !before, "MSR {:#x} exists, but CPUID does not announce it here", msr);
    }
    if (!msrs.exists(msr)) FUZZ_CHECK(!before, "MSR {:#x} reads {:#x} but does not exist", msr, *before);
    if (before == std::nullopt && msrs.exists(msr)) FUZZ_CHECK(msr == kMsrPredCmd, "MSR {:#x} unreadable", msr);
    const uint64_t tsc_before = msrs.tsc(vtsc);
    const std::optional<uint64_t> adjust_before = msrs.read(kMsrTscAdjust, vtsc);

    if (op & 1) {  // RDPMC of the counters this MSR number may be
      const uint32_t ecx = (op & 2 ? 1u << 30 : 0) | ((op >> 2) & 7);
      const std::optional<uint64_t> pmc = msrs.read_pmc(ecx);
      std::optional<uint64_t> direct;
      if (cpu.amd) direct = ecx < 4 ? msrs.read(kMsrK7PerfCtr0 + ecx, 0)
                          : ecx < 6 ? msrs.read(kMsrF15hPerfCtl0 + 2 * ecx + 1, 0) : std::nullopt;
      else direct = ecx & (1u << 30) ? msrs.read(kMsrFixedCtr0 + (ecx & 7), 0) : msrs.read(kMsrPmc0 + ecx, 0);
      FUZZ_CHECK(pmc == direct, "RDPMC {:#x} differs from RDMSR", ecx);
      continue;
    }
    if (op & 2) {  // write back what reads: never a #GP but for read-only MSRs
      if (!before) continue;
      const bool ok = msrs.write(msr, *before, vtsc);
      if (read_only(msr)) FUZZ_CHECK(!ok, "read-only MSR {:#x} took a write", msr);
      else FUZZ_CHECK(ok, "MSR {:#x} refused the value {:#x} it reads", msr, *before);
      const std::optional<uint64_t> after = msrs.read(msr, vtsc);
      if (msr != kMsrPerfGlobalOvfCtrl) FUZZ_CHECK(after == before, "MSR {:#x} changed by writing back {:#x}", msr, *before);
      continue;
    }

    const uint64_t value = pick_value(in, before);
    const bool ok = msrs.write(msr, value, vtsc);
    const std::optional<uint64_t> after = msrs.read(msr, vtsc);
    if (!ok) {
      FUZZ_CHECK(after == before && msrs.tsc(vtsc) == tsc_before, "refused WRMSR {:#x} <- {:#x} changed it", msr, value);
      continue;
    }
    FUZZ_CHECK(msrs.exists(msr), "WRMSR to absent {:#x} accepted", msr);
    FUZZ_CHECK(!read_only(msr), "read-only MSR {:#x} took {:#x}", msr, value);
    // The SDM's rule for what was accepted, and what reads back.
    std::optional<uint64_t> want = value;
    const bool pmc = msr >= kMsrPmc0 && msr < kMsrPmc0 + 8;
    const bool fixed = msr >= kMsrFixedCtr0 && msr < kMsrFixedCtr0 + MsrFile::kMaxFixedCounters;
    const bool amd_ctr = (msr >= kMsrK7PerfCtr0 && msr < kMsrK7PerfCtr0 + 4) ||
                         (msr >= kMsrF15hPerfCtl0 && msr < kMsrF15hPerfCtl0 + 12 && (msr & 1));
    const bool mc_bank = msr >= kMsrMc0Ctl && msr < kMsrMc0Ctl + 4 * MsrFile::kMceBanks;
    const bool mtrr_var = msr >= kMsrMtrrPhysBase0 && msr < kMsrMtrrPhysBase0 + 2 * MsrFile::kVariableMtrrs;
    const bool mtrr_fixed = msr == kMsrMtrrFix64k00000 || msr == kMsrMtrrFix16k80000 || msr == kMsrMtrrFix16kA0000 ||
                            (msr >= kMsrMtrrFix4kC0000 && msr < kMsrMtrrFix4kC0000 + 8);
    if (msr == kMsrTsc) {
      FUZZ_CHECK(after == value, "TSC written {:#x} reads {:#x}", value, after.value_or(0));
      FUZZ_CHECK(msrs.read(kMsrTscAdjust, vtsc).value_or(0) - adjust_before.value_or(0) == value - tsc_before ||
                     !adjust_before,
                 "TSC_ADJUST did not move with the TSC");
      continue;
    }
    if (msr == kMsrTscAdjust) {
      FUZZ_CHECK(msrs.tsc(vtsc) - tsc_before == value - *before, "the TSC did not move with TSC_ADJUST");
    } else if (msr == kMsrBiosSignId) {
      want = before;
    } else if (msr == kMsrPredCmd) {
      FUZZ_CHECK(value <= 1, "PRED_CMD took {:#x}", value);
      want = std::nullopt;
    } else if (msr == kMsrMiscEnable) {
      const uint64_t writable = kMiscEnableFastStrings | kMiscEnableTcc | kMiscEnableEist | kMiscEnableMonitor |
                                kMiscEnableLimitCpuid | kMiscEnableXtprDisable | kMiscEnableXdDisable;
      want = (value & writable) | (*before & ~writable);
    } else if (pmc) {
      want = static_cast<uint64_t>(static_cast<int64_t>(static_cast<int32_t>(value))) & low_bits(cpu.pmu.gp_width);
    } else if (fixed) {
      want = value & low_bits(cpu.pmu.fixed_width);
    } else if (amd_ctr) {
      want = value & low_bits(48);
    } else if (msr == kMsrPerfGlobalOvfCtrl || msr == kMsrAmdSyscfg || msr == kMsrAmdNbCfg ||
               msr == kMsrAmdIntPendingMsg) {
      want = 0;
    } else if (msr == kMsrTscAux) {
      FUZZ_CHECK(value >> 32 == 0, "TSC_AUX took {:#x}", value);
    } else if (msr == kMsrMcgCtl) {
      FUZZ_CHECK(value == 0 || value == ~uint64_t{0}, "MCG_CTL took {:#x}", value);
    } else if (mc_bank && (msr - kMsrMc0Ctl) % 4 == 1) {
      FUZZ_CHECK(value == 0, "MC{}_STATUS took {:#x}", (msr - kMsrMc0Ctl) / 4, value);
    } else if (mc_bank && (msr - kMsrMc0Ctl) % 4 == 0) {
      FUZZ_CHECK(value == 0 || (value | 0x401) == ~uint64_t{0}, "MC{}_CTL took {:#x}", (msr - kMsrMc0Ctl) / 4, value);
    } else if (mtrr_var) {
      FUZZ_CHECK(!(value & ~low_bits(cpu.maxphyaddr)), "MTRR {:#x} took {:#x} past MAXPHYADDR {}", msr, value,
                 cpu.maxphyaddr);
      if (msr % 2 == 0) FUZZ_CHECK(is_memory_type(value & 0xff), "PHYSBASE {:#x} type", value);
    } else if (mtrr_fixed) {
      for (unsigned i = 0; i < 8; ++i) FUZZ_CHECK(is_memory_type((value >> (8 * i)) & 0xff), "fixed MTRR {:#x}", value);
    } else if (msr == kMsrMtrrDefType) {
      FUZZ_CHECK(is_memory_type(value & 0xff) && !(value & ~uint64_t{0xcff}), "MTRR_DEF_TYPE took {:#x}", value);
    } else if (msr == kMsrVmHsavePa) {
      FUZZ_CHECK(!(value & 0xfff) && !(value & ~low_bits(cpu.maxphyaddr)), "VM_HSAVE_PA took {:#x}", value);
    }
    FUZZ_CHECK(after == want, "WRMSR {:#x} <- {:#x} reads back {}", msr, value,
               after ? fmt::format("{:#x}", *after) : std::string("#GP"));
    // The K7 counters alias core counters 0-3 on AMD.
    if (cpu.amd && msr >= kMsrK7PerfCtl0 && msr < kMsrK7PerfCtr0 + 4) {
      const uint32_t n = (msr - kMsrK7PerfCtl0) % 4, ctr = msr >= kMsrK7PerfCtr0;
      if (msrs.exists(kMsrF15hPerfCtl0 + 2 * n + ctr))
        FUZZ_CHECK(msrs.read(kMsrF15hPerfCtl0 + 2 * n + ctr, vtsc) == after, "K7 counter alias {:#x}", msr);
    }
  }
  return 0;
}
