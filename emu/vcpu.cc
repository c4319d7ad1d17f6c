// One vCPU on one Unicorn 2.0.1 engine. Every workaround here rests on a
// behaviour recorded in ../shared/UNICORN_NOTES.md ("the notes") and is
// proven by a test in vcpu_test.cc.
//
// How run() works
// - uc_emu_start gets an `until` address no guest can execute and never a
//   `count` (it runs ~7x slower and flushes all code when it changes). So
//   Unicorn returns OK only when we stopped it, or at HLT.
// - A UC_HOOK_BLOCK callback counts instructions: each new translated block
//   is decoded once with Capstone and cached by start address. The hook
//   stops the run, exactly, before a block that would overrun the budget.
// - IN/OUT and CPUID reach VcpuHost from Unicorn's instruction hooks.
//   RDMSR, WRMSR, RDTSC and RDTSCP, which Unicorn cannot hook (and would
//   run wrongly), get a one-instruction UC_HOOK_CODE that stops the run in
//   front of them; run() then emulates them on the host side and resumes.
//
// Counting
//   instructions() = instructions retired before the one executing now.
//   `retired` holds the count up to the start of the current block and
//   `pending` the current block's size in instructions; the next block hook
//   adds it. An exit in the middle of a block adds only the instructions
//   before RIP, found in the block's decoded offsets.
//
// Not supported
// - MONITOR/MWAIT: Unicorn raises #UD, so run() returns InvalidOpcode at
//   the instruction (the notes describe how the machine can emulate it).
// - Code segments with a non-zero base (real mode after SIPI): RIP and the
//   linear addresses Unicorn reports to hooks are treated as equal.
// - A read or write of unmapped memory is reported at the start of its block
//   (Unicorn 2.0.1 does not restore RIP for it; see exit_for_unmapped).
// - Guest code rewritten in place into a block with the same start and size
//   keeps the old decoded instruction count until flush_translations().
// - A store into the block that is running: Unicorn abandons the block at
//   the store and runs it again from there, so the instructions of the block
//   from the store on are counted twice (and traced twice).
#include "emu/vcpu.h"

#include <capstone/capstone.h>
#include <fmt/format.h>
#include <unicorn/unicorn.h>

#include <algorithm>
#include <array>
#include <exception>
#include <limits>
#include <span>
#include <stdexcept>
#include <unordered_map>
#include <utility>
#include <vector>

