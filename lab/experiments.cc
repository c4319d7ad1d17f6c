// SPDX-License-Identifier: GPL-2.0-or-later
#include "lab/experiments.h"

#include "emu/unicorn_vcpu.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <exception>
#include <filesystem>
#include <mutex>
#include <stdexcept>
#include <thread>

#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "report/html_report.h"
#include "report/run_report.h"
#include "report/svg_report.h"
#include "base/text_buffer.h"
#include "lab/experiment_parts.h"

namespace topolab {

using namespace experiment_parts;

namespace {

// Linux x86's vectors, which the sched kernel uses too.
constexpr uint8_t kReschedVector = 0xFD;
constexpr uint8_t kCallFunctionVector = 0xFB;
// Linux's other CAL vector (CALL_FUNCTION_VECTOR: smp_call_function_many),
// which /proc/interrupts counts on the CAL line with 0xFB.
constexpr uint8_t kCallFunctionManyVector = 0xFC;

// The quanta of the repeats, in percent of the base quantum.
constexpr unsigned kQuantumPercent[kMaxRepeats] = {100, 60, 80, 125, 160, 70, 90, 110, 140, 200};

// Every case `repeats` times, repeats of one case next to each other.
std::vector<ExperimentCase> with_repeats(const ExperimentOptions& o, const std::vector<ExperimentCase>& cases) {
  const unsigned repeats = std::clamp(o.repeats, 1u, kMaxRepeats);
  std::vector<ExperimentCase> out;
  for (const ExperimentCase& c : cases)
    for (unsigned r = 0; r < repeats; ++r) {
      ExperimentCase run = c;
      run.repeat = r;
      run.config.quantum = std::max<uint64_t>(1, o.quantum * kQuantumPercent[r] / 100);
      out.push_back(run);
    }
  return out;
}

// One vector's count over every vCPU, from the map `counts` of VcpuStats
// (received_by_vector, interrupts_taken).
uint64_t sum_over_vcpus(const Stats& stats, std::map<uint8_t, uint64_t> VcpuStats::*counts, uint8_t vector) {
  uint64_t n = 0;
  for (unsigned i = 0; i < stats.vcpu_count(); ++i) {
    const auto& by_vector = stats.vcpu(i).*counts;
    if (auto it = by_vector.find(vector); it != by_vector.end()) n += it->second;
  }
  return n;
}
uint64_t sum_taken(const Stats& stats, uint8_t vector) { return sum_over_vcpus(stats, &VcpuStats::interrupts_taken, vector); }
uint64_t sum_received(const Stats& stats, uint8_t vector) {
  return sum_over_vcpus(stats, &VcpuStats::received_by_vector, vector);
}

CaseMeasurement measure_case(const ExperimentCase& spec);

// Any failure names the case it belongs to; bad input stays bad input.
CaseMeasurement run_case(const ExperimentCase& spec) {
  try {
    return measure_case(spec);
  } catch (const InputError&) {
    throw;
  } catch (const std::exception& e) {
    const std::string what = e.what();
    if (what.find(spec.workload + " on ") == 0) throw;
    throw std::runtime_error(fmt::format("{} on {} with {}: {}", spec.workload, spec.topology, spec.setting, what));
  }
}

// The lines of the serial output, without the console's CRs.
std::vector<std::string> serial_lines(const std::string& serial) {
  std::vector<std::string> lines;
  size_t at = 0;
  while (at < serial.size()) {
    size_t end = serial.find('\n', at);
    if (end == std::string::npos) end = serial.size();
    std::string line = serial.substr(at, end - at);
    std::erase(line, '\r');
    lines.push_back(std::move(line));
    at = end + 1;
  }
  return lines;
}

// What perf bench sched printed for the benchmark /init ran last
// (tools/linux_init.sh): "bench" (messaging:1:100), "loops", and perf's
// "total_sec", "usecs_per_op", "ops_per_sec" where it gives them.
std::map<std::string, std::string> parse_perf_bench(const std::string& serial) {
  std::map<std::string, std::string> out;
  bool inside = false;
  for (const std::string& line : serial_lines(serial)) {
    if (line.starts_with("topolab-bench-begin ")) {
      out.clear();
      out["bench"] = line.substr(20);
      out["loops"] = out["bench"].substr(out["bench"].rfind(':') + 1);
      inside = true;
      continue;
    }
    if (line.starts_with("topolab-bench-end ")) inside = false;
    if (!inside) continue;
    std::istringstream words(line);
    std::string a, b, c;
    words >> a >> b >> c;
    if (a == "Total" && b == "time:") out["total_sec"] = c;
    if (b == "usecs/op") out["usecs_per_op"] = a;
    if (b == "ops/sec") out["ops_per_sec"] = a;
  }
  return out;
}

// Each CPU's RES and CAL rise between the last /proc/interrupts /init printed
// before a benchmark and the one after.
struct LinuxInterruptDeltas {
  std::vector<uint64_t> res, cal;
};
LinuxInterruptDeltas linux_interrupt_deltas(const std::string& serial) {
  std::map<std::string, std::vector<uint64_t>> before, after, *block = nullptr;
  for (const std::string& line : serial_lines(serial)) {
    if (line.starts_with("topolab-interrupts-before ")) { block = &before; block->clear(); continue; }
    if (line.starts_with("topolab-interrupts-after ")) { block = &after; block->clear(); continue; }
    if (line == "topolab-interrupts-end") { block = nullptr; continue; }
    if (!block) continue;
    std::istringstream words(line);
    std::string label, word;
    words >> label;
    if (label != "RES:" && label != "CAL:") continue;
    std::vector<uint64_t>& counts = (*block)[label];
    while (words >> word && !word.empty() && std::all_of(word.begin(), word.end(), ::isdigit))
      counts.push_back(std::stoull(word));
  }
  LinuxInterruptDeltas d;
  auto delta = [&](const std::string& label, std::vector<uint64_t>& out) {
    const auto &b = before[label], &a = after[label];
    for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) out.push_back(a[i] - b[i]);
  };
  delta("RES:", d.res);
  delta("CAL:", d.cal);
  return d;
}

// The window's counts. `taken`: IPIs as the guest's handlers count them (the
// Linux guest, whose RES and CAL lines must agree); else as the APIC
// received them (the sched guest's tables, as they always were).
void fill_window_counts(const MeasureWindow& w, CaseMeasurement& m, bool taken) {
  m.window_ns = w.end_ns - w.begin_ns;
  m.vcpus = w.stats.vcpu_count();
  if (taken) {
    m.res_ipis = sum_taken(w.stats, kReschedVector);
    m.cal_ipis = sum_taken(w.stats, kCallFunctionVector) + sum_taken(w.stats, kCallFunctionManyVector);
  } else {
    m.res_ipis = sum_received(w.stats, kReschedVector);
    m.cal_ipis = sum_received(w.stats, kCallFunctionVector);
  }
  for (unsigned i = 0; i < w.stats.vcpu_count(); ++i) {
    const VcpuStats& s = w.stats.vcpu(i);
    m.hlt_exits += s.exits[static_cast<size_t>(ExitKind::Hlt)];
    m.halt_poll_hits += s.halt_poll_hits;
    m.mwait_wakes += s.wakes[static_cast<size_t>(WakeCause::MwaitStore)];
  }
  m.host_cpu_percent = host_cpu_percent(w.stats, m.window_ns);
}

// The Linux guest's run: it must have powered off after /init finished, and
// its own /proc/interrupts deltas must equal what topolab's window saw.
void measure_linux_case(const std::string& serial, const RunResult& r, const MeasureWindow* w, CaseMeasurement& m,
                        const std::function<std::string()>& where) {
  if (size_t at = serial.find("Kernel panic - not syncing"); at != std::string::npos)
    throw std::runtime_error(fmt::format("{}: the guest's kernel panicked: {}", where(),
                                         serial.substr(at, serial.find('\n', at) - at)));
  if (r.outcome != RunResult::Outcome::Shutdown || serial.find("topolab-init: done") == std::string::npos) {
    std::string error;
    if (size_t at = serial.find("topolab-init: error"); at != std::string::npos)
      error = serial.substr(at, serial.find('\n', at) - at);
    throw std::runtime_error(fmt::format("{}: the guest failed: {}", where(), !error.empty() ? error : r.diagnosis));
  }
  m.sched = parse_perf_bench(serial);
  if (!w || !w->ended_by_guest)
    throw std::runtime_error(fmt::format("{}: /init did not mark its measuring window (topolab-window)", where()));
  const LinuxInterruptDeltas guest = linux_interrupt_deltas(serial);
  for (unsigned i = 0; i < w->stats.vcpu_count(); ++i) {
    const auto& taken = w->stats.vcpu(i).interrupts_taken;
    auto count = [&](uint8_t v) { return taken.count(v) ? taken.at(v) : 0; };
    const uint64_t res = count(kReschedVector), cal = count(kCallFunctionVector) + count(kCallFunctionManyVector);
    if (i >= guest.res.size() || i >= guest.cal.size() || guest.res[i] != res || guest.cal[i] != cal)
      throw std::runtime_error(fmt::format(
          "{}: CPU{}'s /proc/interrupts deltas (RES {}, CAL {}) differ from the interrupts topolab saw taken "
          "(RES {}, CAL {})",
          where(), i, i < guest.res.size() ? std::to_string(guest.res[i]) : "?",
          i < guest.cal.size() ? std::to_string(guest.cal[i]) : "?", res, cal));
  }
}

CaseMeasurement measure_case(const ExperimentCase& spec) {
  std::string serial;
  Machine machine(spec.config, [&serial](uint8_t b) { serial.push_back(static_cast<char>(b)); }, unicorn_vcpu_factory());
  RunResult r = machine.run();
  auto where = [&] { return fmt::format("{} on {} with {}", spec.workload, spec.topology, spec.setting); };
  const std::optional<MeasureWindow>& w = machine.window();
  if (spec.linux_guest) {
    CaseMeasurement m;
    m.spec = spec;
    measure_linux_case(serial, r, w ? &*w : nullptr, m, where);
    fill_window_counts(*w, m, true);
    return m;
  }
  if (r.outcome != RunResult::Outcome::GuestExit || r.guest_value != 0u) {
    std::string last_line;
    if (size_t fail = serial.rfind("FAIL"); fail != std::string::npos)
      last_line = serial.substr(fail, serial.find('\n', fail) - fail);
    throw std::runtime_error(fmt::format("{}: the guest failed: {}", where(),
                                         !r.diagnosis.empty() ? r.diagnosis
                                         : !last_line.empty() ? last_line
                                                              : fmt::format("exit value {}", r.guest_value.value_or(0))));
  }
  CaseMeasurement m;
  m.spec = spec;
  auto sched = parse_sched_result(serial);
  if (!sched) throw std::runtime_error(fmt::format("{}: the guest printed no sched-result line", where()));
  m.sched = *sched;
  m.ns_per_op_sum = m.sched_number("ns_per_op");
  if (!w || !w->ended_by_guest)
    throw std::runtime_error(fmt::format("{}: the guest did not mark its measuring window (port 0x4a0)", where()));
  fill_window_counts(*w, m, false);
  return m;
}

}  // namespace

