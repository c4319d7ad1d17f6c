#include "tools/experiments.h"

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

namespace topolab {

namespace {

// Linux x86's vectors, which the sched kernel uses too.
constexpr uint8_t kReschedVector = 0xFD;
constexpr uint8_t kCallFunctionVector = 0xFB;
constexpr double kCaseTimeLimitSeconds = 60;  // virtual; every case needs far less

struct Machine3 {
  const char* name;
  const char* smp;
  const char* cpu;
};

// The machines of the seeds (REFERENCE §6): the SAP HANA guest's 16 vCPUs
// with SMT, the 8-core `perf bench` guest, and an AMD family 15 model whose
// LLC Linux takes from the package, so that l3-cache cannot matter (control).
constexpr Machine3 kL3Machines[] = {
    {"16 vCPUs 1s x 8c x 2t Skylake-Server", "16,sockets=1,cores=8,threads=2", "Skylake-Server,+x2apic"},
    {"8 vCPUs 1s x 8c Skylake-Server", "8,sockets=1,cores=8,threads=1", "Skylake-Server,+x2apic"},
    {"8 vCPUs 1s x 8c qemu64 (AMD fam 15h, control)", "8,sockets=1,cores=8,threads=1", "qemu64,+x2apic"},
};
constexpr unsigned kMessagingLoops = 100;  // perf bench sched messaging's default
constexpr unsigned kPipeLoops = 10000;
// The haltpoll seed: a context-switch benchmark on a 10-vCPU guest. As
// under KVM, the guests get x2APIC (KVM offers it on every model).
constexpr const char* kHaltPollSmp = "10";
constexpr const char* kHaltPollCpu = "Skylake-Server,+x2apic,+monitor";
constexpr unsigned kCtxswLoops = 5000;
constexpr uint64_t kPollThresholds[] = {10000, 20000, 30000, 500000};

unsigned scaled(unsigned loops, unsigned percent) { return std::max(1u, loops * percent / 100); }

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

std::string wakelist_for(const std::string& kernel) { return kernel == "6.x" ? "cal" : "res"; }

MachineConfig base_config(const ExperimentOptions& o, const char* smp, std::string cpu, std::string append) {
  MachineConfig c;
  c.smp = smp;
  c.cpu = std::move(cpu);
  c.image = o.sched_image;
  c.image_name = "sched.elf";  // where the image sits must not change the run
  c.append = std::move(append);
  c.quantum = o.quantum;
  c.time_limit_seconds = kCaseTimeLimitSeconds;
  c.cost = o.cost;
  return c;
}

std::vector<ExperimentCase> l3_cache_cases(const ExperimentOptions& o) {
  std::vector<ExperimentCase> cases;
  for (const char* workload : {"messaging", "pipe"}) {
    unsigned loops = scaled(std::string(workload) == "pipe" ? kPipeLoops : kMessagingLoops, o.scale_percent);
    for (const Machine3& m : kL3Machines)
      for (const char* l3 : {"off", "on"})
        cases.push_back({workload, m.name, fmt::format("l3-cache={}", l3), 0,
                         base_config(o, m.smp, fmt::format("{},l3-cache={}", m.cpu, l3),
                                     fmt::format("workload={} loops={} wakelist={} quiet=1", workload, loops,
                                                 wakelist_for(o.kernel)))});
  }
  return cases;
}

std::vector<ExperimentCase> halt_poll_cases(const ExperimentOptions& o) {
  const unsigned loops = scaled(kCtxswLoops, o.scale_percent);
  const std::string machine = fmt::format("{} vCPUs {}", kHaltPollSmp, kHaltPollCpu);
  auto make = [&](std::string setting, const std::string& idle, uint64_t host_poll_ns) {
    MachineConfig c = base_config(o, kHaltPollSmp, kHaltPollCpu,
                                  fmt::format("workload=ctxsw loops={} idle={} wakelist={} quiet=1", loops, idle,
                                              wakelist_for(o.kernel)));
    c.cost.halt_poll_ns = host_poll_ns;
    return ExperimentCase{"ctxsw", machine, std::move(setting), 0, c};
  };
  std::vector<ExperimentCase> cases;
  cases.push_back(make("no polling", "halt", 0));
  for (uint64_t ns : kPollThresholds) cases.push_back(make(fmt::format("guest haltpoll {} ns", ns), fmt::format("haltpoll={}", ns), 0));
  for (uint64_t ns : kPollThresholds) cases.push_back(make(fmt::format("host halt_poll_ns {}", ns), "halt", ns));
  cases.push_back(make("idle=poll", "poll", 0));
  cases.push_back(make("idle=mwait", "mwait", 0));
  return cases;
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
  Machine machine(spec.config, [&serial](uint8_t b) { serial.push_back(static_cast<char>(b)); });
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

void l3_tables(fmt::memory_buffer& out, const ExperimentOptions& o, const std::vector<CaseMeasurement>& results) {
  for (const char* workload : {"messaging", "pipe"}) {
    std::vector<const CaseMeasurement*> rows;
    for (const auto& r : results)
      if (r.spec.workload == workload) rows.push_back(&r);
    if (rows.empty()) continue;
    appendf(out, "== {}: {}, {} loops, op_ns {}; {}; {} run(s) each\n", workload,
            std::string(workload) == "pipe" ? "two tasks ping-ponging (perf bench sched pipe)"
                                            : "20 senders x 20 receivers (perf bench sched messaging -g 1)",
            rows.front()->sched_number("loops"), rows.front()->sched_number("op_ns"), kernel_words(o.kernel),
            rows.front()->runs);
    appendf(out, "{:<46} {:<8} {:>8} {:>8} {:>9} {:>15} {:>8} {:>8} {:>13} {:>9} {:>6}\n", "machine", "l3-cache",
            "RES/s", "CAL/s", "RES+CAL/s", "(spread)", "HLT/s", "time ms", "(spread)", "IPIs/vCPU", "%CPU");
    for (size_t i = 0; i + 1 < rows.size(); i += 2) {
      const CaseMeasurement* pair[2] = {rows[i], rows[i + 1]};
      for (int k = 0; k < 2; ++k) {
        const CaseMeasurement& r = *pair[k];
        appendf(out, "{:<46} {:<8} {:>8} {:>8} {:>9} {:>15} {:>8} {:>8.3f} {:>13} {:>9.1f} {:>6.0f}\n",
                k == 0 ? r.spec.topology : "", r.spec.setting.substr(r.spec.setting.find('=') + 1),
                rate(r.per_second(r.res_ipis)), rate(r.per_second(r.cal_ipis)),
                rate(r.per_second(r.res_ipis + r.cal_ipis)), spread(r), rate(r.per_second(r.hlt_exits)),
                r.mean_window_ns() / 1e6, time_spread(r), ipis_per_vcpu(r), r.host_cpu_percent);
      }
      const CaseMeasurement &off = *pair[0], &on = *pair[1];
      appendf(out, "{:<46} {:<8} {:>8} {:>8} {:>9} {:>15} {:>8} {:>8} {:>13} {:>9} {:>6}\n", "", "change",
              change(off.per_second(off.res_ipis), on.per_second(on.res_ipis)),
              change(off.per_second(off.cal_ipis), on.per_second(on.cal_ipis)),
              change(off.per_second(off.res_ipis + off.cal_ipis), on.per_second(on.res_ipis + on.cal_ipis)), "",
              change(off.per_second(off.hlt_exits), on.per_second(on.hlt_exits)),
              change(off.mean_window_ns(), on.mean_window_ns()), "", change(ipis_per_vcpu(off), ipis_per_vcpu(on)),
              change(off.host_cpu_percent, on.host_cpu_percent));
    }
    appendf(out, "\n");
  }
  appendf(out, "RES = vector 0xFD, CAL = vector 0xFB, received in the guest's measuring window; rates are totals\n"
               "over all runs of a case divided by their total virtual time, (spread) the lowest and highest run;\n"
               "time = mean virtual run time; IPIs/vCPU = (RES + CAL) received per vCPU and run; %CPU = modelled\n"
               "host CPU (100 = one CPU). The runs of a case differ only in the quantum, i.e. in how finely the\n"
               "vCPUs interleave; the guest does the same work in each.\n");
}

void halt_poll_table(fmt::memory_buffer& out, const ExperimentOptions& o, const std::vector<CaseMeasurement>& results) {
  if (results.empty()) return;
  appendf(out, "== halt-poll: ctxsw (two tasks on vCPUs 0 and 1 waking each other), {} round trips, {}; {}; {} run(s) each\n",
          results.front().sched_number("loops"), results.front().spec.topology, kernel_words(o.kernel),
          results.front().runs);
  appendf(out, "{:<28} {:>10} {:>8} {:>9} {:>9} {:>10} {:>11}\n", "configuration", "ns/ctxsw", "%CPU", "HLT/s", "IPI/s",
          "poll hits", "mwait wakes");
  for (const auto& r : results)
    appendf(out, "{:<28} {:>10} {:>8.1f} {:>9} {:>9} {:>10} {:>11}\n", r.spec.setting, r.sched_number("ns_per_op"),
            r.host_cpu_percent, rate(r.per_second(r.hlt_exits)), rate(r.per_second(r.res_ipis + r.cal_ipis)),
            r.halt_poll_hits / r.runs, r.mwait_wakes / r.runs);
  appendf(out, "\nns/ctxsw: the guest's own measure (elapsed / switches), mean of the runs; %CPU = modelled host CPU\n"
               "over the guest's measuring window (100 = one CPU); poll hits, mwait wakes: per run (wakeups the host\n"
               "caught while halt-polling; MWAITs ended by a store).\n");
}

}  // namespace

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

const std::vector<std::pair<std::string, std::string>>& experiment_names() {
  static const std::vector<std::pair<std::string, std::string>> kNames = {
      {"l3-cache", "messaging and pipe with l3-cache=off and =on on 16 and 8 Intel vCPUs and 8 AMD ones (control)"},
      {"halt-poll", "ctxsw with no polling, guest haltpoll, host halt_poll_ns, idle=poll and idle=mwait"},
  };
  return kNames;
}

std::vector<ExperimentCase> experiment_cases(const ExperimentOptions& options) {
  if (options.name == "l3-cache") return with_repeats(options, l3_cache_cases(options));
  if (options.name == "halt-poll") return with_repeats(options, halt_poll_cases(options));
  std::string known;
  for (const auto& [name, what] : experiment_names()) known += fmt::format("{}{}", known.empty() ? "" : ", ", name);
  throw ConfigError(fmt::format("experiment {}: no such experiment (known: {})", options.name, known));
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
        fmt::print(progress, "[{:>3}/{}] {} on {} with {}, quantum {}: {} ({:.1f} s)\n", done, cases.size(),
                   cases[i].workload, cases[i].topology, cases[i].setting, cases[i].config.quantum,
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
  const std::vector<CaseMeasurement> results = combine_repeats(runs);
  fmt::memory_buffer out;
  if (options.name == "l3-cache") l3_tables(out, options, results);
  else halt_poll_table(out, options, results);
  std::string cost = options.cost.to_string();
  if (options.name == "halt-poll") {  // each configuration sets its own host polling
    const size_t at = cost.find("halt_poll_ns=");
    const size_t end = cost.find(',', at);
    cost.replace(at, end - at, "halt_poll_ns=(per configuration)");
  }
  appendf(out, "cost model: {}; quanta around {} instructions\n", cost, options.quantum);
  return fmt::to_string(out);
}

namespace {

nlohmann::ordered_json case_json(const CaseMeasurement& r, bool combined) {
  nlohmann::ordered_json c;
  c["workload"] = r.spec.workload;
  c["machine"] = r.spec.topology;
  c["setting"] = r.spec.setting;
  c["smp"] = r.spec.config.smp;
  c["cpu"] = r.spec.config.cpu;
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
std::string format_experiment_json(const ExperimentOptions& options, const std::vector<CaseMeasurement>& runs) {
  using nlohmann::ordered_json;
  ordered_json j;
  j["schema"] = "topolab.experiment/1";
  j["experiment"] = options.name;
  j["kernel"] = options.kernel;
  j["quantum"] = options.quantum;
  j["repeats"] = options.repeats;
  j["scale_percent"] = options.scale_percent;
  ordered_json cases = ordered_json::array(), all = ordered_json::array();
  for (const auto& r : combine_repeats(runs)) cases.push_back(case_json(r, true));
  for (const auto& r : runs) all.push_back(case_json(r, false));
  j["cases"] = cases;
  j["runs"] = all;
  return j.dump(2) + "\n";
}

std::map<std::string, std::string> experiment_charts(const ExperimentOptions& options,
                                                     const std::vector<CaseMeasurement>& runs) {
  const std::vector<CaseMeasurement> results = combine_repeats(runs);
  std::map<std::string, std::string> charts;
  if (options.name == "l3-cache") {
    for (const char* workload : {"messaging", "pipe"}) {
      BarChart chart{.title = fmt::format("{}: RES + CAL IPIs per virtual second ({} kernel)", workload, options.kernel),
                     .value_label = "IPIs per second",
                     .series = {"l3-cache=off", "l3-cache=on"},
                     .groups = {}};
      std::vector<const CaseMeasurement*> rows;
      for (const auto& r : results)
        if (r.spec.workload == workload) rows.push_back(&r);
      for (size_t i = 0; i + 1 < rows.size(); i += 2) {
        const CaseMeasurement &off = *rows[i], &on = *rows[i + 1];
        const double a = off.per_second(off.res_ipis + off.cal_ipis), b = on.per_second(on.res_ipis + on.cal_ipis);
        chart.groups.push_back({off.spec.topology, {a, b}, {"", change(a, b)}});
      }
      charts[fmt::format("l3-cache-{}.svg", workload)] = bar_chart_svg(chart);
    }
  } else {
    BarChart chart{.title = "ctxsw: ns per context switch (lower is better); label: modelled host %CPU",
                   .value_label = "ns per context switch",
                   .series = {"ns/ctxsw"},
                   .groups = {}};
    for (const auto& r : results)
      chart.groups.push_back({r.spec.setting, {double(r.sched_number("ns_per_op"))},
                              {fmt::format("{:.0f}%", r.host_cpu_percent)}});
    charts["halt-poll.svg"] = bar_chart_svg(chart);
  }
  return charts;
}

std::string format_experiment_html(const ExperimentOptions& options, const std::vector<CaseMeasurement>& results,
                                   const std::string& command) {
  HtmlExperimentInput in{command, options.name, format_experiment_tables(options, results),
                         experiment_charts(options, results), {}};
  // Each machine once, in the order the experiment ran them.
  std::vector<std::pair<std::string, std::string>> seen;
  for (const CaseMeasurement& r : results) {
    const std::pair<std::string, std::string> key{r.spec.config.smp, r.spec.config.cpu};
    if (std::find(seen.begin(), seen.end(), key) != seen.end()) continue;
    seen.push_back(key);
    in.machines.emplace_back(r.spec.topology, CpuidModel(Topology::parse(key.first), parse_cpu(key.second)));
  }
  return experiment_html_page(in);
}

}  // namespace topolab