namespace topolab {
namespace {

// uc_emu_start's `until`: non-canonical in long mode and above 4 GiB in
// every other mode, so no guest instruction is ever there.
constexpr uint64_t kNeverExecuted = 0x8000'0000'0000'0000;
constexpr uint64_t kNoAddress = ~uint64_t{0};
constexpr uint64_t kPageSize = 4096;

// SDM Vol. 3A 2.5 (CR0) and Vol. 4 (MSR numbers).
constexpr uint64_t kCr0ProtectionEnable = 1u << 0;
constexpr uint64_t kCr0Paging = 1u << 31;
constexpr uint64_t kEferLongModeActive = 1u << 10;
constexpr uint32_t kMsrSysenterCs = 0x174;
constexpr uint32_t kMsrSysenterEsp = 0x175;
constexpr uint32_t kMsrSysenterEip = 0x176;
constexpr uint32_t kMsrPat = 0x277;
constexpr uint32_t kMsrEfer = 0xC000'0080;
constexpr uint32_t kMsrStar = 0xC000'0081;
constexpr uint32_t kMsrLstar = 0xC000'0082;
constexpr uint32_t kMsrCstar = 0xC000'0083;
constexpr uint32_t kMsrFmask = 0xC000'0084;
constexpr uint32_t kMsrFsBase = 0xC000'0100;
constexpr uint32_t kMsrGsBase = 0xC000'0101;
constexpr uint32_t kMsrKernelGsBase = 0xC000'0102;
constexpr uint32_t kMsrTscAux = 0xC000'0103;

constexpr uint8_t kHltOpcode = 0xF4;
constexpr uint32_t kPageFaultVector = 14;
// EFLAGS bit 1 is reserved and always 1 (SDM Vol. 1 3.4.3); IF = 0.
constexpr uint64_t kRflagsInterruptsOff = 0x2;

// Flat 4 GiB descriptors, base 0, G = 1, DPL 0 (SDM Vol. 3A 3.4.5): a 32-bit
// (D = 1) execute/read code segment and a read/write data segment.
constexpr uint64_t kFlatCode32Descriptor = 0x00CF'9A00'0000'FFFF;
constexpr uint64_t kFlatDataDescriptor = 0x00CF'9200'0000'FFFF;
constexpr uint16_t kMultibootCodeSelector = 0x08;
constexpr uint16_t kMultibootDataSelector = 0x10;

void check(uc_err err, const char* what) {
  if (err != UC_ERR_OK) throw std::runtime_error(fmt::format("unicorn: {}: {}", what, uc_strerror(err)));
}

// MSRs that are CPU state Unicorn keeps (mode, segment bases, SYSCALL and
// SYSENTER targets, PAT). Every RDMSR and WRMSR is trapped, so these are
// handed to Unicorn, with no host call, as KVM passes them through; without
// it no guest could set EFER.LME and enter long mode.
bool is_cpu_state_msr(uint32_t msr) {
  switch (msr) {
    case kMsrSysenterCs: case kMsrSysenterEsp: case kMsrSysenterEip: case kMsrPat:
    case kMsrEfer: case kMsrStar: case kMsrLstar: case kMsrCstar: case kMsrFmask:
    case kMsrFsBase: case kMsrGsBase: case kMsrKernelGsBase:
      return true;
    default:
      return false;
  }
}

const char* exception_name(uint32_t vector) {
  static constexpr std::array<const char*, 22> kNames = {
      "#DE", "#DB", "NMI", "#BP", "#OF", "#BR", "#UD", "#NM", "#DF", "coprocessor overrun", "#TS",
      "#NP", "#SS", "#GP", "#PF", "reserved", "#MF", "#AC", "#MC", "#XM", "#VE", "#CP"};
  return vector < kNames.size() ? kNames[vector] : "interrupt";
}

// The default operand and address size of the code being run, which is what
// Capstone needs to decode it (CS.D and CS.L, SDM Vol. 3A 3.4.5).
enum class CodeSize : uint8_t { Bits16, Bits32, Bits64 };
constexpr std::array kCodeSizes = {CodeSize::Bits16, CodeSize::Bits32, CodeSize::Bits64};

cs_mode capstone_mode(CodeSize size) {
  switch (size) {
    case CodeSize::Bits16: return CS_MODE_16;
    case CodeSize::Bits32: return CS_MODE_32;
    case CodeSize::Bits64: return CS_MODE_64;
  }
  throw std::logic_error("unknown code size");
}

// Instructions Unicorn would run wrongly; run() emulates them instead.
enum class TrapKind : uint8_t { Rdmsr, Wrmsr, Rdtsc, Rdtscp };

std::optional<TrapKind> trap_kind(unsigned capstone_id) {
  switch (capstone_id) {
    case X86_INS_RDMSR: return TrapKind::Rdmsr;
    case X86_INS_WRMSR: return TrapKind::Wrmsr;
    case X86_INS_RDTSC: return TrapKind::Rdtsc;
    case X86_INS_RDTSCP: return TrapKind::Rdtscp;
    default: return std::nullopt;
  }
}

// The opcode bytes each trapped instruction ends with (SDM Vol. 2).
std::span<const uint8_t> trap_opcode(TrapKind kind) {
  static constexpr uint8_t kRdmsr[] = {0x0F, 0x32}, kWrmsr[] = {0x0F, 0x30}, kRdtsc[] = {0x0F, 0x31},
                           kRdtscp[] = {0x0F, 0x01, 0xF9};
  switch (kind) {
    case TrapKind::Rdmsr: return kRdmsr;
    case TrapKind::Wrmsr: return kWrmsr;
    case TrapKind::Rdtsc: return kRdtsc;
    case TrapKind::Rdtscp: return kRdtscp;
  }
  throw std::logic_error("unknown trap kind");
}

// Instructions whose Unicorn hook calls VcpuHost in the middle of a block.
bool calls_host_mid_block(unsigned capstone_id) {
  switch (capstone_id) {
    case X86_INS_IN: case X86_INS_INSB: case X86_INS_INSW: case X86_INS_INSD:
    case X86_INS_OUT: case X86_INS_OUTSB: case X86_INS_OUTSW: case X86_INS_OUTSD:
    case X86_INS_CPUID:
      return true;
    default:
      return false;
  }
}

bool is_software_interrupt(unsigned capstone_id) {
  return capstone_id == X86_INS_INT3 || capstone_id == X86_INS_INT || capstone_id == X86_INS_INTO ||
         capstone_id == X86_INS_INT1;
}

// REP/REPE/REPNE in front of INS, OUTS, MOVS, CMPS, STOS, LODS or SCAS
// (SDM Vol. 2 "REP/REPE/REPZ/REPNE/REPNZ"). Capstone without detail mode
// does not report prefixes, so the bytes are read directly.
bool is_rep_string(std::span<const uint8_t> bytes, CodeSize size) {
  bool rep = false;
  size_t i = 0;
  for (; i < bytes.size(); ++i) {
    const uint8_t b = bytes[i];
    if (b == 0xF2 || b == 0xF3) {
      rep = true;
    } else if (!(b == 0x66 || b == 0x67 || b == 0xF0 || b == 0x2E || b == 0x36 || b == 0x3E || b == 0x26 ||
                 b == 0x64 || b == 0x65 || (size == CodeSize::Bits64 && (b & 0xF0) == 0x40))) {
      break;
    }
  }
  if (!rep || i == bytes.size()) return false;
  const uint8_t op = bytes[i];
  return (op >= 0x6C && op <= 0x6F) || (op >= 0xA4 && op <= 0xA7) || (op >= 0xAA && op <= 0xAF);
}

struct TrapSite {
  uint64_t address;
  TrapKind kind;
  uint8_t length;
};

// One translated block as Capstone sees it.
struct DecodedBlock {
  uint64_t start = 0;
  uint32_t size = 0;
  uint32_t count = 0;  // instructions retired when the block runs to its end
  CodeSize code_size = CodeSize::Bits32;
  bool fully_decoded = true;  // false: Capstone stopped early; the rest counts as one
  bool ends_with_software_interrupt = false;
  uint64_t rep_string_tail = kNoAddress;  // address of a final REP string instruction
  std::vector<uint16_t> offsets;          // instruction starts, from `start`
  std::vector<uint16_t> host_calls;       // indices of IN/OUT/INS/OUTS/CPUID, in order
  std::vector<TrapSite> traps;

  // Instructions of this block retired when execution stands at `rip`. A
  // `rip` outside the block means the block ran to its end and left.
  uint32_t instructions_before(uint64_t rip) const {
    if (rip < start || rip - start >= size) return count;
    const auto offset = static_cast<uint16_t>(rip - start);
    return static_cast<uint32_t>(std::lower_bound(offsets.begin(), offsets.end(), offset) - offsets.begin());
  }
  uint64_t address_of(uint32_t index) const { return start + offsets.at(index); }
  uint64_t end() const { return start + size; }
};

// Capstone, with one handle per code size.
class Disassembler {
 public:
  Disassembler() {
    for (CodeSize size : kCodeSizes) {
      Handle& h = handle(size);
      if (cs_open(CS_ARCH_X86, capstone_mode(size), &h.cs) != CS_ERR_OK)
        throw std::runtime_error("capstone: cannot open an x86 disassembler");
      h.insn = cs_malloc(h.cs);
    }
  }
  ~Disassembler() {
    for (Handle& h : handles_) {
      if (h.insn) cs_free(h.insn, 1);
      if (h.cs) cs_close(&h.cs);
    }
  }
  Disassembler(const Disassembler&) = delete;
  Disassembler& operator=(const Disassembler&) = delete;

  DecodedBlock decode_block(std::span<const uint8_t> code, uint64_t address, CodeSize size) {
    DecodedBlock block;
    block.start = address;
    block.size = static_cast<uint32_t>(code.size());
    block.code_size = size;
    Handle& h = handle(size);
    const uint8_t* bytes = code.data();
    size_t left = code.size();
    uint64_t at = address;
    while (left > 0) {
      const uint64_t insn_address = at;
      if (!cs_disasm_iter(h.cs, &bytes, &left, &at, h.insn)) {
        block.fully_decoded = false;
        block.offsets.push_back(static_cast<uint16_t>(insn_address - address));
        block.ends_with_software_interrupt = false;
        block.rep_string_tail = kNoAddress;
        break;
      }
      add_instruction(block, *h.insn, code.subspan(insn_address - address, h.insn->size));
    }
    block.count = static_cast<uint32_t>(block.offsets.size());
    return block;
  }