namespace experiment_parts {

unsigned scaled(unsigned loops, unsigned percent) { return std::max(1u, loops * percent / 100); }

std::string wakelist_for(const std::string& kernel) { return kernel == "6.x" ? "cal" : "res"; }

MachineConfig base_config(const ExperimentOptions& o, const char* smp, std::string cpu, std::string append) {
  MachineConfig c;
  c.topology = Topology::parse(smp);
  c.cpu = parse_cpu(cpu);
  c.image = o.sched_image;
  c.image_name = "sched.elf";  // where the image sits must not change the run
  c.append = std::move(append);
  c.quantum = o.quantum;
  c.time_limit_seconds = kCaseTimeLimitSeconds;
  c.cost = o.cost;
  c.spin_skip = o.spin_skip;
  return c;
}

MachineConfig linux_config(const ExperimentOptions& o, const char* smp, std::string cpu, const std::string& bench) {
  MachineConfig c = base_config(o, smp, std::move(cpu), fmt::format("{} topolab.bench={}", kLinuxCommandLine, bench));
  // The uncompressed kernel by PVH: the bzImage's XZ decompressor would be
  // two thirds of every run's instructions, the same work each time.
  c.image = (std::filesystem::path(o.linux_dir) / "vmlinux").string();
  c.initrd = {(std::filesystem::path(o.linux_dir) / "initramfs.cpio").string()};
  c.image_name.clear();
  c.ram_mib = 1024;
  return c;
}

// "+12%", "-85%", "n/a" (from nothing).
std::string change(double before, double after) {
  if (before == 0) return after == 0 ? "0%" : "new";
  return fmt::format("{:+.0f}%", 100.0 * (after - before) / before);
}

std::string rate(double per_second) {
  if (per_second >= 1e6) return fmt::format("{:.2f}M", per_second / 1e6);
  if (per_second >= 1e3) return fmt::format("{:.1f}K", per_second / 1e3);
  return fmt::format("{:.0f}", per_second);
}

std::string kernel_words(const std::string& kernel) {
  return kernel == "6.x" ? "wake lists send CAL (function-call) IPIs, as Linux 6.x"
                         : "wake lists send RES IPIs, as the seeds' 2016 kernels";
}

double ipis_per_vcpu(const CaseMeasurement& r) {
  return double(r.res_ipis + r.cal_ipis) / std::max(1u, r.vcpus * r.runs);
}

std::string spread(const CaseMeasurement& r) {
  return r.runs < 2 ? std::string("-") : fmt::format("{}-{}", rate(r.ipi_rate_min), rate(r.ipi_rate_max));
}

std::string time_spread(const CaseMeasurement& r) {
  return r.runs < 2 ? std::string("-") : fmt::format("{:.2f}-{:.2f}", r.window_min_ns / 1e6, r.window_max_ns / 1e6);
}

std::vector<const CaseMeasurement*> rows_of(const std::vector<CaseMeasurement>& results, std::string_view workload) {
  std::vector<const CaseMeasurement*> rows;
  for (const auto& r : results)
    if (r.spec.workload == workload) rows.push_back(&r);
  return rows;
}

}  // namespace experiment_parts

