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
// Both variants of the loop run: with a store per iteration, and with loads
// only, because Unicorn 2.0.1 sends every guest store through a slow path
// (docs/benchmarks.md).
//
//   bench_compute IMAGE [iterations]
#include <unicorn/unicorn.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <cstdlib>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "emu/machine.h"
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

// The loop's variant (stores=on|off) rides along on the command line.
std::string g_variant = "stores=on";

std::string append_for(uint32_t iterations) { return fmt::format("iterations={} {}", iterations, g_variant); }

struct TopolabRun {
  double seconds;
  uint64_t instructions;
};

TopolabRun run_topolab(const std::string& image, uint32_t iterations) {
  MachineConfig config;
  config.image = image;
  config.append = append_for(iterations);
  config.time_limit_seconds = 1000;
  Machine machine(config, [](uint8_t) {});
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

double run_raw_unicorn(const std::string& image, uint32_t iterations) {
  GuestRam ram(128 << 20);
  MultibootBoot boot = load_multiboot(ram, read_image_file(image, ram.size()),
                                      std::filesystem::path(image).filename().string(), append_for(iterations), {});
  uc_engine* uc = nullptr;
  check(uc_open(UC_ARCH_X86, UC_MODE_32, &uc), "uc_open");
  check(uc_mem_map_ptr(uc, 0, ram.size(), UC_PROT_ALL, ram.data()), "uc_mem_map_ptr");
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

double run_qemu_icount(const std::string& image, uint32_t iterations) {
  std::string cmd = fmt::format(
      "qemu-system-x86_64 -accel tcg,thread=single -icount shift=0 -kernel '{}' -append '{}' -display none -nic none "
      "-no-reboot -serial null -device isa-debug-exit,iobase=0xf4,iosize=4 -m 128 >/dev/null 2>&1",
      image, append_for(iterations));
  auto start = std::chrono::steady_clock::now();
  int status = std::system(cmd.c_str());
  double elapsed = seconds_since(start);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 1)  // guest 0 -> (0 << 1) | 1
    throw std::runtime_error(fmt::format("qemu exited with {}: {}", status, cmd));
  return elapsed;
}

}  // namespace
}  // namespace topolab

int main(int argc, char** argv) {
  using namespace topolab;
  if (argc < 2) {
    fmt::print(stderr, "usage: bench_compute IMAGE [iterations]\n");
    return 2;
  }
  std::string image = argv[1];
  uint32_t iterations = argc > 2 ? static_cast<uint32_t>(std::strtoul(argv[2], nullptr, 10)) : 20'000'000;
  try {
    for (const char* variant : {"stores=on", "stores=off"}) {
      g_variant = variant;
      std::vector<double> raw, ours, qemu, qemu_boot;
      uint64_t instructions = 0;
      for (int i = 0; i < kRepeats; ++i) {
        fmt::print(stderr, "{}: round {}/{}\r", variant, i + 1, kRepeats);
        raw.push_back(run_raw_unicorn(image, iterations));
        TopolabRun t = run_topolab(image, iterations);
        ours.push_back(t.seconds);
        instructions = t.instructions;
        qemu.push_back(run_qemu_icount(image, iterations));
        qemu_boot.push_back(run_qemu_icount(image, kBootIterations));
      }
      double q = std::max(median(qemu) - median(qemu_boot), 1e-9);
      double mips_raw = instructions / median(raw) / 1e6, mips_ours = instructions / median(ours) / 1e6;
      double mips_qemu = instructions / q / 1e6;
      fmt::print("compute_loop {}, {} iterations = {} guest instructions; median of {} interleaved rounds\n", variant,
                 iterations, instructions, kRepeats);
      fmt::print("  {:<44} {:>9} {:>9}\n", "", "seconds", "MIPS");
      fmt::print("  {:<44} {:>9.3f} {:>9.0f}\n", "raw Unicorn (no hooks but I/O)   ", median(raw), mips_raw);
      fmt::print("  {:<44} {:>9.3f} {:>9.0f}\n", "topolab run", median(ours), mips_ours);
      fmt::print("  {:<44} {:>9.3f} {:>9.0f}   (boot {:.3f} s subtracted)\n",
                 "QEMU 7.2 -accel tcg,thread=single -icount 0", q, mips_qemu, median(qemu_boot));
      fmt::print("  topolab / raw Unicorn: {:.0f}%   topolab / QEMU icount: {:.2f}x\n\n", 100 * mips_ours / mips_raw,
                 mips_ours / mips_qemu);
      std::fflush(stdout);
    }
  } catch (const std::exception& e) {
    fmt::print(stderr, "bench_compute: {}\n", e.what());
    return 1;
  }
  return 0;
}
