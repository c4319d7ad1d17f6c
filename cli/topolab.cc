// SPDX-License-Identifier: GPL-2.0-or-later
// topolab: what topology does a guest see, and what does that do to its IPI
// and HLT traffic? The command line; all real work lives in emu/, devices/
// and firmware/.
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <sys/prctl.h>

#include "base/memory_map.h"
#include "lab/consumer_views.h"
#include "model/cpuid.h"
#include "lab/cpuid_dump.h"
#include "lab/linux_sysfs.h"
#include "report/cpuid_report.h"
#include "report/html_report.h"
#include "emu/machine.h"
#include "report/run_report.h"
#include "report/svg_report.h"
#include "emu/unicorn_vcpu.h"
#include "cli/check_command.h"
#include "cli/data_paths.h"
#include "lab/sweep.h"
#include "lab/experiments.h"
#include "lab/runner.h"
#include "cli/qemu_command.h"

namespace {

using namespace topolab;

// The configuration of the demo a bare `topolab` runs: the machine of the
// l3-cache debate, 16 vCPUs as 1 socket x 8 cores x 2 threads.
constexpr const char* kDemoSmp = "16,sockets=1,cores=8,threads=2";
constexpr const char* kDemoCpu = "Skylake-Server,l3-cache=on";

// QEMU spells long options with one dash (-smp, -cpu, -append); CLI11 would
// read "-smp" as "-s -m -p". Rewrite the QEMU spellings we accept to "--",
// but never the value that follows one (-append "-smp" stays a value).
std::vector<std::string> qemu_style_to_cli11(int argc, char** argv) {
  static const std::string kQemuLong[] = {"-smp", "-cpu", "-machine", "-append", "-initrd", "-serial"};
  std::vector<std::string> args;
  bool value_next = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    // cpuid --diff "-smp A -cpu X" "-smp B -cpu Y": values that start with
    // a dash, which CLI11 would read as options; "--diff=VALUE" keeps them.
    if (!value_next && a == "--diff" && i + 2 < argc) {
      args.push_back(a + "=" + argv[++i]);
      args.push_back(a + "=" + argv[++i]);
      continue;
    }
    bool option = false;
    if (!value_next)
      for (const std::string& q : kQemuLong)
        if (a == q || a.starts_with(q + "=")) {
          option = a == q;  // "-smp=4" carries its value
          a = "-" + a;
        }
    value_next = option;
    args.push_back(a);
  }
  return {args.rbegin(), args.rend()};  // CLI11 takes them reversed
}

// The command line an HTML page names: what the user typed, as "topolab
// ...", without the --html option itself (the page is the same wherever it
// is written). Arguments a shell would split or expand are quoted.
std::string command_for_page(int argc, char** argv) {
  std::string out = "topolab";
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--html") {
      ++i;
      continue;
    }
    if (a.starts_with("--html=")) continue;
    if (a.empty() || a.find_first_of(" \t\n'\"\\$`*?;&|<>()[]{}!#~") != std::string::npos) {
      std::string quoted = "'";
      for (char c : a) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
      a = quoted + "'";
    }
    out += " " + a;
  }
  return out;
}

// Where --html goes: opened before the work starts, so that a path that
// cannot be written fails at once rather than after a long run.
class HtmlFile {
 public:
  explicit HtmlFile(const std::string& path) : path_(path) {
    if (path_.empty()) return;
    file_ = std::fopen(path_.c_str(), "w");
    if (!file_) throw ConfigError(fmt::format("--html {}: cannot write it ({})", path_, std::strerror(errno)));
  }
  // A page never written (the work failed first) leaves no empty file behind.
  ~HtmlFile() {
    if (!file_) return;
    std::fclose(file_);
    std::remove(path_.c_str());
  }
  HtmlFile(const HtmlFile&) = delete;
  HtmlFile& operator=(const HtmlFile&) = delete;
  bool wanted() const { return file_ != nullptr; }
  void write(const std::string& page) {
    const bool ok = std::fwrite(page.data(), 1, page.size(), file_) == page.size();
    const bool closed = std::fclose(file_) == 0;
    file_ = nullptr;
    if (!ok || !closed) throw ConfigError(fmt::format("--html {}: cannot write it", path_));
  }

 private:
  std::string path_;
  std::FILE* file_ = nullptr;
};

// Exit statuses that are topolab's own; a guest's isa-debug-exit value below
// kExitTimeLimit is the status otherwise (README, "Exit status").
constexpr int kExitTimeLimit = 124;
constexpr int kExitBadInput = 125;
constexpr int kExitGuestFailed = 126;
constexpr int kExitInternalError = 70;  // sysexits' EX_SOFTWARE: a topolab bug