  // "mnemonic operands" of the instruction at the start of `code`.
  std::string describe(std::span<const uint8_t> code, uint64_t address, CodeSize size) {
    Handle& h = handle(size);
    const uint8_t* bytes = code.data();
    size_t left = code.size();
    if (!cs_disasm_iter(h.cs, &bytes, &left, &address, h.insn)) return "(does not decode)";
    return h.insn->op_str[0] ? fmt::format("{} {}", h.insn->mnemonic, h.insn->op_str) : h.insn->mnemonic;
  }

 private:
  struct Handle {
    csh cs = 0;
    cs_insn* insn = nullptr;
  };
  Handle& handle(CodeSize size) { return handles_[static_cast<size_t>(size)]; }

  static void add_instruction(DecodedBlock& block, const cs_insn& insn, std::span<const uint8_t> bytes) {
    const auto index = static_cast<uint16_t>(block.offsets.size());
    block.offsets.push_back(static_cast<uint16_t>(insn.address - block.start));
    if (calls_host_mid_block(insn.id)) block.host_calls.push_back(index);
    if (auto kind = trap_kind(insn.id)) block.traps.push_back({insn.address, *kind, static_cast<uint8_t>(insn.size)});
    block.ends_with_software_interrupt = is_software_interrupt(insn.id);
    block.rep_string_tail = is_rep_string(bytes, block.code_size) ? insn.address : kNoAddress;
  }

  std::array<Handle, kCodeSizes.size()> handles_;
};

// Decoded blocks by start address, in one lazily allocated table of 4 KiB
// slots per page of RAM: the block hook runs once per executed block, and
// this finds a block with three loads and no hashing. The table costs 8
// bytes per 4 KiB of RAM plus 32 KiB per page that holds code.
class BlockCache {
 public:
  explicit BlockCache(uint64_t ram_bytes) : pages_(ram_bytes / kPageSize) {}

  const DecodedBlock* find(uint64_t address, uint32_t size) const {
    const uint64_t page = address / kPageSize;
    if (page >= pages_.size() || !pages_[page]) return nullptr;
    const DecodedBlock* block = pages_[page]->slots[address % kPageSize].get();
    return block && block->size == size ? block : nullptr;
  }

  // Replaces any block cached at the same start (the code there changed).
  const DecodedBlock& insert(DecodedBlock block) {
    std::unique_ptr<Page>& page = pages_.at(block.start / kPageSize);
    if (!page) page = std::make_unique<Page>();
    auto& slot = page->slots[block.start % kPageSize];
    slot = std::make_unique<DecodedBlock>(std::move(block));
    return *slot;
  }

  void clear() {
    for (auto& page : pages_) page.reset();
  }

  // Addresses of the pages where some block starts.
  std::vector<uint64_t> code_pages() const {
    std::vector<uint64_t> addresses;
    for (uint64_t page = 0; page < pages_.size(); ++page)
      if (pages_[page]) addresses.push_back(page * kPageSize);
    return addresses;
  }

 private:
  struct Page {
    std::array<std::unique_ptr<DecodedBlock>, kPageSize> slots;
  };
  std::vector<std::unique_ptr<Page>> pages_;
};

// Owns a uc_engine for the length of a scope.
class UcHandle {
 public:
  explicit UcHandle(uc_mode mode) { check(uc_open(UC_ARCH_X86, mode, &uc_), "uc_open"); }
  ~UcHandle() { uc_close(uc_); }
  UcHandle(const UcHandle&) = delete;
  UcHandle& operator=(const UcHandle&) = delete;
  uc_engine* get() const { return uc_; }

 private:
  uc_engine* uc_ = nullptr;
};

// A saved CPU context (registers, descriptor caches, control registers and
// MSRs), owned for the length of a scope.
class UcContext {
 public:
  explicit UcContext(uc_engine* from) {
    check(uc_context_alloc(from, &context_), "uc_context_alloc");
    check(uc_context_save(from, context_), "uc_context_save");
  }
  ~UcContext() { uc_context_free(context_); }
  UcContext(const UcContext&) = delete;
  UcContext& operator=(const UcContext&) = delete;
  void restore_into(uc_engine* to) const { check(uc_context_restore(to, context_), "uc_context_restore"); }

 private:
  uc_context* context_ = nullptr;
};

VcpuExit exit_at(VcpuExit::Reason reason, uint64_t rip, std::string detail = {}) {
  VcpuExit exit;
  exit.reason = reason;
  exit.rip = rip;
  exit.detail = std::move(detail);
  return exit;
}

// Why the last uc_emu_start returned UC_ERR_OK, when we made it return.
enum class StopCause : uint8_t { None, QuantumEnd, StopRequested, Retranslate, TrapSite, Exception };

}  // namespace

const char* to_string(VcpuExit::Reason reason) {
  switch (reason) {
    case VcpuExit::Reason::QuantumEnd: return "quantum end";
    case VcpuExit::Reason::StopRequested: return "stop requested";
    case VcpuExit::Reason::Halt: return "halt";
    case VcpuExit::Reason::GeneralProtection: return "general protection";
    case VcpuExit::Reason::InvalidOpcode: return "invalid opcode";
    case VcpuExit::Reason::Exception: return "exception";
    case VcpuExit::Reason::UnmappedMemory: return "unmapped memory";
  }
  return "unknown";
}

struct Vcpu::Engine {
  Engine(unsigned index, GuestRam& ram, VcpuHost& host);
  ~Engine();

  // --- Unicorn callbacks; user_data is the Engine ---
  static void on_block(uc_engine*, uint64_t address, uint32_t size, void* user);
  static void on_trap_site(uc_engine*, uint64_t address, uint32_t size, void* user);
  static void on_trace(uc_engine*, uint64_t address, uint32_t size, void* user);
  static int on_cpuid(uc_engine*, void* user);
  static uint32_t on_port_in(uc_engine*, uint32_t port, int size, void* user);
  static void on_port_out(uc_engine*, uint32_t port, int size, uint32_t value, void* user);
  static void on_interrupt(uc_engine*, uint32_t vector, void* user);
  static bool on_unmapped(uc_engine*, uc_mem_type type, uint64_t address, int size, int64_t value, void* user);

  // An exception must not unwind through Unicorn's C frames: keep it, stop
  // the run, and let run() rethrow it.
  template <typename Result = void, typename Body>
  Result guarded(Body&& body) noexcept {
    try {
      return body();
    } catch (...) {
      host_failure = std::current_exception();
      uc_emu_stop(uc);
      return Result();
    }
  }

