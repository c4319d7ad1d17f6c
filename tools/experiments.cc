#include "tools/experiments.h"

#include "emu/unicorn_vcpu.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <exception>
#include <mutex>
#include <stdexcept>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "report/html_report.h"
#include "report/run_report.h"
#include "report/svg_report.h"
#include "base/text_buffer.h"
#include "tools/experiment_parts.h"

namespace topolab {

using namespace experiment_parts;

namespace {

// Linux x86's vectors, which the sched kernel uses too.
constexpr uint8_t kReschedVector = 0xFD;
constexpr uint8_t kCallFunctionVector = 0xFB;

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

uint64_t sum_received(const Stats& stats, uint8_t vector) {
  uint64_t n = 0;
  for (unsigned i = 0; i < stats.vcpu_count(); ++i) {
    auto it = stats.vcpu(i).received_by_vector.find(vector);
    if (it != stats.vcpu(i).received_by_vector.end()) n += it->second;
  }
  return n;
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

CaseMeasurement measure_case(const ExperimentCase& spec) {
  std::string serial;
  Machine machine(spec.config, [&serial](uint8_t b) { serial.push_back(static_cast<char>(b)); }, unicorn_vcpu_factory());
  RunResult r = machine.run();
  auto where = [&] { return fmt::format("{} on {} with {}", spec.workload, spec.topology, spec.setting); };
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
  const std::optional<MeasureWindow>& w = machine.window();
  if (!w || !w->ended_by_guest)
    throw std::runtime_error(fmt::format("{}: the guest did not mark its measuring window (port 0x4a0)", where()));
  m.window_ns = w->end_ns - w->begin_ns;
  m.vcpus = w->stats.vcpu_count();
  m.res_ipis = sum_received(w->stats, kReschedVector);
  m.cal_ipis = sum_received(w->stats, kCallFunctionVector);
  for (unsigned i = 0; i < w->stats.vcpu_count(); ++i) {
    const VcpuStats& s = w->stats.vcpu(i);
    m.hlt_exits += s.exits[static_cast<size_t>(ExitKind::Hlt)];
    m.halt_poll_hits += s.halt_poll_hits;
    m.mwait_wakes += s.wakes[static_cast<size_t>(WakeCause::MwaitStore)];
  }
  m.host_cpu_percent = host_cpu_percent(w->stats, m.window_ns);
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