std::string describe_case(const ExperimentCase& c) {
  return fmt::format("{} on {} with {}, quantum {}", c.workload, c.topology, c.setting, c.config.quantum);
}

uint64_t CaseMeasurement::sched_number(const std::string& key) const {
  auto it = sched.find(key);
  if (it == sched.end()) return 0;
  try {
    return std::stoull(it->second);
  } catch (const std::exception&) {
    return 0;
  }
}

std::optional<std::map<std::string, std::string>> parse_sched_result(const std::string& serial) {
  static const std::string kTag = "sched-result:";
  size_t at = serial.rfind(kTag);
  if (at == std::string::npos || (at > 0 && serial[at - 1] != '\n')) return std::nullopt;
  std::string line = serial.substr(at + kTag.size(), serial.find('\n', at) - at - kTag.size());
  std::map<std::string, std::string> fields;
  size_t pos = 0;
  while (pos < line.size()) {
    size_t start = line.find_first_not_of(" \r", pos);
    if (start == std::string::npos) break;
    size_t end = line.find(' ', start);
    std::string item = line.substr(start, end == std::string::npos ? std::string::npos : end - start);
    size_t eq = item.find('=');
    if (eq == std::string::npos || eq == 0) return std::nullopt;
    fields[item.substr(0, eq)] = item.substr(eq + 1);
    pos = end == std::string::npos ? line.size() : end;
  }
  if (fields.empty()) return std::nullopt;
  return fields;
}