  // --- the block hook and counting ---
  // The previous block ran to its end. Its fields stay until begin_block
  // or forget_current_block overwrites them.
  void retire_previous_block(uint64_t next_address) {
    retired += pending;
    // QEMU runs each iteration of a REP string instruction as a block that
    // jumps back to the instruction: another iteration is not another
    // instruction, so it stays unretired until the loop leaves it.
    if (next_address == rep_restart_address) [[unlikely]]
      --retired;
  }
  void forget_current_block() {
    pending = 0;
    current = nullptr;
    rep_restart_address = kNoAddress;
  }
  bool must_stop_before(const DecodedBlock& block) const {
    return stop_requested || (retired + block.count > budget_end && !first_block_of_run);
  }
  void begin_block(const DecodedBlock& block) {
    first_block_of_run = false;
    current = &block;
    pending = block.count;
    host_call_cursor = 0;
    rep_restart_address = block.rep_string_tail;
  }
  // Out of line, so that the fast path keeps its locals in registers.
  [[gnu::noinline]] void enter_block_slowly(uint64_t address, uint32_t size, const DecodedBlock* block);
  void stop_at_block(StopCause cause, uint64_t address);
  void settle_at(uint64_t rip);
  const DecodedBlock& decode_new_block(uint64_t address, uint32_t size);
  std::optional<uint16_t> translated_instruction_count(uint64_t address, uint32_t size);
  CodeSize code_size_from_registers();
  bool hook_trap_sites(const DecodedBlock& block);

  // --- callbacks that reach the host mid-block ---
  template <typename Call>
  auto call_host_mid_block(Call&& call);
  void answer_cpuid();
  void stop_at_trap_site(uint64_t address);
  void trace_instruction(uint64_t address, uint32_t size);

  // --- run() and its exits ---
  VcpuExit run(uint64_t budget);
  std::optional<VcpuExit> run_until_stop();
  VcpuExit exit_before_block(VcpuExit::Reason reason);
  VcpuExit exit_for_halt();
  VcpuExit exit_for_error(uc_err err);
  VcpuExit exit_for_unmapped(uint64_t rip);
  VcpuExit exit_for_exception();
  std::optional<VcpuExit> emulate_trap();
  std::optional<VcpuExit> execute_trap(TrapKind kind, uint64_t rip);
  std::string describe(uint64_t address);

  // --- register and MSR access ---
  uint64_t read_reg(int reg) const;
  void write_reg(int reg, uint64_t value);
  uint64_t read_cpu_msr(uint32_t msr) const;
  void write_cpu_msr(uint32_t msr, uint64_t value);
  std::optional<uint64_t> read_msr(uint32_t msr);
  bool write_msr(uint32_t msr, uint64_t value);
  void write_edx_eax(uint64_t value);
  void load_flat_protected_mode();
  void enter_multiboot(uint32_t entry, uint32_t eax, uint32_t ebx);
  void set_trace(std::FILE* out);
  void flush_translations();
  void invalidate_translated_code();
  void remove_trap_hooks();

  const unsigned index;
  GuestRam& ram;
  VcpuHost& host;
  uc_engine* uc = nullptr;
  Disassembler disassembler;
  BlockCache blocks;

  struct HookedTrap {
    TrapKind kind;
    uint8_t length;
    uc_hook hook;
  };
  std::unordered_map<uint64_t, HookedTrap> trap_hooks;  // by instruction address
  uc_hook trace_hook = 0;
  std::FILE* trace_out = nullptr;

  // Counting (see the file comment).
  uint64_t retired = 0;
  uint64_t pending = 0;
  uint64_t in_flight = 0;  // during a mid-block host call: its index in the block
  uint64_t budget_end = 0;
  const DecodedBlock* current = nullptr;
  uint64_t rep_restart_address = kNoAddress;  // a REP string instruction ends `current`
  size_t host_call_cursor = 0;
  bool first_block_of_run = false;
  bool stop_requested = false;

