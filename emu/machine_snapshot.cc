// SPDX-License-Identifier: GPL-2.0-or-later
#include "emu/machine_snapshot.h"

#include <algorithm>
#include <array>
#include <cstring>

#include <fmt/format.h>
#include <xxhash.h>

#include "base/errors.h"
#include "base/state_archive.h"
#include "emu/machine.h"
#include "emu/ram_pages.h"
#include "emu/unicorn_vcpu.h"

namespace topolab {
namespace {

constexpr uint64_t kPage = ram_pages::kPageBytes;
std::string hex64(uint64_t value) { return fmt::format("{:016x}", value); }

std::string cpuid_digest(const Machine& machine) {
  XXH3_state_t* state = XXH3_createState();
  XXH3_64bits_reset(state);
  for (unsigned i = 0; i < machine.vcpu_count(); ++i)
    for (const CpuidModel::Entry& e : machine.cpuid().enumerate(i)) {
      const std::array<uint32_t, 6> words = {e.leaf, e.subleaf, e.regs.eax, e.regs.ebx, e.regs.ecx, e.regs.edx};
      XXH3_64bits_update(state, words.data(), sizeof words);
    }
  const uint64_t digest = XXH3_64bits_digest(state);
  XXH3_freeState(state);
  return hex64(digest);
}

std::string devices_of(const MachineConfig& config) {
  std::string names;
  for (const PlatformDeviceInfo& info : kPlatformDevices)
    if (config.devices.has(info.device)) names += fmt::format("{}{}", names.empty() ? "" : ",", info.qemu_name);
  return names;
}

}  // namespace

MachineFingerprint machine_fingerprint(const Machine& machine) {
  const MachineConfig& c = machine.config();
  const GuestRam& ram = const_cast<Machine&>(machine).ram();
  return {
      {"build", fmt::format("topolab on Unicorn {}, snapshot format {}", engine_version(), kSnapshotFormat)},
      {"topology", c.topology.describe()},
      {"-cpu", c.cpu.arg},
      {"-machine", c.machine_options.arg},
      {"-m", fmt::format("{} MiB", c.ram_mib)},
      {"command line", c.append},
      {"time limit", fmt::format("{} s", c.time_limit_seconds)},
      {"quantum", fmt::format("{}", c.quantum)},
      {"cost model", c.cost.to_string()},
      {"spin skipping", c.spin_skip ? "on" : "off"},
      {"clocks", !c.synced_clocks ? "by image" : *c.synced_clocks ? "synced" : "per vCPU"},
      {"devices", devices_of(c)},
      {"firmware state", c.legacy_bios ? "SeaBIOS's (the QEMU front)" : "none"},
      {"CPUID", cpuid_digest(machine)},
      {"memory at start (image, initrd, tables)", hex64(ram_pages::digest(ram))},
  };
}

std::string fingerprint_difference(const MachineFingerprint& snapshot, const MachineFingerprint& now) {
  for (size_t i = 0; i < std::max(snapshot.size(), now.size()); ++i) {
    const std::string name = i < snapshot.size() ? snapshot[i].first : now[i].first;
    const std::string theirs = i < snapshot.size() && snapshot[i].first == name ? snapshot[i].second : "?";
    const std::string ours = i < now.size() && now[i].first == name ? now[i].second : "?";
    if (theirs != ours) return fmt::format("{}: the snapshot's \"{}\", this run's \"{}\"", name, theirs, ours);
  }
  return "";
}

MachineSnapshot take_snapshot(Machine& machine, MachineFingerprint fingerprint, std::string output) {
  MachineSnapshot s{.fingerprint = std::move(fingerprint),
                    .at_ns = machine.virtual_time(),
                    .instructions = machine.instructions(),
                    .output = std::move(output),
                    .state = save_state_bytes(machine),
                    .pages = {}};
  const GuestRam& ram = machine.ram();
  for (const uint64_t address : ram_pages::nonzero_pages(ram))
    s.pages.emplace_back(address / kPage, std::string(reinterpret_cast<const char*>(ram.data() + address), kPage));
  return s;
}

void restore_snapshot(Machine& machine, const MachineSnapshot& snapshot) {
  GuestRam& ram = machine.ram();
  for (const auto& [page, bytes] : snapshot.pages)
    if (bytes.size() != kPage || page >= ram.top() / kPage || !ram.is_ram(page * kPage, kPage))
      throw InputError(fmt::format("the snapshot holds a page at {:#x} that this machine's RAM does not", page * kPage));
  try {
    load_state_bytes(machine, snapshot.state);
  } catch (const std::exception& e) {
    throw InputError(fmt::format("the snapshot's machine state does not fit this build ({})", one_line(e.what())));
  }
  ram.discard();
  for (const auto& [page, bytes] : snapshot.pages) std::memcpy(ram.data() + page * kPage, bytes.data(), kPage);
}

}  // namespace topolab