const std::vector<Experiment>& experiments() {
  static const std::vector<Experiment> kExperiments = {experiment_parts::l3_cache_experiment(),
                                                       experiment_parts::halt_poll_experiment()};
  return kExperiments;
}

const Experiment& find_experiment(const std::string& name) {
  for (const Experiment& e : experiments())
    if (e.name == name) return e;
  std::string known;
  for (const Experiment& e : experiments()) known += fmt::format("{}{}", known.empty() ? "" : ", ", e.name);
  throw ConfigError(fmt::format("experiment {}: no such experiment (known: {})", name, known));
}

const std::vector<std::pair<std::string, std::string>>& experiment_names() {
  static const std::vector<std::pair<std::string, std::string>> kNames = [] {
    std::vector<std::pair<std::string, std::string>> names;
    for (const Experiment& e : experiments()) names.emplace_back(e.name, e.description);
    return names;
  }();
  return kNames;
}

std::vector<ExperimentCase> experiment_cases(const ExperimentOptions& options) {
  return with_repeats(options, find_experiment(options.name).cases(options));
}

std::vector<CaseMeasurement> run_experiment_cases(const ExperimentOptions& options,
                                                  const std::vector<ExperimentCase>& cases, std::FILE* progress) {
  std::vector<std::optional<CaseMeasurement>> results(cases.size());
  std::vector<std::exception_ptr> failures(cases.size());
  std::atomic<size_t> next{0};
  std::atomic<bool> failed{false};  // one failure ends the experiment: no run starts after it
  std::mutex progress_lock;
  size_t done = 0;
  auto worker = [&] {
    for (size_t i = next++; i < cases.size() && !failed; i = next++) {
      const auto start = std::chrono::steady_clock::now();
      try {
        results[i] = run_case(cases[i]);
      } catch (...) {
        failures[i] = std::current_exception();
        failed = true;
      }
      const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      std::lock_guard lock(progress_lock);
      ++done;
      if (progress)
        fmt::print(progress, "[{:>3}/{}] {}: {} ({:.1f} s)\n", done, cases.size(), describe_case(cases[i]),
                   failures[i] ? "FAILED" : "done", seconds);
    }
  };
  const unsigned jobs = std::clamp<unsigned>(options.jobs, 1, static_cast<unsigned>(std::max<size_t>(1, cases.size())));
  std::vector<std::thread> threads;
  for (unsigned j = 1; j < jobs; ++j) threads.emplace_back(worker);
  worker();
  for (auto& t : threads) t.join();
  // The first failure in case order, so which one is named does not depend
  // on the threads.
  for (size_t i = 0; i < cases.size(); ++i)
    if (failures[i]) std::rethrow_exception(failures[i]);
  std::vector<CaseMeasurement> out;
  for (auto& r : results) out.push_back(std::move(*r));
  return out;
}

