// SPDX-License-Identifier: GPL-2.0-or-later
// Guest MIPS of the compute_loop testcase image, side by side in one run:
//   - raw Unicorn: the same image in one UC_MODE_32 engine with no hooks but
//     the two the image cannot run without (COM1's line status, and the
//     debug-exit port to stop), the ceiling for any Unicorn-based machine;
//   - topolab: `Machine`, exactly what `topolab run` does;
//   - QEMU 7.2 in its deterministic mode (-accel tcg,thread=single
//     -icount shift=0), with its boot time subtracted by timing a run of a
//     few iterations too.
// Instruction counts come from topolab (the same guest path in all three).
// Runs are interleaved and each figure is the median of five: the machines
// are noisy, so compare the ratios, not the absolute numbers.
//
// The variants of the loop: with a store per iteration and with loads only
// (IMAGE, the 32-bit compute_loop), because how an engine stores is where
// they differ most (docs/benchmarks.md); and the 64-bit compute_loop64 with
// its data pages mapped execute-disable (nx=on) against the same image with
// nx=off, because Unicorn 2.1.x takes its fast store path only for pages its
// TLB holds without execute permission. Each round runs every variant, so
// nx=on and nx=off see the same noise.
//
//   bench_compute IMAGE [iterations [IMAGE64]]
// IMAGE64 defaults to compute_loop64.elf beside IMAGE; without it only the
// 32-bit variants run.
#include <unicorn/unicorn.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "emu/machine.h"
#include "emu/unicorn_vcpu.h"
#include "firmware/multiboot.h"

namespace topolab {
namespace {

constexpr int kRepeats = 5;
constexpr uint32_t kBootIterations = 1000;  // QEMU's boot-time baseline

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// One image and the words its command line adds to iterations=N.
struct Variant {
  Variant(std::string image_, std::string words_) : image(std::move(image_)), words(std::move(words_)) {}
  std::string image;
  std::string words;  // stores=on|off, nx=on|off
  std::vector<double> raw, ours, qemu, qemu_boot;  // seconds, one per round
  uint64_t instructions = 0;
};

std::string append_for(const Variant& v, uint32_t iterations) {
  return fmt::format("iterations={} {}", iterations, v.words);
}

struct TopolabRun {
  double seconds;
  uint64_t instructions;
};

TopolabRun run_topolab(const Variant& v, uint32_t iterations) {
  MachineConfig config;
  config.image = v.image;
  config.append = append_for(v, iterations);
  config.time_limit_seconds = 1000;
  Machine machine(config, [](uint8_t) {}, unicorn_vcpu_factory());
  auto start = std::chrono::steady_clock::now();
  RunResult r = machine.run();
  double elapsed = seconds_since(start);
  if (r.outcome != RunResult::Outcome::GuestExit || *r.guest_value != 0)
    throw std::runtime_error(fmt::format("topolab: {} {}", to_string(r.outcome), r.diagnosis));
  return {elapsed, r.instructions};
}

// The IN/OUT hooks the image needs: LSR reads as "transmitter empty", and a
// write to isa-debug-exit stops the engine (from the hook; the replay the
// notes warn of does not matter here, only that it stops).
uint32_t raw_port_in(uc_engine*, uint32_t port, int, void*) { return port == 0x3fd ? 0x60 : 0xff; }
void raw_port_out(uc_engine* uc, uint32_t port, int, uint32_t, void* done) {
  if (port == 0xf4) {
    *static_cast<bool*>(done) = true;
    uc_emu_stop(uc);
  }
}

void check(uc_err err, const char* what) {
  if (err != UC_ERR_OK) throw std::runtime_error(fmt::format("unicorn: {}: {}", what, uc_strerror(err)));
}

// A 64-bit image starts in this UC_MODE_32 engine too: it enters at its
// 32-bit Multiboot entry and switches to long mode itself (lib/longmode.S),
// which the engine's x86-64 CPU (Unicorn's default model, qemu64) allows.
double run_raw_unicorn(const Variant& v, uint32_t iterations) {
  GuestRam ram(128 << 20);
  MultibootBoot boot = load_multiboot(ram, read_image_file(v.image, ram.top()),
                                      std::filesystem::path(v.image).filename().string(), append_for(v, iterations), {});
  uc_engine* uc = nullptr;
  check(uc_open(UC_ARCH_X86, UC_MODE_32, &uc), "uc_open");
  check(uc_mem_map_ptr(uc, 0, ram.top(), UC_PROT_ALL, ram.data()), "uc_mem_map_ptr");
  bool done = false;
  uc_hook in_hook, out_hook;
  check(uc_hook_add(uc, &in_hook, UC_HOOK_INSN, reinterpret_cast<void*>(raw_port_in), nullptr, 1, 0, UC_X86_INS_IN),
        "hook in");
  check(uc_hook_add(uc, &out_hook, UC_HOOK_INSN, reinterpret_cast<void*>(raw_port_out), &done, 1, 0, UC_X86_INS_OUT),
        "hook out");
  uint32_t eax = MultibootBoot::kBootloaderMagic, ebx = boot.info_address;
  check(uc_reg_write(uc, UC_X86_REG_EAX, &eax), "eax");
  check(uc_reg_write(uc, UC_X86_REG_EBX, &ebx), "ebx");
  auto start = std::chrono::steady_clock::now();
  check(uc_emu_start(uc, boot.entry, 0xffffffff, 0, 0), "uc_emu_start");
  double elapsed = seconds_since(start);
  uc_close(uc);
  if (!done) throw std::runtime_error("raw unicorn: the image did not reach isa-debug-exit");
  return elapsed;
}

double run_qemu_icount(const Variant& v, uint32_t iterations) {
  std::string cmd = fmt::format(
      "qemu-system-x86_64 -accel tcg,thread=single -icount shift=0 -kernel '{}' -append '{}' -display none -nic none "
      "-no-reboot -serial null -device isa-debug-exit,iobase=0xf4,iosize=4 -m 128 >/dev/null 2>&1",
      v.image, append_for(v, iterations));
  auto start = std::chrono::steady_clock::now();
  int status = std::system(cmd.c_str());
  double elapsed = seconds_since(start);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 1)  // guest 0 -> (0 << 1) | 1
    throw std::runtime_error(fmt::format("qemu exited with {}: {}", status, cmd));
  return elapsed;
}

std::string image_name(const Variant& v) { return std::filesystem::path(v.image).stem().string(); }

double mips(uint64_t instructions, double seconds) { return instructions / std::max(seconds, 1e-9) / 1e6; }

struct Mips {
  double raw, ours, qemu;
  bool qemu_measured;
};

Mips print_variant(const Variant& v, uint32_t iterations) {
  double q = std::max(median(v.qemu) - median(v.qemu_boot), 1e-9);
  // Too few iterations and QEMU's loop vanishes in its boot time's noise.
  Mips m{mips(v.instructions, median(v.raw)), mips(v.instructions, median(v.ours)), mips(v.instructions, q),
         median(v.qemu) > median(v.qemu_boot)};
  unsigned version = uc_version(nullptr, nullptr);
  std::string raw_label = fmt::format("raw Unicorn {}.{}.{} (no hooks but I/O)", version >> 24, (version >> 16) & 0xff,
                                      (version >> 8) & 0xff);
  fmt::print("{} {}, {} iterations = {} guest instructions; median of {} interleaved rounds\n", image_name(v),
             v.words, iterations, v.instructions, kRepeats);
  fmt::print("  {:<44} {:>9} {:>9}\n", "", "seconds", "MIPS");
  fmt::print("  {:<44} {:>9.3f} {:>9.0f}\n", raw_label, median(v.raw), m.raw);
  fmt::print("  {:<44} {:>9.3f} {:>9.0f}\n", "topolab run", median(v.ours), m.ours);
  fmt::print("  {:<44} {:>9.3f} {:>9}   (boot {:.3f} s subtracted)\n",
             "QEMU 7.2 -accel tcg,thread=single -icount 0", q,
             m.qemu_measured ? fmt::format("{:.0f}", m.qemu) : "n/a", median(v.qemu_boot));
  fmt::print("  topolab / raw Unicorn: {:.0f}%   topolab / QEMU icount: {}\n\n", 100 * m.ours / m.raw,
             m.qemu_measured ? fmt::format("{:.2f}x", m.ours / m.qemu) : "n/a");
  return m;
}

}  // namespace
}  // namespace topolab