// -smp and -cpu as typed; parsed once, into the model's types (parse()).
struct TopologyFlags {
  std::string smp = "1";  // QEMU's defaults
  std::string cpu = "qemu64";
  std::string machine;    // QEMU -machine: only smp-cache changes CPUID
  MachineOptions machine_options() const { return machine.empty() ? MachineOptions{} : parse_machine(machine); }
  CpuidModel model() const {
    CpuConfig config = parse_cpu(cpu);
    warn_dropped_features(config);
    return CpuidModel(Topology::parse(smp), config, machine_options());
  }
  void parse_into(MachineConfig& config) const {
    config.topology = Topology::parse(smp);
    config.cpu = parse_cpu(cpu);
    config.machine_options = machine_options();
    warn_dropped_features(config.cpu);
  }
  // What -cpu asked for and does not get, as QEMU's TCG warns of it.
  static void warn_dropped_features(const CpuConfig& cpu) {
    for (const std::string& why : cpu.dropped_requests) fmt::print(stderr, "topolab: warning: -cpu {}: {}\n", cpu.arg, why);
  }
};

struct RunOptions {
  MachineConfig machine;
  TopologyFlags flags;    // -smp, -cpu, -machine as typed: parsed into `machine`
  std::string cost_spec;  // --cost as typed: parsed into `machine.cost`
  std::string serial = "stdio";
  std::string exit_status = "plain";
  std::string report = "table";
  std::string report_file;
  std::string svg_dir;
  bool info_lapic = false;
  bool trace = false;
  std::string html;     // --html FILE
  std::string command;  // what the page names
  // The QEMU command line (cli/qemu_command.h): QEMU's exit statuses, and
  // nothing on stderr for a run that ended as the guest asked.
  bool qemu = false;
  bool no_reboot = false;  // -no-reboot
};