std::vector<CaseMeasurement> combine_repeats(const std::vector<CaseMeasurement>& runs) {
  std::vector<CaseMeasurement> out;
  for (const CaseMeasurement& r : runs) {
    const double rate = r.per_second(r.res_ipis + r.cal_ipis);
    const bool same_case = !out.empty() && out.back().spec.workload == r.spec.workload &&
                           out.back().spec.topology == r.spec.topology && out.back().spec.setting == r.spec.setting;
    if (!same_case) {
      CaseMeasurement first = r;
      first.runs = 1;
      first.window_min_ns = first.window_max_ns = r.window_ns;
      first.ipi_rate_min = first.ipi_rate_max = rate;
      out.push_back(first);
      continue;
    }
    CaseMeasurement& c = out.back();
    // Host CPU and ns per operation: means weighted by time and by run.
    c.host_cpu_percent = (c.host_cpu_percent * c.window_ns + r.host_cpu_percent * r.window_ns) /
                         std::max<double>(1, c.window_ns + r.window_ns);
    ++c.runs;
    c.ns_per_op_sum += r.ns_per_op_sum;
    c.sched["ns_per_op"] = fmt::format("{}", c.ns_per_op_sum / c.runs);
    c.window_ns += r.window_ns;
    c.res_ipis += r.res_ipis;
    c.cal_ipis += r.cal_ipis;
    c.hlt_exits += r.hlt_exits;
    c.halt_poll_hits += r.halt_poll_hits;
    c.mwait_wakes += r.mwait_wakes;
    c.window_min_ns = std::min(c.window_min_ns, r.window_ns);
    c.window_max_ns = std::max(c.window_max_ns, r.window_ns);
    c.ipi_rate_min = std::min(c.ipi_rate_min, rate);
    c.ipi_rate_max = std::max(c.ipi_rate_max, rate);
  }
  return out;
}

std::string format_experiment_tables(const ExperimentOptions& options, const std::vector<CaseMeasurement>& runs) {
  const Experiment& experiment = find_experiment(options.name);
  fmt::memory_buffer out;
  appendf(out, "{}", experiment.tables(options, combine_repeats(runs)));
  std::string cost = options.cost.to_string();
  if (!experiment.per_case_cost.empty()) {
    const std::string key = experiment.per_case_cost + "=";
    const size_t at = cost.find(key);
    const size_t end = cost.find(',', at);
    cost.replace(at, end - at, key + "(per configuration)");
  }
  appendf(out, "cost model: {}; quanta around {} instructions; spin skipping {}\n", cost, options.quantum,
          options.spin_skip ? "on" : "off");
  return fmt::to_string(out);
}