int main(int argc, char** argv) {
  using namespace topolab;
  if (argc < 2) {
    fmt::print(stderr, "usage: bench_compute IMAGE [iterations [IMAGE64]]\n");
    return 2;
  }
  std::string image = argv[1];
  uint32_t iterations = argc > 2 ? static_cast<uint32_t>(std::strtoul(argv[2], nullptr, 10)) : 20'000'000;
  std::string image64 =
      argc > 3 ? argv[3] : (std::filesystem::path(image).parent_path() / "compute_loop64.elf").string();
  std::vector<Variant> variants{{image, "stores=on"}, {image, "stores=off"}};
  bool nx = std::filesystem::exists(image64);
  if (nx) {
    variants.emplace_back(image64, "nx=off");
    variants.emplace_back(image64, "nx=on");
  } else {
    fmt::print(stderr, "bench_compute: no {}: the nx= variants do not run\n", image64);
  }
  try {
    for (int i = 0; i < kRepeats; ++i) {
      for (Variant& v : variants) {
        fmt::print(stderr, "round {}/{}: {} {}          \r", i + 1, kRepeats, image_name(v), v.words);
        v.raw.push_back(run_raw_unicorn(v, iterations));
        TopolabRun t = run_topolab(v, iterations);
        v.ours.push_back(t.seconds);
        v.instructions = t.instructions;
        v.qemu.push_back(run_qemu_icount(v, iterations));
        v.qemu_boot.push_back(run_qemu_icount(v, kBootIterations));
      }
    }
    fmt::print(stderr, "\n");
    std::vector<Mips> m;
    for (const Variant& v : variants) m.push_back(print_variant(v, iterations));
    if (nx) {
      // Both are the 64-bit image doing the same work: the data pages' XD bit alone.
      const Mips &off = m[2], &on = m[3];
      fmt::print("compute_loop64 nx=on / nx=off (same work, same rounds)\n");
      fmt::print("  raw Unicorn: {:.2f}x   topolab run: {:.2f}x   QEMU icount: {}\n", on.raw / off.raw,
                 on.ours / off.ours,
                 on.qemu_measured && off.qemu_measured ? fmt::format("{:.2f}x", on.qemu / off.qemu) : "n/a");
    }
    std::fflush(stdout);
  } catch (const std::exception& e) {
    fmt::print(stderr, "bench_compute: {}\n", e.what());
    return 1;
  }
  return 0;
}
