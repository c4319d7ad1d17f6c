// SPDX-License-Identifier: GPL-2.0-or-later
// One vCPU on one Unicorn 2.1.3 engine: construction, MMIO windows and the
// public face. The inside is described in vcpu_engine.h.
#include "emu/vcpu_engine.h"

namespace topolab {

const char* to_string(VcpuExit::Reason reason) {
  switch (reason) {
    case VcpuExit::Reason::QuantumEnd: return "quantum end";
    case VcpuExit::Reason::StopRequested: return "stop requested";
    case VcpuExit::Reason::Halt: return "halt";
    case VcpuExit::Reason::Monitor: return "monitor";
    case VcpuExit::Reason::Mwait: return "mwait";
    case VcpuExit::Reason::TripleFault: return "triple fault";
    case VcpuExit::Reason::Unsupported: return "unsupported";
    case VcpuExit::Reason::PauseLoop: return "pause loop";
  }
  return "unknown";
}

UnicornVcpu::Engine::Engine(unsigned index, GuestRam& ram, VcpuHost& host, EngineCpuModel engine_cpu)
    : index(index), engine_cpu(engine_cpu), ram(ram), host(host), blocks(ram.regions().front().end()), code_map(code_map_for(ram)) {
  // Before this engine exists: the probe runs engines of its own, which
  // must never happen inside one of this engine's callbacks.
  engine_state_offsets();
  check(uc_open(UC_ARCH_X86, UC_MODE_64, &uc), "uc_open");
  try {
    // Before the engine initialises itself (its first map): QEMU's default
    // translation buffer is 1 GiB of address space per engine, 1 TiB for
    // 1,024 vCPUs, which a host with strict overcommit refuses. The guests'
    // translated code is far smaller; a full buffer is flushed and refilled.
    check(uc_ctl_set_tcg_buffer_size(uc, kTranslationBufferBytes), "uc_ctl_set_tcg_buffer_size");
    // Before any memory is mapped, as uc_ctl_set_cpu_model requires. The
    // feature words survive the context copies below (a unit test shows it).
    const int model = engine_cpu == EngineCpuModel::SkylakeServer ? UC_CPU_X86_SKYLAKE_SERVER
                      : engine_cpu == EngineCpuModel::Epyc        ? UC_CPU_X86_EPYC
                                                                  : UC_CPU_X86_QEMU64;
    check(uc_ctl_set_cpu_model(uc, model), "uc_ctl_set_cpu_model");
    map_guest_ram(uc, ram, "uc_mem_map_ptr");
    memory_map.emplace(uc, ram, *this);
    sites.emplace(uc, this);
    counter.emplace(uc);
    // An empty set of exit addresses: runs end only where we stop them. With
    // uc_emu_start's `until` instead, Unicorn invalidates the translation at
    // that address after every run, which means translating it, and an
    // address no guest can reach faults inside the engine (#GP for a
    // non-canonical one, #PF for an unmapped one): an exception nobody sees
    // that QEMU's double-fault check then counts as in flight
    // (docs/unicorn.md; the exceptions testcases raise #GP after #GP).
    check(uc_ctl_exits_enable(uc), "uc_ctl_exits_enable");
    // The engine counts instructions in its generated code (topolab's
    // patches: docs/unicorn.md), shows each new block to on_translate, and
    // calls the block hook only while update_block_hook switches it on.
    check(uc_topolab_budget_enable(uc), "uc_topolab_budget_enable");
    uc_topolab_set_translate_hook(uc, on_translate, this);
    uc_topolab_set_block_hook(uc, false);
    uc_topolab_set_code_hooks(uc, on_code_page, on_store, this);
    uc_hook h;
    check(uc_hook_add(uc, &h, UC_HOOK_BLOCK, reinterpret_cast<void*>(on_block), this, 1, 0), "block hook");
    check(uc_hook_add(uc, &h, UC_HOOK_INSN, reinterpret_cast<void*>(on_cpuid), this, 1, 0, UC_X86_INS_CPUID),
          "cpuid hook");
    check(uc_hook_add(uc, &h, UC_HOOK_INSN, reinterpret_cast<void*>(on_rdtsc), this, 1, 0, UC_X86_INS_RDTSC),
          "rdtsc hook");
    check(uc_hook_add(uc, &h, UC_HOOK_INSN, reinterpret_cast<void*>(on_rdtscp), this, 1, 0, UC_X86_INS_RDTSCP),
          "rdtscp hook");
    check(uc_hook_add(uc, &h, UC_HOOK_INSN, reinterpret_cast<void*>(on_rdmsr), this, 1, 0, UC_X86_INS_RDMSR),
          "rdmsr hook");
    check(uc_hook_add(uc, &h, UC_HOOK_INSN, reinterpret_cast<void*>(on_wrmsr), this, 1, 0, UC_X86_INS_WRMSR),
          "wrmsr hook");
    check(uc_hook_add(uc, &h, UC_HOOK_INSN, reinterpret_cast<void*>(on_port_in), this, 1, 0, UC_X86_INS_IN),
          "in hook");
    check(uc_hook_add(uc, &h, UC_HOOK_INSN, reinterpret_cast<void*>(on_port_out), this, 1, 0, UC_X86_INS_OUT),
          "out hook");
    check(uc_hook_add(uc, &h, UC_HOOK_INTR, reinterpret_cast<void*>(on_interrupt), this, 1, 0), "intr hook");
    // Only outside RAM, where every unmapped physical address lies (MMIO
    // windows and open bus are in the gaps and above the top), one hook per
    // range (ranges_without_ram). A hook whose range covers
    // RAM keeps every store to it on the slow path: Unicorn 2.1.3's
    // notdirty_write marks a TLB entry dirty only for a page mapped without
    // execute permission and with no memory hook (UNMAPPED ones included)
    // over its physical address (qemu/accel/tcg/cputlb.c, uc_mem_hook_installed).
    // With the hook over all addresses, a store loop on XD data pages ran at
    // 0.94x of the same loop on executable ones; with it above RAM, 2.9x
    // (tools/bench_compute, compute_loop64 nx=on against nx=off).
    for (const auto& [first, last] : ranges_without_ram(ram))
      check(uc_hook_add(uc, &h, UC_HOOK_MEM_UNMAPPED, reinterpret_cast<void*>(on_unmapped), this, first, last),
            "unmapped hook");
    code_slot = code_map->join();
  } catch (...) {
    uc_close(uc);
    throw;
  }
}

UnicornVcpu::Engine::~Engine() {
  code_map->leave(code_slot);
  scratch_context.reset();  // before its engine closes
  uc_close(uc);
}

// ---------------------------------------------------------------------------
// Code coherence with the other engines on this RAM (emu/vcpu_code_map.h).
// Called inside the engine: they only record, and never throw.

void UnicornVcpu::Engine::on_code_page(uc_engine*, uint64_t ram_addr, void* user) {
  auto& e = *static_cast<Engine*>(user);
  if (ram_addr >= e.ram.total_bytes()) return;  // an open-bus page: this engine's own
  e.guarded([&] { e.code_map->code_added(e.code_slot, ram_addr >> CodeMap::kPageBits); });
}

bool UnicornVcpu::Engine::on_store(uc_engine*, uint64_t ram_addr, uint32_t size, void* user) {
  auto& e = *static_cast<Engine*>(user);
  if (ram_addr >= e.ram.total_bytes() || size == 0) return false;
  const uint64_t last = std::min(ram_addr + size, e.ram.total_bytes()) - 1;
  e.guarded([&] {
    for (uint64_t page = ram_addr >> CodeMap::kPageBits; page <= last >> CodeMap::kPageBits; ++page)
      e.code_map->stored(e.code_slot, page);
  });
  // The CodeMap forgot every other engine's code there: the page's stores
  // may take the fast path until one has code there again and protects it.
  return false;
}

void UnicornVcpu::Engine::apply_code_work() {
  const CodeMap::Work work = code_map->take_work(code_slot);
  for (uint64_t page : work.protect) uc_topolab_protect_code(uc, page << CodeMap::kPageBits);
  for (uint64_t page : work.invalidate)
    uc_topolab_invalidate_code(uc, page << CodeMap::kPageBits, uint64_t{1} << CodeMap::kPageBits);
}

// ---------------------------------------------------------------------------
// Devices and open bus, called from the memory map's callbacks inside the
// engine (emu/vcpu_memory_map.h).

uint64_t UnicornVcpu::Engine::device_read(MmioHandler& device, uint64_t offset, unsigned size) {
  // A device register may change with time, into any register: no spin,
  // and no idle loop.
  pause_loop.forget();
  self_loop.forget();
  loop_watch.saw_effect();
  return guarded<uint64_t>([&] { return device.read(offset, size); });
}

void UnicornVcpu::Engine::device_write(MmioHandler& device, uint64_t offset, unsigned size, uint64_t value) {
  loop_watch.saw_effect();
  guarded([&] { device.write(offset, size, value); });
}

void UnicornVcpu::Engine::open_bus_access(uint64_t physical, unsigned size, bool write) {
  loop_watch.saw_effect();  // counted in the report: a skipped turn would not be
  guarded([&] { host.open_bus_access(physical, size, write); });
}

// ---------------------------------------------------------------------------
// Vcpu: the public face.

std::optional<std::pair<size_t, size_t>> vcpu_probe_offsets_for_tests() {
  const std::optional<EngineStateOffsets> o = engine_state_offsets();
  if (!o) return std::nullopt;
  return std::pair{o->error_code, o->old_exception};
}

std::string engine_version() {
  unsigned major = 0, minor = 0;
  unsigned combined = uc_version(&major, &minor);
  const unsigned patches = TOPOLAB_UNICORN_PATCH_COUNT;
  return fmt::format("{}.{}.{} + {} topolab patch{}{}", major, minor, (combined >> 8) & 0xFF, patches,
                     patches == 1 ? "" : "es", patches ? fmt::format(" ({})", TOPOLAB_UNICORN_PATCH_NAMES) : "");
}

UnicornVcpu::UnicornVcpu(unsigned index, GuestRam& ram, VcpuHost& host, EngineCpuModel engine_cpu)
    : engine_(std::make_unique<Engine>(index, ram, host, engine_cpu)) {}

UnicornVcpu::~UnicornVcpu() = default;

VcpuFactory unicorn_vcpu_factory() {
  return [](unsigned index, GuestRam& ram, VcpuHost& host, EngineCpuModel cpu) -> std::unique_ptr<Vcpu> {
    return std::make_unique<UnicornVcpu>(index, ram, host, cpu);
  };
}

void UnicornVcpu::enter_multiboot(uint32_t entry, uint32_t eax, uint32_t ebx) { engine_->enter_multiboot(entry, eax, ebx); }

void UnicornVcpu::enter_linux32(uint32_t entry, uint32_t boot_params, uint32_t gdt, uint16_t gdt_limit) {
  engine_->enter_linux32(entry, boot_params, gdt, gdt_limit);
}

VcpuExit UnicornVcpu::run(uint64_t budget) { return engine_->run(budget); }

void UnicornVcpu::reset_for_init() { engine_->reset_for_init(); }

void UnicornVcpu::start_at_sipi(uint8_t vector) { engine_->start_in_real_mode(static_cast<uint16_t>(vector << 8), 0); }
void UnicornVcpu::start_in_real_mode(uint16_t selector, uint16_t ip) { engine_->start_in_real_mode(selector, ip); }

bool UnicornVcpu::waiting_for_sipi() const { return engine_->waits_for_sipi; }

Injection UnicornVcpu::inject_interrupt(uint8_t vector) { return engine_->inject(x86::Event::external(vector)); }

Injection UnicornVcpu::inject_nmi() {
  Injection injection = engine_->inject(x86::Event::nmi());
  if (injection) engine_->nmi_blocked = true;
  return injection;
}

bool UnicornVcpu::nmi_blocked() const { return engine_->nmi_blocked; }
bool UnicornVcpu::in_interrupt_shadow() const { return engine_->shadow; }

void UnicornVcpu::stop_when_interruptible(bool on) {
  engine_->watch_interrupt_window = on;
  engine_->update_block_hook();
}

Injection UnicornVcpu::inject_exception(uint8_t vector, std::optional<uint32_t> error_code) {
  x86::Event event{.kind = x86::EventKind::kHardwareException, .vector = vector, .error_code = error_code.value_or(0)};
  return engine_->inject(event);
}

bool UnicornVcpu::interrupt_window_open() const {
  return !engine_->waits_for_sipi && !engine_->shadow && (engine_->read_reg(UC_X86_REG_RFLAGS) & x86::kFlagIf);
}

void UnicornVcpu::map_mmio(uint64_t base, uint64_t size, MmioHandler& handler) {
  engine_->memory_map->map_device(base, size, handler);
}

void UnicornVcpu::unmap_mmio(uint64_t base, uint64_t size) { engine_->memory_map->unmap_device(base, size); }

void UnicornVcpu::set_cr8(uint64_t value) { engine_->write_reg(UC_X86_REG_CR8, value); }

// Taken at the next block start by the block hook, which this switches on.
void UnicornVcpu::request_stop() {
  engine_->stop_requested = true;
  engine_->update_block_hook();
}

void UnicornVcpu::retire_emulated_instruction() { engine_->retire_emulated_instruction(); }

uint64_t UnicornVcpu::pauses() const { return engine_->pauses_retired; }
void UnicornVcpu::set_pause_loop_exiting(std::optional<PauseLoopExiting> ple) { engine_->pause_loop.configure(ple); }

uint64_t UnicornVcpu::engine_entries() const { return engine_->counter->entries(); }

uint64_t UnicornVcpu::instructions() const {
  return engine_->counter->instructions();
}

void UnicornVcpu::set_trace(std::FILE* out) { engine_->set_trace(out); }

void UnicornVcpu::flush_translations() { engine_->flush_translations(); }

unsigned UnicornVcpu::index() const { return engine_->index; }

uint64_t UnicornVcpu::cr4() const { return engine_->read_reg(UC_X86_REG_CR4); }

VcpuState UnicornVcpu::state() const {
  const Engine& e = *engine_;
  const auto r = [&](int reg) { return e.read_reg(reg); };
  const auto selector = [&](int reg) { return static_cast<uint16_t>(e.read_reg(reg)); };
  return {
      .rax = r(UC_X86_REG_RAX), .rbx = r(UC_X86_REG_RBX), .rcx = r(UC_X86_REG_RCX), .rdx = r(UC_X86_REG_RDX),
      .rsi = r(UC_X86_REG_RSI), .rdi = r(UC_X86_REG_RDI), .rbp = r(UC_X86_REG_RBP), .rsp = r(UC_X86_REG_RSP),
      .r8 = r(UC_X86_REG_R8),   .r9 = r(UC_X86_REG_R9),   .r10 = r(UC_X86_REG_R10), .r11 = r(UC_X86_REG_R11),
      .r12 = r(UC_X86_REG_R12), .r13 = r(UC_X86_REG_R13), .r14 = r(UC_X86_REG_R14), .r15 = r(UC_X86_REG_R15),
      .rip = r(UC_X86_REG_RIP), .rflags = r(UC_X86_REG_RFLAGS),
      .cr0 = r(UC_X86_REG_CR0), .cr3 = r(UC_X86_REG_CR3), .cr4 = r(UC_X86_REG_CR4), .efer = e.read_cpu_msr(x86::kMsrEfer),
      .cs = selector(UC_X86_REG_CS), .ds = selector(UC_X86_REG_DS), .es = selector(UC_X86_REG_ES),
      .ss = selector(UC_X86_REG_SS),
  };
}


}  // namespace topolab