namespace {

nlohmann::ordered_json case_json(const CaseMeasurement& r, bool combined) {
  nlohmann::ordered_json c;
  c["workload"] = r.spec.workload;
  c["machine"] = r.spec.topology;
  c["setting"] = r.spec.setting;
  c["smp"] = r.spec.config.topology.to_smp_arg();
  c["cpu"] = r.spec.config.cpu.arg;
  c["append"] = r.spec.config.append;
  c["cost"] = r.spec.config.cost.to_string();
  if (combined) {
    c["runs"] = r.runs;
    c["mean_window_ns"] = r.mean_window_ns();
    c["window_ns_min"] = r.window_min_ns;
    c["window_ns_max"] = r.window_max_ns;
    c["ipi_per_s_min"] = r.ipi_rate_min;
    c["ipi_per_s_max"] = r.ipi_rate_max;
  } else {
    c["quantum"] = r.spec.config.quantum;
  }
  c["window_ns"] = r.window_ns;
  c["vcpus"] = r.vcpus;
  c["res_ipis"] = r.res_ipis;
  c["cal_ipis"] = r.cal_ipis;
  c["res_per_s"] = r.per_second(r.res_ipis);
  c["cal_per_s"] = r.per_second(r.cal_ipis);
  c["ipis_per_vcpu"] = ipis_per_vcpu(r);
  c["hlt_exits"] = r.hlt_exits;
  c["hlt_per_s"] = r.per_second(r.hlt_exits);
  c["halt_poll_hits"] = r.halt_poll_hits;
  c["mwait_store_wakes"] = r.mwait_wakes;
  c["host_cpu_percent"] = r.host_cpu_percent;
  nlohmann::ordered_json sched = nlohmann::ordered_json::object();
  for (const auto& [k, v] : r.sched) sched[k] = v;
  c[combined ? "guest_first_run" : "guest"] = sched;
  return c;
}

}  // namespace

// "cases": each case over its runs (sums, and the spread); "runs": every
// run as measured.
nlohmann::ordered_json recorded_options_json(const ExperimentOptions& o) {
  nlohmann::ordered_json j;
  j["experiment"] = o.name;
  j["kernel"] = o.kernel;
  j["quantum"] = o.quantum;
  j["repeats"] = o.repeats;
  j["scale_percent"] = o.scale_percent;
  j["spin_skip"] = o.spin_skip;
  if (o.guest != "sched") j["guest"] = o.guest;  // the sched guest's JSON stays as it was
  return j;
}

std::string format_experiment_json(const ExperimentOptions& options, const std::vector<CaseMeasurement>& runs) {
  using nlohmann::ordered_json;
  ordered_json j;
  j["schema"] = "topolab.experiment/1";
  j.update(recorded_options_json(options));
  ordered_json cases = ordered_json::array(), all = ordered_json::array();
  for (const auto& r : combine_repeats(runs)) cases.push_back(case_json(r, true));
  for (const auto& r : runs) all.push_back(case_json(r, false));
  j["cases"] = cases;
  j["runs"] = all;
  return j.dump(2) + "\n";
}

std::map<std::string, std::string> experiment_charts(const ExperimentOptions& options,
                                                     const std::vector<CaseMeasurement>& runs) {
  return find_experiment(options.name).charts(options, combine_repeats(runs));
}

std::string format_experiment_html(const ExperimentOptions& options, const std::vector<CaseMeasurement>& results,
                                   const std::string& command) {
  HtmlExperimentInput in{command, options.name, format_experiment_tables(options, results),
                         experiment_charts(options, results), {}};
  // Each machine once, in the order the experiment ran them.
  std::vector<std::pair<std::string, std::string>> seen;
  for (const CaseMeasurement& r : results) {
    const std::pair<std::string, std::string> key{r.spec.config.topology.to_smp_arg(), r.spec.config.cpu.arg};
    if (std::find(seen.begin(), seen.end(), key) != seen.end()) continue;
    seen.push_back(key);
    in.machines.emplace_back(r.spec.topology, CpuidModel(r.spec.config.topology, r.spec.config.cpu));
  }
  return experiment_html_page(in);
}

}  // namespace topolab
