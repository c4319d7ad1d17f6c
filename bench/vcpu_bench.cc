// SPDX-License-Identifier: GPL-2.0-or-later
// Guest MIPS of two compute loops under raw Unicorn (no hooks at all) and
// under Vcpu::run (block-hook counting, quantum 100k), side by side in one
// process. Both run the same 32-bit code with paging off; the raw engine is
// the ceiling Vcpu's bookkeeping is measured against.
//
// Each figure is the best of several runs, raw and Vcpu interleaved: on the
// 2-core development VM raw Unicorn runs the tight loop at either ~1,000 or
// ~2,500 MIPS, from one engine to the next, so a median mixes two modes.
//
//   vcpu_bench [scale]   scale multiplies the iteration counts (default 1)
#include <unicorn/unicorn.h>

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <limits>
#include <stdexcept>
#include <vector>

#include "emu/unicorn_vcpu.h"

namespace topolab {
namespace {

constexpr uint64_t kRamBytes = 1 << 20;
constexpr uint32_t kEntry = 0x1000;
constexpr uint64_t kData = 0x10000;  // the buffer the hash loop reads
constexpr uint64_t kDataBytes = 4096;
constexpr uint64_t kQuantum = 100'000;
constexpr int kRepeats = 5;

struct Loop {
  const char* name;
  std::vector<uint8_t> code;  // at kEntry; starts with "mov ecx, iterations"
  uint64_t setup_instructions;
  uint64_t body_instructions;
  uint32_t iterations;