// The end-of-run report: the table on stderr (stdout is the guest's serial
// port), JSON to --report-file or stderr.
void write_report(const RunOptions& o, const Machine& machine, const RunResult& r) {
  if (o.info_lapic) fmt::print(stderr, "{}", machine.describe_apics());
  if (!o.svg_dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(o.svg_dir, ec);
    auto write = [&](const std::string& name, const std::string& text) {
      std::string path = (std::filesystem::path(o.svg_dir) / name).string();
      std::FILE* f = std::fopen(path.c_str(), "w");
      if (!f || std::fwrite(text.data(), 1, text.size(), f) != text.size() || std::fclose(f) != 0)
        throw ConfigError(fmt::format("--svg {}: cannot write {}", o.svg_dir, path));
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
  std::FILE* f = std::fopen(o.report_file.c_str(), "w");
  if (!f || std::fwrite(text.data(), 1, text.size(), f) != text.size() || std::fclose(f) != 0)
    throw ConfigError(fmt::format("--report-file {}: cannot write it", o.report_file));
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

// QEMU's exit status for a run's outcome: (value << 1) | 1 from
// isa-debug-exit, quietly, as QEMU; 0 for a triple fault, which QEMU takes
// as a reset and, with -no-reboot, as the end (topolab still says which
// fault it was); topolab's own statuses for what QEMU would not end on (a
// guest hung for good, the time limit, what topolab does not model).
int report_qemu_outcome(const RunOptions& o, const RunResult& r, const std::string& after) {
  switch (r.outcome) {
    case RunResult::Outcome::GuestExit: return static_cast<int>(((*r.guest_value << 1) | 1) & 0xff);
    case RunResult::Outcome::BudgetExhausted:
      fmt::print(stderr, "topolab: {}\n", r.diagnosis);
      return kExitTimeLimit;
    case RunResult::Outcome::Hung:
    case RunResult::Outcome::Crashed:
      if (r.triple_fault) {
        fmt::print(stderr, "topolab: {}, {}; {}\n", r.diagnosis, after,
                   o.no_reboot ? "the machine shuts down (-no-reboot)"
                               : "QEMU would reset the machine; topolab ends the run");
        return 0;
      }
      fmt::print(stderr, "topolab: {}, {}\n", r.diagnosis, after);
      return kExitGuestFailed;
    case RunResult::Outcome::Shutdown:
      return 0;  // as QEMU, quietly
  }
  return kExitGuestFailed;
}

// The exit status for a run's outcome, and the one line that says it.
int report_outcome(const RunOptions& o, const RunResult& r) {
  std::string after = fmt::format("after {} instructions, {:.6f} s of virtual time (quantum {})", r.instructions,
                                  r.virtual_ns / 1e9, o.machine.quantum);
  if (o.qemu) return report_qemu_outcome(o, r, after);
  switch (r.outcome) {
    case RunResult::Outcome::GuestExit: {
      uint32_t v = *r.guest_value;
      if (o.exit_status == "qemu") {
        fmt::print(stderr, "topolab: guest exit {} {}\n", v, after);
        return static_cast<int>(((v << 1) | 1) & 0xff);
      }
      // A value the status cannot carry (or one of topolab's own) must not
      // turn into a pass by wrapping: 256 would exit 0.
      if (v >= kExitTimeLimit) {
        fmt::print(stderr, "topolab: guest exit {} does not fit the exit status (0-123), {}\n", v, after);
        return kExitGuestFailed;
      }
      fmt::print(stderr, "topolab: guest exit {} {}\n", v, after);
      return static_cast<int>(v);
    }
    case RunResult::Outcome::BudgetExhausted:
      fmt::print(stderr, "topolab: {}\n", r.diagnosis);
      return kExitTimeLimit;
    case RunResult::Outcome::Hung:
    case RunResult::Outcome::Crashed:
      fmt::print(stderr, "topolab: {}, {}\n", r.diagnosis, after);
      return kExitGuestFailed;
    case RunResult::Outcome::Shutdown:
      // A guest that powers the machine off (ACPI S5, reset, port 0x8900).
      fmt::print(stderr, "topolab: {}, {}\n", r.diagnosis, after);
      return 0;
  }
  return kExitGuestFailed;
}

// The run's page: written whatever the outcome (a hung run's timeline
// shows where it stopped).
void write_run_page(HtmlFile& html, const RunOptions& o, const Machine& machine, const RunResult& r) {
  std::string outcome = fmt::format("{}{}: {} instructions, {:.6f} s of virtual time (quantum {})", to_string(r.outcome),
                                    r.guest_value ? fmt::format(" {}", *r.guest_value) : "", r.instructions,
                                    r.virtual_ns / 1e9, o.machine.quantum);
  if (!r.diagnosis.empty()) outcome += "; " + r.diagnosis;
  RunReportInput in{o.machine, machine.stats(), r, machine.window()};
  html.write(run_html_page({o.command, machine.cpuid(), machine.stats(), machine.activity(), outcome,
                            format_run_table(in)}));
}

int run_machine(const RunOptions& o) {
  HtmlFile html(o.html);
  SerialSink serial(o.serial);
  Machine machine(o.machine, [&serial](uint8_t b) { serial.put(b); }, unicorn_vcpu_factory());
  if (o.trace) machine.set_trace(stderr);
  RunResult r = machine.run();
  std::fflush(stdout);
  int status = report_outcome(o, r);
  if (!serial.kernel_panic().empty()) {
    fmt::print(stderr, "topolab: the guest's kernel panicked: {}\n", serial.kernel_panic());
    status = std::max(status, kExitGuestFailed);
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

struct CpuidOptions {
  TopologyFlags flags;
  std::string format = "table";
  std::string output;
  std::string html;
  std::string command;
  std::vector<std::string> diff;  // two "-smp ... -cpu ..." machines
};

int run_cpuid(const CpuidOptions& o) {
  if (!o.diff.empty()) return run_cpuid_diff(o.diff);
  const CpuidModel model = o.flags.model();
  if (o.format == "hwloc" && o.output.empty()) throw ConfigError("cpuid --format hwloc needs --output DIR");
  HtmlFile html(o.html);
  if (html.wanted()) html.write(cpuid_html_page(model, o.command));
  if (o.format == "hwloc") {
    write_hwloc_cpuid_dir(model, o.output);
    fmt::print("wrote {} (read it with: HWLOC_CPUID_PATH={} HWLOC_COMPONENTS=x86,stop lstopo-no-graphics)\n", o.output,
               o.output);
    return 0;
  }
  std::string text = o.format == "raw"     ? format_cpuid_raw(model)
                     : o.format == "linux" ? format_linux_sysfs(decode_as(Consumer::Linux6, raw_cpuid_of(model, "")))
                                           : format_topology_table(model);
  if (o.output.empty()) {
    std::fwrite(text.data(), 1, text.size(), stdout);
    return 0;
  }
  std::FILE* f = std::fopen(o.output.c_str(), "w");
  if (!f || std::fwrite(text.data(), 1, text.size(), f) != text.size() || std::fclose(f) != 0)
    throw ConfigError(fmt::format("cannot write {}", o.output));
  return 0;
}

inline constexpr uint64_t kLinuxExperimentQuantum = 10'000;
inline constexpr unsigned kLinuxExperimentRepeats = 2;

struct ExperimentCli {
  ExperimentOptions options;
  std::string format = "table";
  std::string cost_spec;
  std::string html;
  std::string command;
  // A sweep in pieces (lab/sweep.h): list the runs, run one
  // (-1: all of them), or merge their case files.
  bool list_cases = false;
  long case_index = -1;
  std::string merge_dir;
};

void write_text_file(const std::filesystem::path& path, const std::string& text) {
  std::FILE* f = std::fopen(path.c_str(), "w");
  if (!f || std::fwrite(text.data(), 1, text.size(), f) != text.size() || std::fclose(f) != 0)
    throw ConfigError(fmt::format("cannot write {}", path.string()));
}

void make_output_dir(const ExperimentOptions& o) {
  if (o.output_dir.empty()) return;
  std::error_code ec;
  std::filesystem::create_directories(o.output_dir, ec);
  if (ec) throw ConfigError(fmt::format("--output {}: {}", o.output_dir, ec.message()));
}

// Runs `cases`; a guest that failed is one line on stderr and no results.
std::optional<std::vector<CaseMeasurement>> run_cases(const ExperimentOptions& o,
                                                      const std::vector<ExperimentCase>& cases) {
  try {
    return run_experiment_cases(o, cases, unicorn_vcpu_factory(), stderr);
  } catch (const InputError&) {
    throw;
  } catch (const std::runtime_error& e) {
    fmt::print(stderr, "topolab: experiment {}: {}\n", o.name, e.what());
    return std::nullopt;
  }
}

// The tables (or JSON) on stdout, results.json, results.txt and the charts
// into --output: the same for a run in one piece and for a merge.
void write_experiment_results(const ExperimentOptions& o, const std::vector<CaseMeasurement>& results) {
  const std::string tables = format_experiment_tables(o, results);
  const std::string json = format_experiment_json(o, results);
  fmt::print("{}", o.json ? json : tables);
  if (!o.output_dir.empty()) {
    const std::filesystem::path dir(o.output_dir);
    write_text_file(dir / "results.json", json);
    write_text_file(dir / "results.txt", tables);
    for (const auto& [name, svg] : experiment_charts(o, results)) write_text_file(dir / name, svg);
    fmt::print(stderr, "wrote {}\n", (dir / "results.json").string());
  }
}

// `--case K`: one run, its case file into --output (written aside and
// renamed, so a job killed halfway leaves no half a file), else stdout.
int run_one_case(const ExperimentOptions& o, const std::vector<ExperimentCase>& cases, long index) {
  if (index < 0 || static_cast<size_t>(index) >= cases.size())
    throw ConfigError(fmt::format("--case {}: experiment {} has {} cases with these options (0-{}; see --list-cases)",
                                  index, o.name, cases.size(), cases.size() - 1));
  const ExperimentCase& spec = cases[index];
  fmt::print(stderr, "topolab experiment {}: case {} of {}\n", o.name, index, cases.size());
  std::optional<std::vector<CaseMeasurement>> result = run_cases(o, {spec});
  if (!result) return kExitGuestFailed;
  const std::string text = format_case_file(o, cases.size(), index, result->front());
  if (o.output_dir.empty()) {
    fmt::print("{}", text);
    return 0;
  }
  const std::filesystem::path path = std::filesystem::path(o.output_dir) / case_file_name(index);
  const std::filesystem::path partial = path.string() + ".partial";
  write_text_file(partial, text);
  std::error_code ec;
  std::filesystem::rename(partial, path, ec);
  if (ec) throw ConfigError(fmt::format("cannot write {}: {}", path.string(), ec.message()));
  fmt::print(stderr, "wrote {}\n", path.string());
  return 0;
}

// `topolab experiment NAME`: the tables (or JSON) on stdout, progress on
// stderr, results.json and the charts into --output; or one step of a sweep
// in pieces (--list-cases, --case, --merge).
int run_experiment(ExperimentCli& cli, const DataPaths& data) {
  ExperimentOptions& o = cli.options;
  if (o.name.empty()) {
    fmt::print("experiments (topolab experiment NAME):\n");
    for (const auto& [name, what] : experiment_names()) fmt::print("  {:<10} {}\n", name, what);
    return 0;
  }
  o.json = cli.format == "json";
  o.cost = CostModel::parse(cli.cost_spec, CostModel::defaults());
  if (o.sched_image.empty()) o.sched_image = (data.images / "sched.elf").string();
  if (o.guest == Guest::Linux) {
    if (o.name != "l3-cache") throw ConfigError(fmt::format("--guest linux: only the l3-cache experiment runs on Linux"));
    if (o.linux_dir.empty()) {
      if (data.linux_dir.empty())
        throw ConfigError(
            "--guest linux: no default directory for the Linux guest (HOME is not set): give --linux DIR");
      o.linux_dir = data.linux_dir.string();
    }
    for (const char* file : {"vmlinux", "initramfs.cpio"})
      if (!std::filesystem::exists(std::filesystem::path(o.linux_dir) / file))
        throw ConfigError(fmt::format("--guest linux: no {}/{} ({}{} fetches and builds the guest)", o.linux_dir,
                                      file, data.linux_guest_command,
                                      o.linux_dir == data.linux_dir.string() ? ""
                                                                             : fmt::format(" --dir {}", o.linux_dir)));
  }
  const std::vector<ExperimentCase> cases = experiment_cases(o);
  if (cli.list_cases) {
    fmt::print("{}", format_case_list(cases));
    return 0;
  }
  HtmlFile html(cli.html);
  if (!cli.merge_dir.empty()) {
    const std::vector<CaseMeasurement> results = read_case_files(o, cases, cli.merge_dir);
    fmt::print(stderr, "topolab experiment {}: merged {} case files from {}\n", o.name, cases.size(), cli.merge_dir);
    make_output_dir(o);
    write_experiment_results(o, results);
    if (html.wanted()) html.write(format_experiment_html(o, results, cli.command));
    return 0;
  }
  make_output_dir(o);
  if (cli.case_index >= 0) return run_one_case(o, cases, cli.case_index);
  fmt::print(stderr, "topolab experiment {}: {} machines, {} at a time\n", o.name, cases.size(), o.jobs);
  std::optional<std::vector<CaseMeasurement>> results = run_cases(o, cases);
  if (!results) return kExitGuestFailed;
  write_experiment_results(o, *results);
  if (html.wanted()) html.write(format_experiment_html(o, *results, cli.command));
  return 0;
}

// The default job: the 16-vCPU machine of the l3-cache debate as CPUID
// describes it, the topology_check guest reading it on the boot CPU, then
// the l3-cache experiment.
int run_demo(const DataPaths& data) {
  auto image = data.images / "topology_check.elf";
  fmt::print("== topolab cpuid -smp {} -cpu {}\n\n", kDemoSmp, kDemoCpu);
  std::fflush(stdout);
  CpuidModel model(Topology::parse(kDemoSmp), parse_cpu(kDemoCpu));
  std::string table = format_topology_table(model);
  std::fwrite(table.data(), 1, table.size(), stdout);
  RunOptions run;
  run.machine.topology = Topology::parse(kDemoSmp);
  run.machine.cpu = parse_cpu(kDemoCpu);
  run.machine.image = image.string();
  run.machine.append = "sockets=1 cores=8 threads=2 l3=on";
  fmt::print("\n== topolab run {} -smp {} -cpu {} -append \"{}\"\n\n", image.string(), kDemoSmp, kDemoCpu,
             run.machine.append);
  std::fflush(stdout);
  if (int status = run_machine(run); status != 0) return status;
  // What that topology does to a guest's IPI and HLT traffic.
  fmt::print("\n== topolab experiment l3-cache\n\n");
  std::fflush(stdout);
  ExperimentCli experiment;
  experiment.options.name = "l3-cache";
  return run_experiment(experiment, data);
}

// --spin-skip on|off (emu/pause_loop.h; off runs every instruction).
void add_spin_skip_option(CLI::App* app, bool& spin_skip) {
  app->add_option("--spin-skip", spin_skip,
                  "on: a vCPU spinning in a PAUSE loop at a fixed point skips to the next time anything it can "
                  "observe could change; off: every instruction runs")
      ->transform(CLI::CheckedTransformer(std::map<std::string, bool>{{"on", true}, {"off", false}}))
      ->default_str("on");
}

void add_topology_options(CLI::App* app, TopologyFlags& flags) {
  app->add_option("--smp", flags.smp,
                  "QEMU -smp: [cpus=]N[,maxcpus=,sockets=,dies=,clusters=1,modules=,cores=,threads=]; hybrid: "
                  "[sockets=,dies=,]p-modules=,p-cores=,p-threads=,e-modules=,e-cores=,e-threads=")
      ->capture_default_str();
  app->add_option("--cpu", flags.cpu,
                  "QEMU -cpu: MODEL[,l3-cache=on|off][,+x2apic|-x2apic][,+monitor|-monitor][,vendor=,level=,xlevel=]"
                  "[,x-force-cpuid-0x1f=on]")
      ->capture_default_str();
  app->add_option("--machine", flags.machine,
                  "QEMU -machine: [pc|q35,]smp-cache.N.cache=l1d|l1i|l2|l3,smp-cache.N.topology=core|module|die|socket");
}

// A sweep in pieces: what a cluster's scheduler runs (docs/sweeps.md).
void add_sweep_options(CLI::App* experiment_cmd, ExperimentCli& experiment) {
  CLI::Option* list = experiment_cmd->add_flag("--list-cases", experiment.list_cases,
                                               "print the runs, one a line: the index --case takes, and what it is");
  CLI::Option* one = experiment_cmd->add_option("--case", experiment.case_index,
                                                "run this one run of --list-cases; write case-K.json into --output "
                                                "(or the case file to stdout)")
                         ->check(CLI::NonNegativeNumber);
  CLI::Option* merge = experiment_cmd->add_option("--merge", experiment.merge_dir,
                                                  "build the tables, JSON and charts from the case-*.json files of "
                                                  "this directory, as a run in one piece (same options)");
  list->excludes(one)->excludes(merge);
  one->excludes(merge);
}

CLI::App* add_cpuid_command(CLI::App& app, CpuidOptions& cpuid) {
  CLI::App* cpuid_cmd = app.add_subcommand("cpuid", "show the CPUID leaves of a topology, with no guest running");
  add_topology_options(cpuid_cmd, cpuid.flags);
  cpuid_cmd
      ->add_option("--format", cpuid.format,
                   "table (for a person), raw (cpuid -r), hwloc (HWLOC_CPUID_PATH dir), linux (the sysfs topology "
                   "and cache lists Linux should show, as the Linux guest's /init prints them)")
      ->check(CLI::IsMember({"table", "raw", "hwloc", "linux"}))
      ->capture_default_str();
  cpuid_cmd->add_option("--output", cpuid.output, "write to this file (raw, table) or directory (hwloc)");
  cpuid_cmd->add_option("--html", cpuid.html, "also write one self-contained HTML page about the topology here");
  cpuid_cmd->add_option("--diff", cpuid.diff, "compare two machines: --diff \"-smp A -cpu X\" \"-smp B -cpu Y\"");
  return cpuid_cmd;
}

// The options of a run that are topolab's own, beyond what it boots: for
// `topolab run` and, through TOPOLAB_OPTS, for the QEMU command line.
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
  cmd->add_option("--html", run.html,
                  "also write one self-contained HTML page: topology, caches, leaves, IPI heatmap, wake causes, "
                  "timeline");
}

CLI::App* add_run_command(CLI::App& app, RunOptions& run) {
  CLI::App* run_cmd = app.add_subcommand("run", "boot a Multiboot image (as qemu-system-x86_64 -kernel would)");
  run_cmd->add_option("image", run.machine.image, "the Multiboot image (ELF32)")->required();
  add_topology_options(run_cmd, run.flags);
  run_cmd->add_option("-m", run.machine.ram_mib, "guest RAM in MiB")
      ->check(CLI::Range(uint64_t{2}, uint64_t{3072}))
      ->capture_default_str();
  run_cmd->add_option("--append", run.machine.append, "the kernel command line the guest reads");
  run_cmd->add_option("--initrd", run.machine.initrd, "Multiboot modules: FILE[ ARGS][,FILE[ ARGS]...]")->delimiter(',');
  run_cmd->add_option("--serial", run.serial, "where COM1 goes: stdio or file:PATH")->capture_default_str();
  run_cmd->add_option("--exit-status", run.exit_status,
                      "plain: exit with the guest's debug-exit value; qemu: with (value << 1) | 1 as QEMU does")
      ->check(CLI::IsMember({"plain", "qemu"}))
      ->capture_default_str();
  add_run_tuning_options(run_cmd, run);
  return run_cmd;
}

CLI::App* add_experiment_command(CLI::App& app, ExperimentCli& experiment) {
  CLI::App* experiment_cmd = app.add_subcommand(
      "experiment", "run an experiment of the l3-cache debate (l3-cache) or of halt polling (halt-poll); "
                    "no NAME lists them");
  experiment_cmd->add_option("name", experiment.options.name, "l3-cache or halt-poll");
  experiment_cmd->add_option("--output", experiment.options.output_dir,
                             "also write results.json, results.txt and the SVG charts into this directory");
  experiment_cmd->add_option("--format", experiment.format, "stdout: table or json")
      ->check(CLI::IsMember({"table", "json"}))
      ->capture_default_str();
  experiment_cmd
      ->add_option_function<std::string>(
          "--kernel", [&experiment](const std::string& name) { experiment.options.wake_list = *wake_list_named(name); },
          "the guest kernel's wake-list IPI: 2016 (RES, the seeds) or 6.x (CAL)")
      ->check(CLI::IsMember(std::vector<std::string>{kernel_name(WakeList::Res), kernel_name(WakeList::Cal)}))
      ->default_str(kernel_name(WakeList::Res));
  experiment_cmd->add_option("--jobs", experiment.options.jobs, "machines to run at once")
      ->check(CLI::Range(1u, 64u))
      ->capture_default_str();
  experiment_cmd->add_option("--quantum", experiment.options.quantum, "instructions per scheduling slice")
      ->check(CLI::Range(uint64_t{1}, uint64_t{1'000'000}))
      ->capture_default_str();
  add_spin_skip_option(experiment_cmd, experiment.options.spin_skip);
  experiment_cmd->add_option("--repeats", experiment.options.repeats,
                             "runs per case, at quanta around --quantum (the spread shows how robust a result is)")
      ->check(CLI::Range(1u, kMaxRepeats))
      ->capture_default_str();
  experiment_cmd->add_option("--scale", experiment.options.scale_percent, "workload size in percent")
      ->check(CLI::Range(1u, 10000u))
      ->capture_default_str();
  experiment_cmd->add_option("--cost", experiment.cost_spec, "cost model over the defaults, as for run");
  experiment_cmd->add_option("--image", experiment.options.sched_image,
                             "the sched kernel (default: sched.elf of topolab's guest images)");
  experiment_cmd
      ->add_option_function<std::string>(
          "--guest", [&experiment](const std::string& name) { experiment.options.guest = *guest_named(name); },
                   "sched (testcases/sched, the default) or linux (Debian's Linux 6.1 running perf bench sched; "
                   "l3-cache only)")
      ->check(CLI::IsMember(std::vector<std::string>{guest_name(Guest::Sched), guest_name(Guest::Linux)}))
      ->default_str(guest_name(Guest::Sched));
  experiment_cmd->add_option("--linux", experiment.options.linux_dir,
                             "the Linux guest's directory, as linux_guest.sh fills it (default: .deps/linux of "
                             "the checkout topolab was built in; installed, ~/.cache/topolab/linux or "
                             "$XDG_CACHE_HOME/topolab/linux)");
  experiment_cmd->add_option("--html", experiment.html,
                             "also write one self-contained HTML page with the charts, tables and machines");
  add_sweep_options(experiment_cmd, experiment);
  return experiment_cmd;
}

int print_models() {
  for (const auto& m : cpu_models()) fmt::print("{:<16} {}\n", m.name, m.description);
  fmt::print("\nproperties: {}, and +F / -F / F=on|off for F in:\n ", cpu_property_help());
  for (const auto& f : feature_flags()) fmt::print(" {}", f.name);
  fmt::print("\n");
  return 0;
}

// -m as the machine takes it, checked before the kernel is looked at.
void check_ram_size(uint64_t mib) {
  if (mib < 2 || mib > memory_map::kMaxRamMib)
    throw ConfigError(fmt::format("-m {}M: topolab's guest RAM is 2 to {} MiB (it stays below the 32-bit PCI hole; "
                                  "no RAM above 4 GiB yet)",
                                  mib, memory_map::kMaxRamMib));
}

// `topolab qemu ARGS` and build/qemu-system-x86_64 ARGS: QEMU 7.2's
// command line (cli/qemu_command.h), topolab's own options from
// TOPOLAB_OPTS. Every bad input ends with QEMU's status 1.
int run_qemu(const std::vector<std::string>& args) {
  const QemuCommand q = parse_qemu_command(args);
  switch (q.action) {
    case QemuCommand::Action::Run: break;
    case QemuCommand::Action::Version: fmt::print("{}", qemu_version_text(TOPOLAB_VERSION, engine_version())); return 0;
    case QemuCommand::Action::Help: fmt::print("{}", qemu_help_text(TOPOLAB_VERSION, engine_version())); return 0;
    case QemuCommand::Action::ListDevices: fmt::print("{}", qemu_device_list_text()); return 0;
    case QemuCommand::Action::ListCpus: return print_models();
    case QemuCommand::Action::ListMachines: fmt::print("{}", qemu_machine_list_text()); return 0;
    case QemuCommand::Action::ListAccelerators: fmt::print("{}", qemu_accelerator_list_text()); return 0;
  }
  // Line by line, as QEMU's stdio: a suite's timeout that kills the run
  // must not take the guest's last lines with it.
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  RunOptions run;
  run.qemu = true;
  run.no_reboot = q.no_reboot;
  run.report = "none";  // QEMU prints nothing of its own; TOPOLAB_OPTS --report asks for it
  // A suite's tests wait on timers for seconds of virtual time; the run is
  // still bounded (--time-limit in TOPOLAB_OPTS changes it).
  run.machine.time_limit_seconds = 60.0;
  // Tests that ping-pong between vCPUs without PAUSE (kvm-unit-tests'
  // 30,000 NMIs of nmi-after-sti) cost a quantum per round trip: 2,000
  // instructions keep them within the suite's timeouts (docs/kvm-unit-tests.md).
  run.machine.quantum = 2'000;
  run.flags.smp = q.smp;
  run.flags.cpu = q.cpu;
  run.flags.machine = q.machine_options;
  run.machine.image = q.kernel;
  run.machine.append = q.append;
  run.machine.initrd = q.initrd;
  run.machine.ram_mib = q.ram_mib;
  run.machine.devices = q.devices;
  run.serial = q.serial;

  const char* opts = std::getenv("TOPOLAB_OPTS");
  if (opts && *opts) {
    const char* test = std::getenv("TESTNAME");
    const std::string name = test && *test ? test : std::filesystem::path(q.kernel).stem().string();
    CLI::App tuning{"TOPOLAB_OPTS: topolab's own options under the QEMU command line"};
    add_run_tuning_options(&tuning, run);
    std::vector<std::string> words = split_topolab_opts(opts, name);
    std::reverse(words.begin(), words.end());  // CLI11 takes them reversed
    try {
      tuning.parse(words);
    } catch (const CLI::ParseError& e) {
      throw ConfigError(fmt::format("TOPOLAB_OPTS: {}", e.what()));
    }
  }
  // QEMU checks the whole configuration before it loads the kernel, and
  // says so in these words when it cannot: kvm-unit-tests tries each
  // command line with a missing kernel, and a refusal here (-cpu host,
  // -m 4096) becomes the test's SKIP with this line as the reason.
  run.flags.parse_into(run.machine);
  run.machine.cost = CostModel::parse(run.cost_spec, CostModel::defaults());
  check_ram_size(run.machine.ram_mib);
  if (std::FILE* f = std::fopen(q.kernel.c_str(), "rb")) {
    std::fclose(f);
  } else {
    throw ImageError(fmt::format("could not load kernel '{}': {}", q.kernel, std::strerror(errno)));
  }
  return run_machine(run);
}

}  // namespace

int main(int argc, char** argv) {
  // QEMU asks for transparent huge pages for each engine's translation
  // buffer, so the first translated block of every vCPU makes the kernel
  // zero 2 MiB: 1,024 vCPUs spent 4 of their 10 s booting there. Small
  // pages cost those engines 2 MiB less each and the others nothing
  // measurable (docs/benchmarks.md).
  prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0);
  // The QEMU command line: as `topolab qemu ARGS`, or under QEMU's own name
  // (build/qemu-system-x86_64 is a link to topolab).
  const bool as_qemu = std::filesystem::path(argv[0]).filename() == "qemu-system-x86_64";
  if (as_qemu || (argc > 1 && std::string_view(argv[1]) == "qemu")) {
    const int first = as_qemu ? 1 : 2;
    try {
      return run_qemu(std::vector<std::string>(argv + first, argv + argc));
    } catch (const InputError& e) {
      fmt::print(stderr, "topolab: {}\n", e.what());
      return 1;  // QEMU's status for a command line or image it cannot take
    } catch (const std::exception& e) {
      fmt::print(stderr, "topolab: internal error: {}\n", e.what());
      return kExitInternalError;
    }
  }
  CLI::App app{"topolab: a deterministic x86 machine for studying what topology a guest sees\n"
               "and what that does to its IPI and HLT traffic. With no command it runs the demo."};
  app.require_subcommand(0, 1);
  app.set_version_flag("--version",
                       [] { return fmt::format("topolab {} on Unicorn {}", TOPOLAB_VERSION, engine_version()); },
                       "print topolab's version and the CPU engine's it runs on");

  CpuidOptions cpuid;
  CLI::App* cpuid_cmd = add_cpuid_command(app, cpuid);

  CheckOptions check;
  CLI::App* check_cmd = add_check_command(app, check);

  CLI::App* models_cmd = app.add_subcommand("models", "list the CPU models and -cpu properties");

  RunOptions run;
  CLI::App* run_cmd = add_run_command(app, run);

  ExperimentCli experiment;
  CLI::App* experiment_cmd = add_experiment_command(app, experiment);

  try {
    auto args = qemu_style_to_cli11(argc, argv);
    app.parse(args);
    cpuid.command = run.command = experiment.command = command_for_page(argc, argv);
    if (*cpuid_cmd) return run_cpuid(cpuid);
    if (*check_cmd) return run_check(check);
    if (*run_cmd) {
      run.flags.parse_into(run.machine);
      run.machine.cost = CostModel::parse(run.cost_spec, CostModel::defaults());
      return run_machine(run);
    }
    if (*experiment_cmd) {
      // A Linux guest boots for seconds of host time before each benchmark:
      // fewer, coarser runs unless asked (its quantum does not change what the
      // guest does, only how finely the vCPUs interleave).
      if (experiment.options.guest == Guest::Linux) {
        if (!experiment_cmd->count("--quantum")) experiment.options.quantum = kLinuxExperimentQuantum;
        if (!experiment_cmd->count("--repeats")) experiment.options.repeats = kLinuxExperimentRepeats;
      }
      return run_experiment(experiment, find_data_paths());
    }
    if (*models_cmd) return print_models();
    return run_demo(find_data_paths());
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    fmt::print(stderr, "topolab: {} (see topolab --help)\n", e.what());
    return kExitBadInput;
  } catch (const InputError& e) {
    fmt::print(stderr, "topolab: {}\n", e.what());
    return kExitBadInput;
  } catch (const std::exception& e) {
    fmt::print(stderr, "topolab: internal error: {}\n", e.what());
    return kExitInternalError;
  }
}
