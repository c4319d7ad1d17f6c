// SPDX-License-Identifier: GPL-2.0-or-later
// The halt-poll experiment: a context-switch benchmark on 10 vCPUs with no
// polling, the guest's haltpoll driver, the host's halt_poll_ns, idle=poll
// and idle=mwait, each trading host CPU for wakeup latency.
#include <fmt/format.h>

#include "base/text_buffer.h"
#include "report/svg_report.h"
#include "lab/experiment_parts.h"

namespace topolab::experiment_parts {

namespace {

// The haltpoll seed: a context-switch benchmark on a 10-vCPU guest. As
// under KVM, the guests get x2APIC (KVM offers it on every model).
constexpr const char* kHaltPollSmp = "10";
constexpr const char* kHaltPollCpu = "Skylake-Server,+x2apic,+monitor";
constexpr unsigned kCtxswLoops = 5000;
constexpr uint64_t kPollThresholds[] = {10000, 20000, 30000, 500000};

// The same rows on Debian's Linux 6.1 (docs/results.md, "halt-poll on
// Linux"): a KVM guest with QEMU's defaults, and topolab-ctxsw pinned to
// CPUs 0 and 1. The kernel has the haltpoll cpuidle driver but not its
// governor, so guest polling is one row (the driver under the menu
// governor, its poll state limited to the next state's 1 us), not four;
// the driver needs KVM_HINTS_REALTIME and switches the host's polling off
// through MSR_KVM_POLL_CONTROL. idle=mwait is no Linux option: the row
// offers MONITOR/MWAIT and lets the kernel choose.
constexpr const char* kLinuxHaltPollCpu = "Skylake-Server,+x2apic,kvm=on";
constexpr unsigned kLinuxCtxswLoops = 2000;
constexpr uint64_t kKvmHaltPollNs = 200000;  // KVM's halt_poll_ns default

std::vector<ExperimentCase> linux_halt_poll_cases(const ExperimentOptions& o) {
  const unsigned loops = scaled(kLinuxCtxswLoops, o.scale_percent);
  const std::string machine = fmt::format("{} vCPUs {}", kHaltPollSmp, kLinuxHaltPollCpu);
  auto make = [&](std::string setting, const std::string& cpu_extra, const std::string& append_extra,
                  uint64_t host_poll_ns) {
    MachineConfig c = linux_config(o, kHaltPollSmp, std::string(kLinuxHaltPollCpu) + cpu_extra,
                                   fmt::format("ctxsw:{}", loops));
    c.append += append_extra;
    c.cost.halt_poll_ns = host_poll_ns;
    return ExperimentCase{"ctxsw", machine, std::move(setting), 0, c, Guest::Linux};
  };
  std::vector<ExperimentCase> cases;
  cases.push_back(make("no polling", "", "", 0));
  cases.push_back(make("guest haltpoll driver", ",kvm-hint-dedicated=on,kvm-poll-control=on", "", kKvmHaltPollNs));
  for (uint64_t ns : kPollThresholds) cases.push_back(make(fmt::format("host halt_poll_ns {}", ns), "", "", ns));
  cases.push_back(make("idle=poll", "", " idle=poll", 0));
  cases.push_back(make("MWAIT offered", ",+monitor", "", 0));
  return cases;
}

std::vector<ExperimentCase> halt_poll_cases(const ExperimentOptions& o) {
  if (o.guest == Guest::Linux) return linux_halt_poll_cases(o);
  const unsigned loops = scaled(kCtxswLoops, o.scale_percent);
  const std::string machine = fmt::format("{} vCPUs {}", kHaltPollSmp, kHaltPollCpu);
  auto make = [&](std::string setting, const std::string& idle, uint64_t host_poll_ns) {
    MachineConfig c = base_config(o, kHaltPollSmp, kHaltPollCpu,
                                  fmt::format("workload=ctxsw loops={} idle={} wakelist={} quiet=1", loops, idle,
                                              wakelist_for(o.wake_list)));
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

std::string halt_poll_table(const ExperimentOptions& o, const std::vector<CaseMeasurement>& results) {
  fmt::memory_buffer out;
  if (results.empty()) return "";
  if (o.guest == Guest::Linux)
    appendf(out, "== halt-poll: topolab-ctxsw (two processes on CPUs 0 and 1 handing a futex back and forth), {} round "
                 "trips, {} on Debian's Linux 6.1; {} run(s) each\n",
            results.front().sched_number("loops"), results.front().spec.topology, results.front().runs);
  else
    appendf(out, "== halt-poll: ctxsw (two tasks on vCPUs 0 and 1 waking each other), {} round trips, {}; {}; {} run(s) each\n",
            results.front().sched_number("loops"), results.front().spec.topology, kernel_words(o.wake_list),
            results.front().runs);
  appendf(out, "{:<28} {:>10} {:>8} {:>9} {:>9} {:>10} {:>11}\n", "configuration", "ns/ctxsw", "%CPU", "HLT/s", "IPI/s",
          "poll hits", "mwait wakes");
  for (const auto& r : results) {
    appendf(out, "{:<28} {:>10} {:>8.1f} {:>9} {:>9} {:>10} {:>11}", r.spec.setting, r.sched_number("ns_per_op"),
            r.host_cpu_percent, rate(r.per_second(r.hlt_exits)), rate(r.per_second(r.res_ipis + r.cal_ipis)),
            r.halt_poll_hits / r.runs, r.mwait_wakes / r.runs);
    // How the guest idled: its cpuidle driver, governor and states.
    if (o.guest == Guest::Linux)
      appendf(out, "  cpuidle {}/{}{}", r.sched.count("driver") ? r.sched.at("driver") : "?",
              r.sched.count("governor") ? r.sched.at("governor") : "?",
              r.sched.count("states") && !r.sched.at("states").empty() ? " " + r.sched.at("states") : "");
    appendf(out, "\n");
  }
  appendf(out, "\nns/ctxsw: the guest's own measure (elapsed / switches), mean of the runs; %CPU = modelled host CPU\n"
               "over the guest's measuring window (100 = one CPU); poll hits, mwait wakes: per run (wakeups the host\n"
               "caught while halt-polling; MWAITs ended by a store).\n");
  if (o.guest == Guest::Linux)
    appendf(out, "IPI/s: RES + CAL as the guest took them. cpuidle: the guest's cpuidle driver/governor and CPU 0's\n"
                 "states (none: no driver; the kernel idles with HLT, or polls with idle=poll). The guest haltpoll\n"
                 "driver row has the host polling 200 us (KVM's default) until the driver turns it off per vCPU\n"
                 "(MSR_KVM_POLL_CONTROL). docs/results.md says which of the seed's rows this kernel cannot give.\n");
  return fmt::to_string(out);
}

std::map<std::string, std::string> halt_poll_charts(const ExperimentOptions&, const std::vector<CaseMeasurement>& results) {
  std::map<std::string, std::string> charts;
  BarChart chart{.title = "ctxsw: ns per context switch (lower is better); label: modelled host %CPU",
                 .value_label = "ns per context switch",
                 .series = {"ns/ctxsw"},
                 .groups = {}};
  for (const auto& r : results)
    chart.groups.push_back({r.spec.setting, {double(r.sched_number("ns_per_op"))},
                            {fmt::format("{:.0f}%", r.host_cpu_percent)}});
  charts["halt-poll.svg"] = bar_chart_svg(chart);
  return charts;
}

}  // namespace

Experiment halt_poll_experiment() {
  return {.name = "halt-poll",
          .description = "ctxsw with no polling, guest haltpoll, host halt_poll_ns, idle=poll and idle=mwait",
          .cases = halt_poll_cases,
          .tables = halt_poll_table,
          .charts = halt_poll_charts,
          .per_case_cost = "halt_poll_ns"};  // each configuration sets its own host polling
}

}  // namespace topolab::experiment_parts
