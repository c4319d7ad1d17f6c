// SPDX-License-Identifier: GPL-2.0-or-later
// The l3-cache experiment (the seeds' debate, docs/results.md): perf bench sched
// messaging and pipe with l3-cache=off and =on, on 16 and 8 Intel vCPUs
// and on an AMD family 15 model as the control.
#include <fmt/format.h>

#include "base/text_buffer.h"
#include "report/svg_report.h"
#include "lab/experiment_parts.h"

namespace topolab::experiment_parts {

namespace {

constexpr const char* kWorkloads[] = {"messaging", "pipe"};

struct Machine3 {
  const char* name;
  const char* smp;
  const char* cpu;
};

// The machines of the seeds (docs/results.md): the SAP HANA guest's 16 vCPUs
// with SMT, the 8-core `perf bench` guest, and an AMD family 15 model whose
// LLC Linux takes from the package, so that l3-cache cannot matter (control).
constexpr Machine3 kL3Machines[] = {
    {"16 vCPUs 1s x 8c x 2t Skylake-Server", "16,sockets=1,cores=8,threads=2", "Skylake-Server,+x2apic"},
    {"8 vCPUs 1s x 8c Skylake-Server", "8,sockets=1,cores=8,threads=1", "Skylake-Server,+x2apic"},
    {"8 vCPUs 1s x 8c qemu64 (AMD fam 15h, control)", "8,sockets=1,cores=8,threads=1", "qemu64,+x2apic"},
};
constexpr unsigned kMessagingLoops = 100;  // perf bench sched messaging's default
constexpr unsigned kPipeLoops = 10000;
// What the tables call a machine with --pv `pv`: its name alone for off,
// so that the default run's tables stay as they were.
std::string pv_machine_name(const Machine3& m, PvSetting pv) {
  switch (pv) {
    case PvSetting::Off: return m.name;
    case PvSetting::Qemu: return fmt::format("{}, KVM PV: QEMU's", m.name);
    case PvSetting::All: return fmt::format("{}, KVM PV: all", m.name);
  }
  return m.name;
}

std::vector<ExperimentCase> l3_cache_cases(const ExperimentOptions& o) {
  std::vector<ExperimentCase> cases;
  for (const char* workload : kWorkloads) {
    unsigned loops = scaled(std::string(workload) == "pipe" ? kPipeLoops : kMessagingLoops, o.scale_percent);
    for (const Machine3& m : kL3Machines)
      for (PvSetting pv : o.guest == Guest::Linux ? o.pv : std::vector<PvSetting>{PvSetting::Off})
        for (const char* l3 : {"off", "on"}) {
          const std::string cpu = fmt::format("{},l3-cache={}", m.cpu, l3);
          if (o.guest == Guest::Linux) {
            // perf bench sched itself, with the sched guest's sizes: messaging -g 1 -l L, pipe -l L.
            // kvm=on: the KVM signature, without which Linux ignores +x2apic
            // (no interrupt remapping), as a KVM guest of the seeds would not;
            // --pv off (the default) offers none of KVM's paravirtual features,
            // as the results of docs/results.md were made before topolab had them.
            const std::string bench = std::string(workload) == "pipe" ? fmt::format("pipe:{}", loops)
                                                                      : fmt::format("messaging:1:{}", loops);
            cases.push_back({workload, pv_machine_name(m, pv), fmt::format("l3-cache={}", l3), 0,
                             linux_config(o, m.smp, cpu + ",kvm=on" + pv_cpu_properties(pv), bench), Guest::Linux});
            continue;
          }
          cases.push_back({workload, m.name, fmt::format("l3-cache={}", l3), 0,
                           base_config(o, m.smp, cpu,
                                       fmt::format("workload={} loops={} wakelist={} quiet=1", workload, loops,
                                                   wakelist_for(o.wake_list)))});
        }
  }
  return cases;
}


// Each machine's l3-cache=off and =on rows, found by their setting, in the
// order the machines first appear.
std::vector<std::pair<const CaseMeasurement*, const CaseMeasurement*>> off_on_pairs(
    const std::vector<const CaseMeasurement*>& rows) {
  std::vector<std::pair<const CaseMeasurement*, const CaseMeasurement*>> pairs;
  for (const CaseMeasurement* r : rows) {
    if (r->spec.setting != "l3-cache=off") continue;
    for (const CaseMeasurement* on : rows)
      if (on->spec.topology == r->spec.topology && on->spec.setting == "l3-cache=on") pairs.emplace_back(r, on);
  }
  return pairs;
}

// The table of a --pv run: RES and CAL as before, with the IPIs, the exits
// that sent them and every exit.
void pv_table(fmt::memory_buffer& out, const std::vector<const CaseMeasurement*>& rows) {
  appendf(out, "{:<60} {:<8} {:>8} {:>8} {:>8} {:>13} {:>9} {:>8} {:>8} {:>6}\n", "machine", "l3-cache", "RES/s", "CAL/s",
          "IPIs/s", "send exits/s", "exits/s", "HLT/s", "time ms", "%CPU");
  for (const auto& [off_row, on_row] : off_on_pairs(rows)) {
    const CaseMeasurement* pair[2] = {off_row, on_row};
    for (int k = 0; k < 2; ++k) {
      const CaseMeasurement& r = *pair[k];
      appendf(out, "{:<60} {:<8} {:>8} {:>8} {:>8} {:>13} {:>9} {:>8} {:>8.3f} {:>6.0f}\n", k == 0 ? r.spec.topology : "",
              r.spec.setting.substr(r.spec.setting.find('=') + 1), rate(r.per_second(r.res_ipis)),
              rate(r.per_second(r.cal_ipis)), rate(r.per_second(r.ipis_received)), rate(r.per_second(r.send_exits)),
              rate(r.per_second(r.exits)), rate(r.per_second(r.hlt_exits)), r.mean_window_ns() / 1e6,
              r.host_cpu_percent);
    }
    const CaseMeasurement &off = *pair[0], &on = *pair[1];
    appendf(out, "{:<60} {:<8} {:>8} {:>8} {:>8} {:>13} {:>9} {:>8} {:>8} {:>6}\n", "", "change",
            change(off.per_second(off.res_ipis), on.per_second(on.res_ipis)),
            change(off.per_second(off.cal_ipis), on.per_second(on.cal_ipis)),
            change(off.per_second(off.ipis_received), on.per_second(on.ipis_received)),
            change(off.per_second(off.send_exits), on.per_second(on.send_exits)),
            change(off.per_second(off.exits), on.per_second(on.exits)),
            change(off.per_second(off.hlt_exits), on.per_second(on.hlt_exits)),
            change(off.mean_window_ns(), on.mean_window_ns()), change(off.host_cpu_percent, on.host_cpu_percent));
  }
  appendf(out, "\n");
}

std::string l3_tables(const ExperimentOptions& o, const std::vector<CaseMeasurement>& results) {
  fmt::memory_buffer out;
  for (const char* workload : kWorkloads) {
    const std::vector<const CaseMeasurement*> rows = rows_of(results, workload);
    if (rows.empty()) continue;
    if (o.guest == Guest::Linux)
      appendf(out, "== {}: perf bench sched {} on Debian's Linux 6.1; {} run(s) each\n", workload,
              std::string(workload) == "pipe" ? fmt::format("pipe -l {}", rows.front()->sched_number("loops"))
                                              : fmt::format("messaging -g 1 -l {}", rows.front()->sched_number("loops")),
              rows.front()->runs);
    else
      appendf(out, "== {}: {}, {} loops, op_ns {}; {}; {} run(s) each\n", workload,
              std::string(workload) == "pipe" ? "two tasks ping-ponging (perf bench sched pipe)"
                                              : "20 senders x 20 receivers (perf bench sched messaging -g 1)",
              rows.front()->sched_number("loops"), rows.front()->sched_number("op_ns"), kernel_words(o.wake_list),
              rows.front()->runs);
    if (o.pv_axis()) {
      pv_table(out, rows);
      continue;
    }
    appendf(out, "{:<46} {:<8} {:>8} {:>8} {:>9} {:>15} {:>8} {:>8} {:>13} {:>9} {:>6}\n", "machine", "l3-cache",
            "RES/s", "CAL/s", "RES+CAL/s", "(spread)", "HLT/s", "time ms", "(spread)", "IPIs/vCPU", "%CPU");
    for (const auto& [off_row, on_row] : off_on_pairs(rows)) {
      const CaseMeasurement* pair[2] = {off_row, on_row};
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
  if (o.pv_axis())
    appendf(out, "KVM PV: the paravirtual features offered (docs/kvm_pv.md): none (the machine's name alone), QEMU's\n"
                 "defaults for a KVM guest, or all (PV IPIs, PV spinlocks, PV TLB flush, PV sched yield, poll control\n"
                 "too). IPIs/s = every IPI the vCPUs received; send exits/s = the exits that sent them (ICR writes, PV\n"
                 "IPI hypercalls: one hypercall carries a whole multicast, so the two diverge); exits/s = every exit.\n");
  if (o.guest == Guest::Linux)
    appendf(out, "RES = vector 0xFD, CAL = 0xFB + 0xFC, as the guest's handlers took them in its measuring window\n"
                 "(each vCPU's counts equal its /proc/interrupts deltas, checked in every run; the window is perf's\n"
                 "run as topolab-window marks it, fork and exec of perf included, and perf's own Total time is in\n"
                 "the JSON); rates are totals over all runs of a case divided by their total virtual time, (spread)\n"
                 "the lowest and highest run; time = mean virtual run time; IPIs/vCPU = (RES + CAL) taken per vCPU\n"
                 "and run; %CPU = modelled host CPU (100 = one CPU). The runs of a case differ only in the quantum.\n");
  else
    appendf(out, "RES = vector 0xFD, CAL = vector 0xFB, received in the guest's measuring window; rates are totals\n"
                 "over all runs of a case divided by their total virtual time, (spread) the lowest and highest run;\n"
                 "time = mean virtual run time; IPIs/vCPU = (RES + CAL) received per vCPU and run; %CPU = modelled\n"
                 "host CPU (100 = one CPU). The runs of a case differ only in the quantum, i.e. in how finely the\n"
                 "vCPUs interleave; the guest does the same work in each.\n");
  return fmt::to_string(out);
}

std::map<std::string, std::string> l3_charts(const ExperimentOptions& options, const std::vector<CaseMeasurement>& results) {
  std::map<std::string, std::string> charts;
  for (const char* workload : kWorkloads) {
    BarChart chart{.title = fmt::format("{}: RES + CAL IPIs per virtual second ({} kernel)", workload, kernel_name(options.wake_list)),
                   .value_label = "IPIs per second",
                   .series = {"l3-cache=off", "l3-cache=on"},
                   .groups = {}};
    for (const auto& [off_row, on_row] : off_on_pairs(rows_of(results, workload))) {
      const CaseMeasurement &off = *off_row, &on = *on_row;
      const double a = off.per_second(off.res_ipis + off.cal_ipis), b = on.per_second(on.res_ipis + on.cal_ipis);
      chart.groups.push_back({off.spec.topology, {a, b}, {"", change(a, b)}});
    }
    charts[fmt::format("l3-cache-{}.svg", workload)] = bar_chart_svg(chart);
  }
  return charts;
}

}  // namespace

Experiment l3_cache_experiment() {
  return {.name = "l3-cache",
          .description = "messaging and pipe with l3-cache=off and =on on 16 and 8 Intel vCPUs and 8 AMD ones (control)",
          .cases = l3_cache_cases,
          .tables = l3_tables,
          .charts = l3_charts,
          .per_case_cost = ""};
}

}  // namespace topolab::experiment_parts
