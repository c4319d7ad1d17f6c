// SPDX-License-Identifier: GPL-2.0-or-later
// A vCPU's state for snapshots (Vcpu::save_state, emu/machine_snapshot.h).
//
// The CPU state is the engine's own, byte for byte: the uc_context without
// Unicorn's header (QEMU's CPUX86State up to end_reset_fields: registers,
// descriptor caches, control registers, MSRs, x87/SSE, the hidden flags,
// the exception in flight). Unicorn's register API would miss the hidden
// parts (a descriptor cache whose GDT entry changed since, the STI shadow).
// Those bytes are only meaningful to the same engine build, which the
// snapshot file checks.
//
// Left out, because a fresh engine rebuilds them as it runs: translated
// code, the TLB, decoded blocks and their trap sites (all derived from guest
// memory and the CPU state), and what a run keeps for itself (the loop
// watch restarts with every run, the counter's running fields). The
// debugger's breakpoints and watches are the debugger's: it sets them again.
// Left out too, as what the engine's CPU model gives: cr4_settable and
// maxphyaddr, asked of CPUID once (describe_cpuid, which charges nothing).
//
// Known limits: hardware breakpoints the guest armed in DR7 are not armed
// again in the resumed engine (QEMU arms them when DR7 is written); code
// rewritten in place into a block with the same start
// and size keeps its old decoding until flush_translations (vcpu_engine.h);
// a resumed vCPU decodes the new code at once.
#include <array>
#include <utility>

#include "base/state_archive.h"
#include "emu/vcpu_engine.h"

namespace topolab {

using namespace vcpu_internal;

namespace {

// The host's own values inside the CPU state, which a snapshot neither
// keeps (they would make two snapshots of one state differ) nor restores
// (they would point into another process): QEMU's pointers to the
// breakpoint or watchpoint objects it made for DR0-DR3 (a union of four
// pointers right in front of old_exception in QEMU 5.0's CPUX86State), and
// the last field, Unicorn's `retaddr` (a helper's host return address).
// The probe that finds old_exception (engine_state_offsets) must have found
// it, or no guest exception could have been delivered either.
std::array<std::pair<size_t, size_t>, 2> host_ranges(uc_engine* uc) {
  constexpr size_t kPointers = 4 * sizeof(void*);
  const std::optional<EngineStateOffsets> offsets = engine_state_offsets();
  if (!offsets) throw std::runtime_error("unicorn: the engine state probe failed: no snapshot of this engine");
  const UcContext context(uc);
  const size_t size = context.cpu_state(uc).size(), header = uc_context_size(uc) - size;
  const size_t old_exception = offsets->old_exception - header;
  return {{{old_exception - kPointers, old_exception}, {size - sizeof(uintptr_t), size}}};
}

}  // namespace

template <class Archive>
void UnicornVcpu::Engine::serialize_state(Archive& ar) {
  ar(*counter, pauses_retired, pause_loop, spin_snapshot, loop_watch_schedule, moving_loops);
  ar(nmi_blocked, watch_interrupt_window, shadow, waits_for_sipi, known_cs.selector, known_cs.base);
  ar(exception_in_flight);
  // Not a cache: learning whether IA32_TSC_AUX exists reads it through the
  // host, which charges the guest an MSR exit (rdtscp_hooked), so a resumed
  // vCPU that asked again would run 800 ns late from its next RDTSCP on.
  ar(tsc_aux_known, tsc_aux_present);
}

namespace {

// What one vCPU's snapshot holds, in order: the CPU state's bytes, the
// open-bus windows, then the engine's own fields (a template: the engine's
// type is UnicornVcpu's private business).
template <class Engine>
struct VcpuStateRecord {
  std::string& cpu_bytes;
  std::set<uint64_t>& open_bus;
  Engine& engine;
  template <class Archive>
  void serialize(Archive& ar) {
    ar(cpu_bytes, open_bus);
    engine.serialize_state(ar);
  }
};

}  // namespace

std::string UnicornVcpu::save_state() const {
  Engine& e = *engine_;
  const UcContext context(e.uc);
  const std::span<const uint8_t> cpu = context.cpu_state(e.uc);
  std::string cpu_bytes(cpu.begin(), cpu.end());
  for (const auto& [begin, end] : host_ranges(e.uc)) std::fill(cpu_bytes.begin() + begin, cpu_bytes.begin() + end, 0);
  std::set<uint64_t> open_bus = e.memory_map->open_bus_windows();

  VcpuStateRecord<Engine> record{cpu_bytes, open_bus, e};
  return save_state_bytes(record);
}

void UnicornVcpu::load_state(std::string_view bytes) {
  Engine& e = *engine_;
  std::string cpu_bytes;
  std::set<uint64_t> open_bus;
  VcpuStateRecord<Engine> record{cpu_bytes, open_bus, e};
  load_state_bytes(record, bytes);

  UcContext context(e.uc);
  const std::span<uint8_t> cpu = context.cpu_state(e.uc);
  if (cpu_bytes.size() != cpu.size())
    throw std::runtime_error(fmt::format("the saved CPU state has {} bytes, this engine's {}", cpu_bytes.size(),
                                         cpu.size()));
  std::string live(cpu.begin(), cpu.end());
  for (const auto& [begin, end] : host_ranges(e.uc)) std::copy(live.begin() + begin, live.begin() + end, cpu_bytes.begin() + begin);
  std::copy(cpu_bytes.begin(), cpu_bytes.end(), cpu.begin());
  context.restore_into(e.uc);
  for (uint64_t address : open_bus) e.memory_map->map_open_bus(address);
  e.update_block_hook();
}

}  // namespace topolab