  // What the callbacks saw during the last uc_emu_start.
  StopCause stop_cause = StopCause::None;
  uint64_t stopped_block = 0;
  uint64_t trap_address = 0;
  struct {
    uint32_t vector = 0;
    uint64_t rip = 0;
    uint64_t cr2 = 0;
  } exception;
  struct {
    uc_mem_type type = UC_MEM_READ_UNMAPPED;
    uint64_t address = 0;
    int size = 0;
  } unmapped;
  std::exception_ptr host_failure;
};

Vcpu::Engine::Engine(unsigned index, GuestRam& ram, VcpuHost& host)
    : index(index), ram(ram), host(host), blocks(ram.size()) {
  check(uc_open(UC_ARCH_X86, UC_MODE_64, &uc), "uc_open");
  try {
    check(uc_mem_map_ptr(uc, 0, ram.size(), UC_PROT_ALL, ram.data()), "uc_mem_map_ptr");
    uc_hook h;
    check(uc_hook_add(uc, &h, UC_HOOK_BLOCK, reinterpret_cast<void*>(on_block), this, 1, 0), "block hook");
    check(uc_hook_add(uc, &h, UC_HOOK_INSN, reinterpret_cast<void*>(on_cpuid), this, 1, 0, UC_X86_INS_CPUID),
          "cpuid hook");
    check(uc_hook_add(uc, &h, UC_HOOK_INSN, reinterpret_cast<void*>(on_port_in), this, 1, 0, UC_X86_INS_IN),
          "in hook");
    check(uc_hook_add(uc, &h, UC_HOOK_INSN, reinterpret_cast<void*>(on_port_out), this, 1, 0, UC_X86_INS_OUT),
          "out hook");
    check(uc_hook_add(uc, &h, UC_HOOK_INTR, reinterpret_cast<void*>(on_interrupt), this, 1, 0), "intr hook");
    check(uc_hook_add(uc, &h, UC_HOOK_MEM_UNMAPPED, reinterpret_cast<void*>(on_unmapped), this, 1, 0),
          "unmapped hook");
  } catch (...) {
    uc_close(uc);
    throw;
  }
}

Vcpu::Engine::~Engine() { uc_close(uc); }

// ---------------------------------------------------------------------------
// The block hook: the hot path, once per executed block.

// The fast path (a known block, within budget) only adds, compares and
// stores; everything that can throw or stop is behind it.
void Vcpu::Engine::on_block(uc_engine*, uint64_t address, uint32_t size, void* user) {
  auto& e = *static_cast<Engine*>(user);
  e.retire_previous_block(address);
  const DecodedBlock* block = e.blocks.find(address, size);
  if (block && !e.must_stop_before(*block)) [[likely]]
    return e.begin_block(*block);
  e.forget_current_block();
  e.enter_block_slowly(address, size, block);
}

void Vcpu::Engine::enter_block_slowly(uint64_t address, uint32_t size, const DecodedBlock* block) {
  guarded([&] {
    if (!block) {
      block = &decode_new_block(address, size);
      // This block was translated before its trap sites were hooked.
      if (hook_trap_sites(*block)) return stop_at_block(StopCause::Retranslate, address);
    }
    if (stop_requested) return stop_at_block(StopCause::StopRequested, address);
    if (must_stop_before(*block)) return stop_at_block(StopCause::QuantumEnd, address);
    begin_block(*block);
  });
}

// A stop requested from the block hook is exact: the block does not run
// (the notes, "the stop trap"). RIP is its start, except after code hooks
// (the trace) ran in the block before: Unicorn then leaves RIP at the last
// instruction a code hook saw. So run() puts RIP back to the block start
// (writing RIP here, in the hook, would cancel the stop).
void Vcpu::Engine::stop_at_block(StopCause cause, uint64_t address) {
  stop_cause = cause;
  stopped_block = address;
  uc_emu_stop(uc);
}

// Ends the accounting of the current block at `rip`, after a stop inside it.
void Vcpu::Engine::settle_at(uint64_t rip) {
  if (current) retired += current->instructions_before(rip);
  forget_current_block();
}

// Capstone must decode in the mode the block was translated in. CR0 and EFER
// give it, except during a mode switch (16-bit protected mode right after
// CR0.PE is set, compatibility mode right after CR0.PG): then the
// instruction count of Unicorn's own translation picks the right mode.
const DecodedBlock& Vcpu::Engine::decode_new_block(uint64_t address, uint32_t size) {
  const auto code = ram.bytes(address, size);
  const CodeSize guess = code_size_from_registers();
  DecodedBlock block = disassembler.decode_block(code, address, guess);
  const std::optional<uint16_t> translated = translated_instruction_count(address, size);
  const auto matches = [&](const DecodedBlock& b) { return b.fully_decoded && b.count == *translated; };
  if (translated && !matches(block)) {
    for (CodeSize other : kCodeSizes) {
      if (other == guess) continue;
      DecodedBlock retry = disassembler.decode_block(code, address, other);
      if (matches(retry)) {
        block = std::move(retry);
        break;
      }
    }
  }
  return blocks.insert(std::move(block));
}

// The block being executed is in Unicorn's translation cache under the
// current CPU state, so this finds it rather than translating anew.
std::optional<uint16_t> Vcpu::Engine::translated_instruction_count(uint64_t address, uint32_t size) {
  uc_tb tb{};
  if (uc_ctl_request_cache(uc, address, &tb) != UC_ERR_OK || tb.pc != address || tb.size != size)
    return std::nullopt;
  return tb.icount;
}

CodeSize Vcpu::Engine::code_size_from_registers() {
  if (!(read_reg(UC_X86_REG_CR0) & kCr0ProtectionEnable)) return CodeSize::Bits16;
  if (read_cpu_msr(kMsrEfer) & kEferLongModeActive) return CodeSize::Bits64;
  return CodeSize::Bits32;
}

// UC_HOOK_INSN refuses RDMSR, WRMSR and RDTSC(P) (the notes), so each site
// gets a one-instruction UC_HOOK_CODE. Returns whether any hook was added,
// in which case the block's old translation is dropped so the next one
// calls the hook (a hook added after translation is not seen otherwise).
bool Vcpu::Engine::hook_trap_sites(const DecodedBlock& block) {
  bool added = false;
  for (const TrapSite& site : block.traps) {
    if (trap_hooks.contains(site.address)) continue;
    uc_hook hook;
    check(uc_hook_add(uc, &hook, UC_HOOK_CODE, reinterpret_cast<void*>(on_trap_site), this, site.address,
                      site.address),
          "trap site hook");
    trap_hooks.emplace(site.address, HookedTrap{site.kind, site.length, hook});
    added = true;
  }
  if (added) check(uc_ctl_remove_cache(uc, block.start, block.end()), "uc_ctl_remove_cache");
  return added;
}

// ---------------------------------------------------------------------------
// Callbacks in the middle of a block.

// Unicorn does not update RIP before IN/OUT hooks, so the calling
// instruction is found by order instead: a block is straight-line code,
// and its host calls arrive in the order of its IN/OUT/CPUID instructions.
template <typename Call>
auto Vcpu::Engine::call_host_mid_block(Call&& call) {
  if (current && !current->host_calls.empty())
    in_flight = current->host_calls[std::min(host_call_cursor++, current->host_calls.size() - 1)];
  struct ClearInFlight {
    uint64_t& in_flight;
    ~ClearInFlight() { in_flight = 0; }
  } clear{in_flight};
  return call();
}

int Vcpu::Engine::on_cpuid(uc_engine*, void* user) {
  auto& e = *static_cast<Engine*>(user);
  e.guarded([&] { e.answer_cpuid(); });
  return 1;  // skip Unicorn's own CPUID
}

// Writing the 64-bit registers zero-extends, as CPUID does in 64-bit mode.
void Vcpu::Engine::answer_cpuid() {
  const auto leaf = static_cast<uint32_t>(read_reg(UC_X86_REG_RAX));
  const auto subleaf = static_cast<uint32_t>(read_reg(UC_X86_REG_RCX));
  const CpuidRegs regs = call_host_mid_block([&] { return host.cpuid(leaf, subleaf); });
  write_reg(UC_X86_REG_RAX, regs.eax);
  write_reg(UC_X86_REG_RBX, regs.ebx);
  write_reg(UC_X86_REG_RCX, regs.ecx);
  write_reg(UC_X86_REG_RDX, regs.edx);
}

uint32_t Vcpu::Engine::on_port_in(uc_engine*, uint32_t port, int size, void* user) {
  auto& e = *static_cast<Engine*>(user);
  return e.guarded<uint32_t>([&] {
    return e.call_host_mid_block([&] { return e.host.port_in(static_cast<uint16_t>(port), size); });
  });
}

void Vcpu::Engine::on_port_out(uc_engine*, uint32_t port, int size, uint32_t value, void* user) {
  auto& e = *static_cast<Engine*>(user);
  e.guarded([&] {
    e.call_host_mid_block([&] { e.host.port_out(static_cast<uint16_t>(port), size, value); });
  });
}

void Vcpu::Engine::on_trap_site(uc_engine*, uint64_t address, uint32_t, void* user) {
  auto& e = *static_cast<Engine*>(user);
  e.guarded([&] { e.stop_at_trap_site(address); });
}

// A stop from a code hook happens before the instruction runs. The bytes
// are checked because the guest may have rewritten the code since.
void Vcpu::Engine::stop_at_trap_site(uint64_t address) {
  const HookedTrap& trap = trap_hooks.at(address);
  const auto opcode = trap_opcode(trap.kind);
  const auto bytes = ram.bytes(address, trap.length);
  if (!std::equal(opcode.begin(), opcode.end(), bytes.end() - opcode.size())) return;
  trap_address = address;
  stop_cause = StopCause::TrapSite;
  uc_emu_stop(uc);
}

// Unicorn has already raised the exception when this runs; RIP is the
// faulting instruction for a fault and the next one for INT n / INT3.
void Vcpu::Engine::on_interrupt(uc_engine*, uint32_t vector, void* user) {
  auto& e = *static_cast<Engine*>(user);
  e.guarded([&] {
    e.exception = {vector, e.read_reg(UC_X86_REG_RIP),
                   vector == kPageFaultVector ? e.read_reg(UC_X86_REG_CR2) : 0};
    e.stop_cause = StopCause::Exception;
    uc_emu_stop(e.uc);
  });
}

bool Vcpu::Engine::on_unmapped(uc_engine*, uc_mem_type type, uint64_t address, int size, int64_t, void* user) {
  auto& e = *static_cast<Engine*>(user);
  e.unmapped = {type, address, size};
  return false;  // let Unicorn end the run with UC_ERR_*_UNMAPPED
}

void Vcpu::Engine::on_trace(uc_engine*, uint64_t address, uint32_t size, void* user) {
  auto& e = *static_cast<Engine*>(user);
  e.guarded([&] {
    // Trapped instructions are printed when run() emulates them: the trap
    // hook may stop the run before this hook is called.
    if (!e.trap_hooks.contains(address)) e.trace_instruction(address, size);
  });
}

void Vcpu::Engine::trace_instruction(uint64_t address, uint32_t size) {
  const CodeSize code_size = current ? current->code_size : code_size_from_registers();
  const auto code = ram.bytes(address, size);
  fmt::print(trace_out, "cpu{} {:016x}: {:02x}  {}\n", index, address, fmt::join(code, " "),
             disassembler.describe(code, address, code_size));
}

// ---------------------------------------------------------------------------
// run() and its exits.

VcpuExit Vcpu::Engine::run(uint64_t budget) {
  constexpr uint64_t kNoLimit = std::numeric_limits<uint64_t>::max();
  budget_end = budget > kNoLimit - retired ? kNoLimit : retired + budget;
  first_block_of_run = true;
  stop_requested = false;
  for (;;) {
    if (std::optional<VcpuExit> exit = run_until_stop()) return *exit;
  }
}

// One uc_emu_start. Returns the exit, or nullopt to go on within this run.
std::optional<VcpuExit> Vcpu::Engine::run_until_stop() {
  stop_cause = StopCause::None;
  const uc_err err = uc_emu_start(uc, read_reg(UC_X86_REG_RIP), kNeverExecuted, 0, 0);
  if (host_failure) {
    settle_at(read_reg(UC_X86_REG_RIP));
    std::rethrow_exception(std::exchange(host_failure, nullptr));
  }
  if (err != UC_ERR_OK) return exit_for_error(err);
  switch (stop_cause) {
    case StopCause::None: return exit_for_halt();
    case StopCause::QuantumEnd: return exit_before_block(VcpuExit::Reason::QuantumEnd);
    case StopCause::StopRequested: return exit_before_block(VcpuExit::Reason::StopRequested);
    case StopCause::Retranslate:
      write_reg(UC_X86_REG_RIP, stopped_block);
      return std::nullopt;
    case StopCause::TrapSite: return emulate_trap();
    case StopCause::Exception: return exit_for_exception();
  }
  throw std::logic_error("unknown stop cause");
}

VcpuExit Vcpu::Engine::exit_before_block(VcpuExit::Reason reason) {
  write_reg(UC_X86_REG_RIP, stopped_block);
  return exit_at(reason, stopped_block);
}

// Unicorn returns OK at HLT exactly as at a stop of ours (the notes), and
// every stop of ours sets stop_cause.
VcpuExit Vcpu::Engine::exit_for_halt() {
  const uint64_t rip = read_reg(UC_X86_REG_RIP);
  if (rip == 0 || !ram.contains(rip - 1, 1) || ram.read<uint8_t>(rip - 1) != kHltOpcode)
    throw std::runtime_error(fmt::format("unicorn stopped at {:#x} for no known reason", rip));
  settle_at(rip);
  return exit_at(VcpuExit::Reason::Halt, rip);
}

VcpuExit Vcpu::Engine::exit_for_error(uc_err err) {
  const uint64_t rip = read_reg(UC_X86_REG_RIP);
  switch (err) {
    case UC_ERR_INSN_INVALID: {
      std::string detail = fmt::format("invalid opcode at {:#x}: {}", rip, describe(rip));
      settle_at(rip);
      return exit_at(VcpuExit::Reason::InvalidOpcode, rip, std::move(detail));
    }
    case UC_ERR_READ_UNMAPPED:
    case UC_ERR_WRITE_UNMAPPED:
    case UC_ERR_FETCH_UNMAPPED:
      return exit_for_unmapped(rip);
    default:
      settle_at(rip);
      throw std::runtime_error(fmt::format("unicorn: run stopped at {:#x}: {}", rip, uc_strerror(err)));
  }
}

// A fetch fault leaves RIP at the target, exactly. A read or write fault
// leaves RIP at the start of the block holding the access, while the
// registers already show the instructions before it: Unicorn 2.0.1 leaves
// the block with cpu_loop_exit and never restores the guest PC. The exit
// reports that block start, and counts the block as not run.
VcpuExit Vcpu::Engine::exit_for_unmapped(uint64_t rip) {
  std::string detail;
  if (unmapped.type == UC_MEM_FETCH_UNMAPPED) {
    detail = fmt::format("fetch from unmapped memory at {:#x}", unmapped.address);
  } else {
    detail = fmt::format("{} of {} bytes at unmapped {:#x} by an instruction of the block at {:#x} ({}; Unicorn "
                         "does not say which instruction)",
                         unmapped.type == UC_MEM_WRITE_UNMAPPED ? "write" : "read", unmapped.size,
                         unmapped.address, rip, describe(rip));
  }
  settle_at(rip);
  VcpuExit exit = exit_at(VcpuExit::Reason::UnmappedMemory, rip, std::move(detail));
  exit.address = unmapped.address;
  return exit;
}

VcpuExit Vcpu::Engine::exit_for_exception() {
  const uint64_t rip = exception.rip;
  // INT n and INT3 end their block and are traps: RIP is past them.
  const bool trap = current && current->ends_with_software_interrupt && rip == current->end();
  const uint64_t raised_at = trap ? current->address_of(current->count - 1) : rip;
  std::string detail = fmt::format("{} (vector {}) at {:#x}: {}", exception_name(exception.vector),
                                   exception.vector, raised_at, describe(raised_at));
  if (exception.vector == kPageFaultVector) detail += fmt::format(", CR2 {:#x}", exception.cr2);
  settle_at(rip);
  VcpuExit exit = exit_at(VcpuExit::Reason::Exception, rip, std::move(detail));
  exit.vector = static_cast<int>(exception.vector);
  return exit;
}

// The trap hook stopped the run in front of the instruction. Emulate it,
// retire it and step over it.
std::optional<VcpuExit> Vcpu::Engine::emulate_trap() {
  const uint64_t rip = read_reg(UC_X86_REG_RIP);
  const HookedTrap& trap = trap_hooks.at(trap_address);
  settle_at(rip);
  if (trace_out) trace_instruction(rip, trap.length);
  if (std::optional<VcpuExit> fault = execute_trap(trap.kind, rip)) return fault;
  ++retired;
  const uint64_t next = rip + trap.length;
  write_reg(UC_X86_REG_RIP, next);
  if (stop_requested) return exit_at(VcpuExit::Reason::StopRequested, next);
  return std::nullopt;
}

// SDM Vol. 2: RDMSR, WRMSR, RDTSC, RDTSCP.
std::optional<VcpuExit> Vcpu::Engine::execute_trap(TrapKind kind, uint64_t rip) {
  const auto ecx = static_cast<uint32_t>(read_reg(UC_X86_REG_RCX));
  switch (kind) {
    case TrapKind::Rdmsr: {
      const std::optional<uint64_t> value = read_msr(ecx);
      if (!value)
        return exit_at(VcpuExit::Reason::GeneralProtection, rip,
                       fmt::format("rdmsr of unknown MSR {:#x} at {:#x}", ecx, rip));
      write_edx_eax(*value);
      return std::nullopt;
    }
    case TrapKind::Wrmsr: {
      const uint64_t value = (read_reg(UC_X86_REG_RDX) << 32) | static_cast<uint32_t>(read_reg(UC_X86_REG_RAX));
      if (!write_msr(ecx, value))
        return exit_at(VcpuExit::Reason::GeneralProtection, rip,
                       fmt::format("wrmsr of unknown MSR {:#x} (value {:#x}) at {:#x}", ecx, value, rip));
      return std::nullopt;
    }
    case TrapKind::Rdtsc:
      write_edx_eax(host.read_tsc());
      return std::nullopt;
    case TrapKind::Rdtscp: {
      // Without IA32_TSC_AUX the CPU has no RDTSCP, which is then #UD.
      const std::optional<uint64_t> aux = read_msr(kMsrTscAux);
      if (!aux)
        return exit_at(VcpuExit::Reason::InvalidOpcode, rip,
                       fmt::format("rdtscp at {:#x}, but the host has no IA32_TSC_AUX", rip));
      write_edx_eax(host.read_tsc());
      write_reg(UC_X86_REG_RCX, static_cast<uint32_t>(*aux));
      return std::nullopt;
    }
  }
  throw std::logic_error("unknown trap kind");
}

// The instruction at `address`, disassembled in the mode of the current
// block when it holds the address.
std::string Vcpu::Engine::describe(uint64_t address) {
  if (!ram.contains(address, 1)) return "(outside RAM)";
  const bool in_current = current && address >= current->start && address < current->end();
  const CodeSize code_size = in_current ? current->code_size : code_size_from_registers();
  const uint64_t length = std::min<uint64_t>(15, ram.size() - address);  // the longest x86 instruction
  return disassembler.describe(ram.bytes(address, length), address, code_size);
}

// ---------------------------------------------------------------------------
// Registers and MSRs.

uint64_t Vcpu::Engine::read_reg(int reg) const {
  uint64_t value = 0;
  check(uc_reg_read(uc, reg, &value), "uc_reg_read");
  return value;
}

void Vcpu::Engine::write_reg(int reg, uint64_t value) { check(uc_reg_write(uc, reg, &value), "uc_reg_write"); }

uint64_t Vcpu::Engine::read_cpu_msr(uint32_t msr) const {
  uc_x86_msr value{.rid = msr, .value = 0};
  check(uc_reg_read(uc, UC_X86_REG_MSR, &value), "uc_reg_read (MSR)");
  return value.value;
}

void Vcpu::Engine::write_cpu_msr(uint32_t msr, uint64_t value) {
  uc_x86_msr reg{.rid = msr, .value = value};
  check(uc_reg_write(uc, UC_X86_REG_MSR, &reg), "uc_reg_write (MSR)");
}

std::optional<uint64_t> Vcpu::Engine::read_msr(uint32_t msr) {
  if (is_cpu_state_msr(msr)) return read_cpu_msr(msr);
  return host.read_msr(msr);
}

bool Vcpu::Engine::write_msr(uint32_t msr, uint64_t value) {
  if (!is_cpu_state_msr(msr)) return host.write_msr(msr, value);
  write_cpu_msr(msr, value);
  return true;
}

// RDMSR, RDTSC and RDTSCP clear the upper halves of RAX and RDX in 64-bit mode.
void Vcpu::Engine::write_edx_eax(uint64_t value) {
  write_reg(UC_X86_REG_RAX, static_cast<uint32_t>(value));
  write_reg(UC_X86_REG_RDX, value >> 32);
}

// Unicorn 2.0.1 loads a segment descriptor on a CS/DS/ES/SS write only in
// an engine opened in 16- or 32-bit mode; in a UC_MODE_64 engine the write
// sets the selector alone and the hidden base, limit and D bit stay. So a
// scratch UC_MODE_32 engine loads flat descriptors from a GDT in its own
// memory, and its CPU context (registers, descriptor caches, CR0, EFER) is
// copied into ours, as the notes do for INIT/SIPI.
void Vcpu::Engine::load_flat_protected_mode() {
  UcHandle scratch(UC_MODE_32);
  uc_engine* s = scratch.get();
  const std::array<uint64_t, 3> gdt = {0, kFlatCode32Descriptor, kFlatDataDescriptor};
  check(uc_mem_map(s, 0, kPageSize, UC_PROT_ALL), "uc_mem_map (scratch)");
  check(uc_mem_write(s, 0, gdt.data(), sizeof gdt), "uc_mem_write (scratch GDT)");
  uc_x86_mmr gdtr{.selector = 0, .base = 0, .limit = sizeof gdt - 1, .flags = 0};
  check(uc_reg_write(s, UC_X86_REG_GDTR, &gdtr), "uc_reg_write (scratch GDTR)");
  const uint16_t code = kMultibootCodeSelector, data = kMultibootDataSelector;
  check(uc_reg_write(s, UC_X86_REG_CS, &code), "uc_reg_write (scratch CS)");
  for (int reg : {UC_X86_REG_DS, UC_X86_REG_ES, UC_X86_REG_SS, UC_X86_REG_FS, UC_X86_REG_GS})
    check(uc_reg_write(s, reg, &data), "uc_reg_write (scratch data segment)");

  UcContext(s).restore_into(uc);
}

void Vcpu::Engine::enter_multiboot(uint32_t entry, uint32_t eax, uint32_t ebx) {
  // Leaving protected mode makes Unicorn flush its TLB (cpu_x86_update_cr0),
  // which copying in a context does not: no stale paging entry survives.
  write_reg(UC_X86_REG_CR0, 0);
  load_flat_protected_mode();
  uc_x86_mmr no_gdt{};
  check(uc_reg_write(uc, UC_X86_REG_GDTR, &no_gdt), "uc_reg_write (GDTR)");
  write_reg(UC_X86_REG_CR4, 0);  // as after reset, and as QEMU's loader leaves it
  write_reg(UC_X86_REG_RFLAGS, kRflagsInterruptsOff);
  write_reg(UC_X86_REG_RAX, eax);
  write_reg(UC_X86_REG_RBX, ebx);
  write_reg(UC_X86_REG_RIP, entry);
  flush_translations();
}

void Vcpu::Engine::set_trace(std::FILE* out) {
  if (out && !trace_hook) {
    check(uc_hook_add(uc, &trace_hook, UC_HOOK_CODE, reinterpret_cast<void*>(on_trace), this, 1, 0),
          "trace hook");
  } else if (!out && trace_hook) {
    check(uc_hook_del(uc, trace_hook), "uc_hook_del (trace)");
    trace_hook = 0;
  }
  trace_out = out;
  // Translated code calls the hooks that existed when it was translated.
  invalidate_translated_code();
}

// The decoded blocks and their trap hooks go with the translations: they
// are rebuilt as code runs again.
void Vcpu::Engine::flush_translations() {
  invalidate_translated_code();
  remove_trap_hooks();
  blocks.clear();
}

// Drops Unicorn's translations of every page where a decoded block starts,
// which is all translated code: every block that ran went through on_block.
// Not uc_ctl_flush_tlb: in 2.0.1 it zero-fills the whole 1 GiB translation
// buffer (2.4 s and 1 GiB more RSS the first time, 14 ms after). And
// uc_ctl_remove_cache finds a page through the guest page tables: for a page
// they do not map it does nothing, silently, and sets CR2. So paging is
// turned off around it (the identity is all Unicorn 2.0.1 maps anyway) and
// the CPU context put back after.
void Vcpu::Engine::invalidate_translated_code() {
  const UcContext saved(uc);
  write_reg(UC_X86_REG_CR0, read_reg(UC_X86_REG_CR0) & ~kCr0Paging);
  for (uint64_t page : blocks.code_pages())
    check(uc_ctl_remove_cache(uc, page, page + kPageSize), "uc_ctl_remove_cache");
  saved.restore_into(uc);
  // The context brings paging back but not the TLB, which now holds entries
  // made with paging off; reloading CR3 flushes it (cpu_x86_update_cr3).
  write_reg(UC_X86_REG_CR3, read_reg(UC_X86_REG_CR3));
}

void Vcpu::Engine::remove_trap_hooks() {
  for (const auto& [address, trap] : trap_hooks) check(uc_hook_del(uc, trap.hook), "uc_hook_del (trap site)");
  trap_hooks.clear();
}

// ---------------------------------------------------------------------------
// Vcpu: the public face.

Vcpu::Vcpu(unsigned index, GuestRam& ram, VcpuHost& host) : engine_(std::make_unique<Engine>(index, ram, host)) {}

Vcpu::~Vcpu() = default;

void Vcpu::enter_multiboot(uint32_t entry, uint32_t eax, uint32_t ebx) { engine_->enter_multiboot(entry, eax, ebx); }

VcpuExit Vcpu::run(uint64_t budget) { return engine_->run(budget); }

void Vcpu::request_stop() { engine_->stop_requested = true; }

uint64_t Vcpu::instructions() const { return engine_->retired + engine_->in_flight; }

void Vcpu::set_trace(std::FILE* out) { engine_->set_trace(out); }

void Vcpu::flush_translations() { engine_->flush_translations(); }

unsigned Vcpu::index() const { return engine_->index; }

VcpuState Vcpu::state() const {
  const Engine& e = *engine_;
  const auto r = [&](int reg) { return e.read_reg(reg); };
  const auto selector = [&](int reg) { return static_cast<uint16_t>(e.read_reg(reg)); };
  return {
      .rax = r(UC_X86_REG_RAX), .rbx = r(UC_X86_REG_RBX), .rcx = r(UC_X86_REG_RCX), .rdx = r(UC_X86_REG_RDX),
      .rsi = r(UC_X86_REG_RSI), .rdi = r(UC_X86_REG_RDI), .rbp = r(UC_X86_REG_RBP), .rsp = r(UC_X86_REG_RSP),
      .r8 = r(UC_X86_REG_R8),   .r9 = r(UC_X86_REG_R9),   .r10 = r(UC_X86_REG_R10), .r11 = r(UC_X86_REG_R11),
      .r12 = r(UC_X86_REG_R12), .r13 = r(UC_X86_REG_R13), .r14 = r(UC_X86_REG_R14), .r15 = r(UC_X86_REG_R15),
      .rip = r(UC_X86_REG_RIP), .rflags = r(UC_X86_REG_RFLAGS),
      .cr0 = r(UC_X86_REG_CR0), .cr3 = r(UC_X86_REG_CR3), .cr4 = r(UC_X86_REG_CR4), .efer = e.read_cpu_msr(kMsrEfer),
      .cs = selector(UC_X86_REG_CS), .ds = selector(UC_X86_REG_DS), .es = selector(UC_X86_REG_ES),
      .ss = selector(UC_X86_REG_SS),
  };
}

}  // namespace topolab
