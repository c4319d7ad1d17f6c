// SPDX-License-Identifier: GPL-2.0-or-later
#include "lab/experiments.h"

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <initializer_list>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "base/text_buffer.h"
#include "lab/experiment_parts.h"
#include "model/machine_spec.h"
#include "report/html_report.h"
#include "report/run_report.h"

namespace topolab {

using namespace experiment_parts;

namespace {

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

}  // namespace

namespace experiment_parts {

unsigned scaled(unsigned loops, unsigned percent) { return std::max(1u, loops * percent / 100); }

std::string wakelist_for(WakeList wake_list) { return wake_list == WakeList::Cal ? "cal" : "res"; }

MachineConfig base_config(const ExperimentOptions& o, const char* smp, std::string cpu, std::string append) {
  ParsedMachine machine = parse_machine_spec(MachineSpec(smp, std::move(cpu)));
  MachineConfig c;
  c.topology = std::move(machine.topology);
  c.cpu = std::move(machine.cpu);
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

std::string kernel_words(WakeList wake_list) {
  return wake_list == WakeList::Cal ? "wake lists send CAL (function-call) IPIs, as Linux 6.x"
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

const char* guest_name(Guest guest) { return guest == Guest::Linux ? "linux" : "sched"; }

const char* kernel_name(WakeList wake_list) { return wake_list == WakeList::Cal ? "6.x" : "2016"; }

const char* pv_name(PvSetting pv) {
  switch (pv) {
    case PvSetting::Off: return "off";
    case PvSetting::Qemu: return "qemu";
    case PvSetting::All: return "all";
  }
  return "?";
}

std::string pv_cpu_properties(PvSetting pv) {
  switch (pv) {
    case PvSetting::Off: return kvm_pv_defaults_off();
    case PvSetting::Qemu: return "";
    case PvSetting::All: return ",kvm-pv-ipi=on,kvm-pv-unhalt=on,kvm-pv-tlb-flush=on,kvm-pv-sched-yield=on,kvm-poll-control=on";
  }
  return "";
}

namespace {

// The one of `values` that `name_of` calls `name`: the names are spelled
// once, in the *_name functions.
template <typename T>
std::optional<T> value_named(std::string_view name, std::initializer_list<T> values, const char* (*name_of)(T)) {
  for (T value : values)
    if (name == name_of(value)) return value;
  return std::nullopt;
}

}  // namespace

std::optional<Guest> guest_named(std::string_view name) {
  return value_named(name, {Guest::Sched, Guest::Linux}, guest_name);
}

std::optional<WakeList> wake_list_named(std::string_view name) {
  return value_named(name, {WakeList::Res, WakeList::Cal}, kernel_name);
}

std::optional<PvSetting> pv_named(std::string_view name) {
  return value_named(name, {PvSetting::Off, PvSetting::Qemu, PvSetting::All}, pv_name);
}

std::string describe_case(const ExperimentCase& c) {
  return fmt::format("{} on {} with {}, quantum {}", c.workload, c.topology, c.setting, c.config.quantum);
}

uint64_t CaseMeasurement::sched_number(const std::string& key) const {
  auto it = sched.find(key);
  if (it == sched.end()) return 0;
  // Digits only: stoull would take "-5" as 2^64 - 5.
  uint64_t value = 0;
  const std::string& text = it->second;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  return error == std::errc() && end == text.data() + text.size() ? value : 0;
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
    c.exits += r.exits;
    c.send_exits += r.send_exits;
    c.ipis_received += r.ipis_received;
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
  std::string cost;
  for (const auto& [key, value] : options.cost.entries())
    cost += fmt::format("{}{}={}", cost.empty() ? "" : ",", key,
                        key == experiment.per_case_cost ? "(per configuration)" : value);
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
  c["exits"] = r.exits;
  c["send_exits"] = r.send_exits;
  c["ipis_received"] = r.ipis_received;
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
  j["kernel"] = kernel_name(o.wake_list);
  j["quantum"] = o.quantum;
  j["repeats"] = o.repeats;
  j["scale_percent"] = o.scale_percent;
  j["spin_skip"] = o.spin_skip;
  if (o.guest != Guest::Sched) j["guest"] = guest_name(o.guest);  // the sched guest's JSON stays as it was
  if (o.pv_axis()) {
    std::string pv;
    for (PvSetting p : o.pv) pv += (pv.empty() ? "" : ",") + std::string(pv_name(p));
    j["pv"] = pv;  // as --pv takes it; absent for off, so earlier results read the same
  }
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
    in.machines.emplace_back(r.spec.topology, CpuidModel(r.spec.config.topology, r.spec.config.cpu,
                                                         r.spec.config.machine_options));
  }
  return experiment_html_page(in);
}

}  // namespace topolab
