// SPDX-License-Identifier: GPL-2.0-or-later
#include "cli/run_command.h"
#include "cli/gdb_run.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "base/memory_map.h"
#include "cli/command_line.h"
#include "cli/output_files.h"
#include "cli/qemu_command.h"
#include "cli/snapshot_run.h"
#include "emu/machine.h"
#include "emu/unicorn_vcpu.h"
#include "report/html_report.h"
#include "report/run_report.h"
#include "report/svg_report.h"

namespace topolab::cli {

namespace {

// The end-of-run report: the table on stderr (stdout is the guest's serial
// port), JSON to --report-file or stderr.
void write_report(const RunOptions& o, const Machine& machine, const RunResult& r) {
  if (o.info_lapic) fmt::print(stderr, "{}", machine.describe_apics());
  if (!o.svg_dir.empty()) {
    make_output_dir(o.svg_dir, "--svg");
    auto write = [&](const std::string& name, const std::string& text) {
      const std::filesystem::path path = std::filesystem::path(o.svg_dir) / name;
      write_text_file(path, text, fmt::format("--svg {}: cannot write {}", o.svg_dir, path.string()));
    };
    write("ipi-heatmap.svg", ipi_heatmap_svg(machine.stats(), machine.topology()));
    write("topology.svg", topology_svg(machine.cpuid()));
  }
  if (o.report == "none") return;
  RunReportInput in{o.machine, machine.stats(), r, machine.window()};
  std::string text = o.report == "json" ? format_run_json(in) : format_run_table(in);
  if (o.report_file.empty()) {
    fmt::print(stderr, "{}", text);
    return;
  }
  write_text_file(o.report_file, text, fmt::format("--report-file {}: cannot write it", o.report_file));
}

// Where COM1's bytes go: stdout, or a file named by -serial file:PATH.
class SerialSink {
 public:
  explicit SerialSink(const std::string& spec) {
    if (spec == "stdio") {
      out_ = stdout;
    } else if (spec == "none") {
      // -serial none: the bytes go nowhere.
    } else if (spec.starts_with("file:") && spec.size() > 5) {
      out_ = std::fopen(spec.c_str() + 5, "wb");
      if (!out_) throw ConfigError(fmt::format("-serial {}: cannot open the file", spec));
      owned_ = true;
    } else {
      throw ConfigError(fmt::format("-serial {}: expected stdio or file:PATH", spec));
    }
  }
  ~SerialSink() {
    if (owned_) std::fclose(out_);
    else if (out_) std::fflush(out_);
  }
  SerialSink(const SerialSink&) = delete;
  SerialSink& operator=(const SerialSink&) = delete;
  void put(uint8_t byte) {
    if (out_) std::fputc(byte, out_);
    watch_for_panic(byte);
  }
  // The first "Kernel panic - not syncing: ..." a Linux guest printed, from
  // those words on: whatever the run's end (a reboot with panic=-1, a halt,
  // the time limit), it is what failed.
  const std::string& kernel_panic() const { return panic_; }

 private:
  static constexpr size_t kMaxLine = 4096;
  void watch_for_panic(uint8_t byte) {
    if (!panic_.empty()) return;
    if (byte != '\n' && byte != '\r') {
      if (line_.size() < kMaxLine) line_.push_back(static_cast<char>(byte));
      return;
    }
    if (size_t at = line_.find("Kernel panic - not syncing"); at != std::string::npos) panic_ = line_.substr(at);
    line_.clear();
  }