  uint64_t instructions() const { return setup_instructions + body_instructions * iterations + 1; }  // + hlt
  std::vector<uint8_t> code_with_iterations() const {
    std::vector<uint8_t> patched = code;
    for (int i = 0; i < 4; ++i) patched[1 + i] = static_cast<uint8_t>(iterations >> (8 * i));
    return patched;
  }
};

// The shape of the notes' speed table: five instructions per iteration.
Loop tight_loop(uint32_t scale) {
  return {"tight (5 insns/iteration)",
          {
              0xb9, 0x00, 0x00, 0x00, 0x00,  // 1000: mov ecx, iterations
              0x40,                          // 1005: inc eax
              0x01, 0xc3,                    // 1006: add ebx, eax
              0x31, 0xda,                    // 1008: xor edx, ebx
              0x49,                          // 100a: dec ecx
              0x75, 0xf8,                    // 100b: jnz 0x1005
              0xf4,                          // 100d: hlt
          },
          1, 5, 50'000'000 * scale};
}

// A realistic body: a murmur-style word mix, one bitwise CRC-32 step and a
// read-modify-write of a histogram table, over a 4 KiB buffer.
Loop hash_loop(uint32_t scale) {
  return {"hash mix (27 insns/iteration)",
          {
              0xb9, 0x00, 0x00, 0x00, 0x00,              // 1000: mov ecx, iterations
              0x31, 0xf6,                                // 1005: xor esi, esi
              0xb8, 0xc5, 0x9d, 0x1c, 0x81,              // 1007: mov eax, 0x811c9dc5
              0x31, 0xff,                                // 100c: xor edi, edi
              0x8b, 0x96, 0x00, 0x00, 0x01, 0x00,        // 100e: mov edx, [esi + 0x10000]
              0x69, 0xd2, 0x51, 0x2d, 0x9e, 0xcc,        // 1014: imul edx, edx, 0xcc9e2d51
              0xc1, 0xc2, 0x0f,                          // 101a: rol edx, 15
              0x69, 0xd2, 0x93, 0x35, 0x87, 0x1b,        // 101d: imul edx, edx, 0x1b873593
              0x31, 0xd0,                                // 1023: xor eax, edx
              0xc1, 0xc0, 0x0d,                          // 1025: rol eax, 13
              0x8d, 0x84, 0x80, 0x64, 0x6b, 0x54, 0xe6,  // 1028: lea eax, [eax + eax*4 + 0xe6546b64]
              0x89, 0xc3,                                // 102f: mov ebx, eax
              0xd1, 0xeb,                                // 1031: shr ebx, 1
              0x89, 0xc2,                                // 1033: mov edx, eax
              0x83, 0xe2, 0x01,                          // 1035: and edx, 1
              0xf7, 0xda,                                // 1038: neg edx
              0x81, 0xe2, 0x20, 0x83, 0xb8, 0xed,        // 103a: and edx, 0xedb88320
              0x31, 0xd3,                                // 1040: xor ebx, edx
              0x89, 0xda,                                // 1042: mov edx, ebx
              0x81, 0xe2, 0xff, 0x00, 0x00, 0x00,        // 1044: and edx, 0xff
              0x01, 0x1c, 0x95, 0x00, 0x00, 0x02, 0x00,  // 104a: add [edx*4 + 0x20000], ebx
              0x01, 0xdf,                                // 1051: add edi, ebx
              0x31, 0xc7,                                // 1053: xor edi, eax
              0xc1, 0xc7, 0x05,                          // 1055: rol edi, 5
              0x89, 0xfa,                                // 1058: mov edx, edi
              0xc1, 0xea, 0x10,                          // 105a: shr edx, 16
              0x31, 0xd7,                                // 105d: xor edi, edx
              0x83, 0xc6, 0x04,                          // 105f: add esi, 4
              0x81, 0xe6, 0xfc, 0x0f, 0x00, 0x00,        // 1062: and esi, 0xffc
              0x49,                                      // 1068: dec ecx
              0x75, 0xa3,                                // 1069: jnz 0x100e
              0xf4,                                      // 106b: hlt
          },
          4, 27, 10'000'000 * scale};
}

void load(uint8_t* ram, const Loop& loop) {
  const std::vector<uint8_t> code = loop.code_with_iterations();
  std::copy(code.begin(), code.end(), ram + kEntry);
  uint32_t x = 0x1234'5678;  // xorshift32: the same buffer for both engines
  for (uint64_t i = 0; i < kDataBytes; ++i) {
    x ^= x << 13, x ^= x >> 17, x ^= x << 5;
    ram[kData + i] = static_cast<uint8_t>(x);
  }
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

void check(uc_err err, const char* what) {
  if (err != UC_ERR_OK) throw std::runtime_error(fmt::format("unicorn: {}: {}", what, uc_strerror(err)));
}

// One UC_MODE_32 engine, no hooks, one uc_emu_start that returns at HLT.
double raw_unicorn_seconds(const Loop& loop) {
  GuestRam ram(kRamBytes);
  load(ram.data(), loop);
  uc_engine* uc = nullptr;
  check(uc_open(UC_ARCH_X86, UC_MODE_32, &uc), "uc_open");
  check(uc_mem_map_ptr(uc, 0, ram.top(), UC_PROT_ALL, ram.data()), "uc_mem_map_ptr");
  const auto start = std::chrono::steady_clock::now();
  const uc_err err = uc_emu_start(uc, kEntry, 0xFFFF'FFFF'0000'0000, 0, 0);
  const double elapsed = seconds_since(start);
  uc_close(uc);
  check(err, "uc_emu_start");
  return elapsed;
}

class NoDevices final : public VcpuHost {
 public:
  CpuidRegs cpuid(uint32_t, uint32_t) override { return {}; }
  uint32_t port_in(uint16_t, unsigned) override { return 0; }
  void port_out(uint16_t, unsigned, uint32_t) override {}
  std::optional<uint64_t> read_msr(uint32_t) override { return std::nullopt; }
  bool write_msr(uint32_t, uint64_t) override { return false; }
  uint64_t read_tsc() override { return 0; }
};

double vcpu_seconds(const Loop& loop) {
  GuestRam ram(kRamBytes);
  load(ram.data(), loop);
  NoDevices host;
  UnicornVcpu cpu(0, ram, host);
  cpu.enter_multiboot(kEntry, 0, 0);
  const auto start = std::chrono::steady_clock::now();
  VcpuExit exit;
  do {
    exit = cpu.run(kQuantum);
  } while (exit.reason == VcpuExit::Reason::QuantumEnd);
  const double elapsed = seconds_since(start);
  if (exit.reason != VcpuExit::Reason::Halt)
    throw std::runtime_error(fmt::format("{}: {} {}", loop.name, to_string(exit.reason), exit.detail));
  if (cpu.instructions() != loop.instructions())
    throw std::runtime_error(fmt::format("{}: counted {} instructions, expected {}", loop.name, cpu.instructions(),
                                         loop.instructions()));
  return elapsed;
}

void compare(const Loop& loop) {
  double raw = std::numeric_limits<double>::max(), vcpu = raw;
  for (int i = 0; i < kRepeats; ++i) {
    raw = std::min(raw, raw_unicorn_seconds(loop));
    vcpu = std::min(vcpu, vcpu_seconds(loop));
  }
  const double instructions = static_cast<double>(loop.instructions());
  fmt::print("{:<30} {:>12} {:>10.0f} {:>10.0f} {:>9.0f}%\n", loop.name, loop.instructions(),
             instructions / raw / 1e6, instructions / vcpu / 1e6, 100 * raw / vcpu);
}

}  // namespace
}  // namespace topolab

int main(int argc, char** argv) {
  const uint32_t scale = argc > 1 ? static_cast<uint32_t>(std::max(1, std::atoi(argv[1]))) : 1;
  fmt::print("guest MIPS, best of {}; Vcpu::run with quantum {}\n", topolab::kRepeats, topolab::kQuantum);
  fmt::print("{:<30} {:>12} {:>10} {:>10} {:>10}\n", "loop", "instructions", "raw", "Vcpu", "Vcpu/raw");
  topolab::compare(topolab::tight_loop(scale));
  topolab::compare(topolab::hash_loop(scale));
}