  std::FILE* out_ = nullptr;
  bool owned_ = false;
  std::string line_, panic_;
};

// The exit status for a run's outcome. With the QEMU command line, QEMU's:
// (value << 1) | 1 from isa-debug-exit; 0 for a triple fault, which QEMU
// takes as a reset and, with -no-reboot, as the end; topolab's own statuses
// for what QEMU would not end on (a guest hung for good, the time limit,
// what topolab does not model). Otherwise the guest's debug-exit value, or
// (value << 1) | 1 with --exit-status qemu; a value the status cannot carry
// (or one of topolab's own) must not turn into a pass by wrapping (256
// would exit 0). gdb's W reply carries it too.
int exit_status_of(const RunOptions& o, const RunResult& r) {
  switch (r.outcome) {
    case RunResult::Outcome::GuestExit: {
      const uint32_t v = *r.guest_value;
      if (o.qemu || o.exit_status == "qemu") return static_cast<int>(((v << 1) | 1) & 0xff);
      return v >= kExitTimeLimit ? kExitGuestFailed : static_cast<int>(v);
    }
    case RunResult::Outcome::BudgetExhausted: return kExitTimeLimit;
    case RunResult::Outcome::Hung:
    case RunResult::Outcome::Crashed: return o.qemu && r.triple_fault ? 0 : kExitGuestFailed;
    case RunResult::Outcome::Shutdown: return 0;  // a guest that powers the machine off (ACPI S5, reset, port 0x8900)
  }
  return kExitGuestFailed;
}

// With the QEMU command line: quiet for what QEMU is quiet about.
void print_qemu_outcome(const RunOptions& o, const RunResult& r, const std::string& after) {
  switch (r.outcome) {
    case RunResult::Outcome::GuestExit:
    case RunResult::Outcome::Shutdown: return;
    case RunResult::Outcome::BudgetExhausted: fmt::print(stderr, "topolab: {}\n", r.diagnosis); return;
    case RunResult::Outcome::Hung:
    case RunResult::Outcome::Crashed:
      if (r.triple_fault) {
        fmt::print(stderr, "topolab: {}, {}; {}\n", r.diagnosis, after,
                   o.no_reboot ? "the machine shuts down (-no-reboot)"
                               : "QEMU would reset the machine; topolab ends the run");
        return;
      }
      fmt::print(stderr, "topolab: {}, {}\n", r.diagnosis, after);
      return;
  }
}

// The one line that says how the run ended; its exit status.
int report_outcome(const RunOptions& o, const RunResult& r) {
  std::string after = fmt::format("after {} instructions, {:.6f} s of virtual time (quantum {})", r.instructions,
                                  r.virtual_ns / 1e9, o.machine.quantum);
  if (o.qemu) {
    print_qemu_outcome(o, r, after);
    return exit_status_of(o, r);
  }
  switch (r.outcome) {
    case RunResult::Outcome::GuestExit: {
      const uint32_t v = *r.guest_value;
      if (o.exit_status != "qemu" && v >= kExitTimeLimit)
        fmt::print(stderr, "topolab: guest exit {} does not fit the exit status (0-123), {}\n", v, after);
      else
        fmt::print(stderr, "topolab: guest exit {} {}\n", v, after);
      break;
    }
    case RunResult::Outcome::BudgetExhausted: fmt::print(stderr, "topolab: {}\n", r.diagnosis); break;
    case RunResult::Outcome::Hung:
    case RunResult::Outcome::Crashed:
    case RunResult::Outcome::Shutdown: fmt::print(stderr, "topolab: {}, {}\n", r.diagnosis, after); break;
  }
  return exit_status_of(o, r);
}

// The run's page: written whatever the outcome (a hung run's timeline
// shows where it stopped).
void write_run_page(HtmlFile& html, const RunOptions& o, const Machine& machine, const RunResult& r) {
  std::string outcome = fmt::format("{}{}: {} instructions, {:.6f} s of virtual time (quantum {})", to_string(r.outcome),
                                    r.guest_value ? fmt::format(" {}", *r.guest_value) : "", r.instructions,
                                    r.virtual_ns / 1e9, o.machine.quantum);
  if (!r.diagnosis.empty()) outcome += "; " + r.diagnosis;
  RunReportInput in{o.machine, machine.stats(), r, machine.window()};
  html.write(run_html_page({o.command, machine.topology(), machine.cpuid(), machine.stats(), machine.activity(), outcome,
                            format_run_table(in), &o.machine.numa}));
}

}  // namespace

void RunOptions::configure() {
  ParsedMachine m = parse_machine_and_warn(spec);
  machine.topology = std::move(m.topology);
  machine.cpu = std::move(m.cpu);
  machine.machine_options = std::move(m.machine_options);
  if (m.ram_mib < kMinRamMib)
    throw ConfigError(fmt::format("-m {}: topolab's guest RAM is at least {} MiB", spec.memory, kMinRamMib));
  machine.ram_mib = m.ram_mib;
  machine.numa = std::move(m.numa);
  machine.cost = CostModel::parse(cost_spec, CostModel::defaults());
}

int run_machine(const RunOptions& o) {
  HtmlFile html(o.html);
  SerialSink serial(o.serial);
  std::unique_ptr<Machine> owned;
  RunResult r;
  const auto status_of = [&o](const RunResult& result) { return exit_status_of(o, result); };
  RunSnapshots snapshots(o.snapshot_at, o.resume);
  const auto make_machine = [&](std::function<void(uint8_t)> out) {
    out = snapshots.record_output(std::move(out));
    auto m = std::make_unique<Machine>(o.machine, out, unicorn_vcpu_factory());
    if (o.trace) m->set_trace(stderr);
    snapshots.prepare(*m, out);
    return m;
  };
  if (o.monitor == "stdio" && o.gdb.empty() && !o.gdb_wait) {
    DebuggedRun monitored = run_with_stdio_monitor([&] { return make_machine([&serial](uint8_t b) { serial.put(b); }); },
                                                   status_of);
    owned = std::move(monitored.machine);
    r = monitored.result;
  } else if (o.gdb.empty() && !o.gdb_wait) {
    owned = make_machine([&serial](uint8_t b) { serial.put(b); });
    r = owned->run();
  } else {
    ReplayedOutput output([&serial](uint8_t b) { serial.put(b); });
    const GdbRunOptions gdb{.endpoint = parse_gdb_endpoint(o.gdb.empty() ? "1234" : o.gdb, "--gdb"),
                            .wait_for_client = o.gdb_wait,
                            .exit_status = status_of,
                            .checkpoint_every = o.checkpoint_every};
    DebuggedRun debugged =
        run_with_gdb([&] { return make_machine([&output](uint8_t b) { output.put(b); }); }, output, gdb);
    owned = std::move(debugged.machine);
    r = debugged.result;
  }
  Machine& machine = *owned;
  std::fflush(stdout);
  int status = report_outcome(o, r);
  if (!serial.kernel_panic().empty()) {
    fmt::print(stderr, "topolab: the guest's kernel panicked: {}\n", serial.kernel_panic());
    status = std::max(status, kExitGuestFailed);
  }
  if (const std::optional<std::string> why = snapshots.missed(r)) {
    fmt::print(stderr, "topolab: {}\n", *why);
    status = std::max(status, kExitBadInput);
  }
  // A run that ended cleanly gets the full report after its closing line; a
  // failure stays one line (and still gets a report file when asked for).
  if (r.outcome == RunResult::Outcome::GuestExit && status < kExitTimeLimit) {
    write_report(o, machine, r);
  } else if (!o.report_file.empty()) {
    RunOptions file_only = o;
    file_only.info_lapic = false;
    write_report(file_only, machine, r);
  }
  if (html.wanted()) write_run_page(html, o, machine, r);
  return status;
}

void add_run_tuning_options(CLI::App* cmd, RunOptions& run) {
  cmd->add_option("--time-limit", run.machine.time_limit_seconds, "stop the guest after this much virtual time (s)")
      ->capture_default_str();
  cmd->add_option("--quantum", run.machine.quantum, "instructions per scheduling slice")
      ->check(CLI::Range(uint64_t{1}, uint64_t{1'000'000'000}))
      ->capture_default_str();
  add_spin_skip_option(cmd, run.machine.spin_skip);
  cmd->add_flag("--trace", run.trace, "print every executed instruction to stderr");
  cmd->add_option("--report", run.report, "end-of-run report on stderr: table, json or none")
      ->check(CLI::IsMember({"table", "json", "none"}))
      ->capture_default_str();
  cmd->add_option("--report-file", run.report_file, "write the report to this file instead");
  cmd->add_option("--svg", run.svg_dir, "write ipi-heatmap.svg and topology.svg into this directory");
  cmd->add_option("--cost", run.cost_spec,
                  "cost model: key=value,... over the defaults (docs/cost_model.md), or none,... for an ideal "
                  "machine; e.g. halt_poll_ns=0,ipiv=1");
  cmd->add_flag("--info-lapic", run.info_lapic, "dump every local APIC's state at the end, like QEMU's info lapic");
  cmd->add_option("--snapshot-at", run.snapshot_at,
                  "write a snapshot of the whole machine to FILE once virtual time reaches VTIME (250ms, 1.5s...); "
                  "docs/debugging.md")
      ->expected(2)
      ->type_name("VTIME FILE");
  cmd->add_option("--resume", run.resume,
                  "start from a snapshot FILE that --snapshot-at wrote, with the same command line");
  cmd->add_option("--checkpoint-every", run.checkpoint_every,
                  "with --gdb: instructions between the in-memory snapshots reverse execution replays from (0: none)")
      ->capture_default_str();
  cmd->add_option("--html", run.html,
                  "also write one self-contained HTML page: topology, caches, leaves, IPI heatmap, wake causes, "
                  "timeline");
}

CLI::App* add_run_command(CLI::App& app, RunOptions& run) {
  CLI::App* run_cmd = app.add_subcommand("run", "boot a Multiboot image (as qemu-system-x86_64 -kernel would)");
  run_cmd->add_option("image", run.machine.image, "the Multiboot image (ELF32)")->required();
  add_machine_options(run_cmd, run.spec);
  run_cmd->add_option("--append", run.machine.append, "the kernel command line the guest reads");
  run_cmd->add_option("--initrd", run.machine.initrd, "Multiboot modules: FILE[ ARGS][,FILE[ ARGS]...]")->delimiter(',');
  run_cmd->add_option("--serial", run.serial, "where COM1 goes: stdio or file:PATH")->capture_default_str();
  run_cmd->add_option("--exit-status", run.exit_status,
                      "plain: exit with the guest's debug-exit value; qemu: with (value << 1) | 1 as QEMU does")
      ->check(CLI::IsMember({"plain", "qemu"}))
      ->capture_default_str();
  add_run_tuning_options(run_cmd, run);
  run_cmd->add_option("--gdb", run.gdb,
                      "listen for gdb on PORT or HOST:PORT (127.0.0.1 unless a host is named); docs/debugging.md");
  run_cmd->add_flag_callback("-s", [&run] { run.gdb = "1234"; }, "as QEMU: --gdb 1234");
  run_cmd->add_flag("-S", run.gdb_wait, "as QEMU: run no instruction before gdb has attached (default port 1234)");
  run_cmd->add_option("--monitor", run.monitor,
                      "stdio: QEMU's monitor on stdin (info cpus|lapic|ioapic|topology|ipis|time, xp; quit)")
      ->check(CLI::IsMember({"stdio", "none"}));
  return run_cmd;
}

}  // namespace topolab::cli
