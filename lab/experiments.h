// SPDX-License-Identifier: GPL-2.0-or-later
// The experiments of the l3-cache debate and of guest halt-polling, one
// command each: a fixed set of machines boots the testcases/sched kernel
// (or the Linux guest) with one workload each, and the tables, JSON and SVG
// charts compare what the guest's scheduler did (IPIs, HLT exits) and what
// the cost model says it cost (time, host CPU). Every number comes from
// virtual time, so the same experiment prints the same bytes on any host.
// The table of experiments is here; each one is a file of its own
// (experiment_*.cc), the runner is runner.h, the guests' output is read by
// guest_protocol.h, and a sweep in pieces is sweep.h.
#pragma once

#include <cstdint>
#include <cstdio>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "emu/machine_config.h"

namespace topolab {

// The guest an experiment boots: testcases/sched's kernel, or Debian's Linux
// 6.1 with tools/linux_guest.sh's initramfs, running perf bench sched.
enum class Guest { Sched, Linux };
const char* guest_name(Guest guest);  // "sched", "linux": what --guest takes
std::optional<Guest> guest_named(std::string_view name);

// The IPI a guest kernel's wake lists send: RES (the reschedule IPI), as
// the seeds' 2016 kernels, or CAL (the function-call IPI), as Linux 6.x.
enum class WakeList { Res, Cal };
const char* kernel_name(WakeList wake_list);  // "2016", "6.x": what --kernel takes
std::optional<WakeList> wake_list_named(std::string_view name);

// KVM's paravirtual features a Linux guest's machine offers (docs/kvm_pv.md):
// none beyond the signature, QEMU's defaults for a KVM guest (kvmclock,
// steal time, PV EOI, no PIO delay), or every feature topolab's host has
// (QEMU's defaults with PV IPIs, PV spinlocks, PV TLB flush, PV sched
// yield and poll control).
enum class PvSetting { Off, Qemu, All };
const char* pv_name(PvSetting pv);  // "off", "qemu", "all": what --pv takes
std::optional<PvSetting> pv_named(std::string_view name);
// The -cpu properties after kvm=on that give `pv`.
std::string pv_cpu_properties(PvSetting pv);

// One machine of an experiment.
struct ExperimentCase {
  std::string workload;  // messaging, pipe, ctxsw
  std::string topology;  // what the tables call the machine
  std::string setting;   // what this case changes: "l3-cache=on", "haltpoll=10000"
  unsigned repeat = 0;   // which perturbation of the case (its quantum)
  MachineConfig config;
  Guest guest = Guest::Sched;  // whose protocol its serial output follows
};

// "pipe on 8 vCPUs ... with l3-cache=on, quantum 600": what the progress
// lines, --list-cases and the errors about case files call one run.
std::string describe_case(const ExperimentCase& c);

// What one case measured, from the guest's measuring window; combined over
// its repeats, the counts and window_ns are sums (rates are ratios of sums).
struct CaseMeasurement {
  ExperimentCase spec;
  std::map<std::string, std::string> sched;  // the guest's sched-result line
  unsigned runs = 1;
  uint64_t window_ns = 0;
  uint64_t window_min_ns = 0, window_max_ns = 0;
  double ipi_rate_min = 0, ipi_rate_max = 0;  // RES + CAL per second
  uint64_t ns_per_op_sum = 0;                  // the guest's ns_per_op, over the runs
  uint64_t res_ipis = 0;  // RESCHEDULE_VECTOR 0xFD received
  uint64_t cal_ipis = 0;  // CALL_FUNCTION_SINGLE_VECTOR 0xFB received
  uint64_t hlt_exits = 0;
  uint64_t halt_poll_hits = 0;
  uint64_t mwait_wakes = 0;  // MWAITs ended by a store
  // Every exit, the exits that sent IPIs (ICR writes and KVM_HC_SEND_IPI
  // hypercalls: one PV IPI carries a whole multicast), and the IPIs received.
  uint64_t exits = 0;
  uint64_t send_exits = 0;
  uint64_t ipis_received = 0;
  unsigned vcpus = 0;
  double host_cpu_percent = 0;

  double per_second(uint64_t count) const { return window_ns ? count * 1e9 / window_ns : 0; }
  double mean_window_ns() const { return runs ? double(window_ns) / runs : 0; }
  uint64_t sched_number(const std::string& key) const;  // 0 when absent or not a decimal number
};

struct ExperimentOptions {
  std::string name;         // l3-cache or halt-poll
  std::string sched_image;  // testcases/sched.elf
  // The Linux guest's files are in `linux_dir`: vmlinux, booted by PVH, and
  // initramfs.cpio.
  Guest guest = Guest::Sched;
  std::string linux_dir;
  std::string output_dir;   // results.json and the SVG charts; empty: none
  bool json = false;        // print JSON instead of the tables
  WakeList wake_list = WakeList::Res;  // --kernel 2016; 6.x: Cal
  uint64_t quantum = 1000;      // small: shared-memory wakeups are timed to it
  // Each case runs this often, at quanta around `quantum` (the interleaving
  // of the vCPUs changes; the guest does not), and the tables show the
  // combined result and the spread: one deterministic run is one sample.
  unsigned repeats = 5;
  unsigned jobs = 2;            // machines run side by side
  unsigned scale_percent = 100; // workload size (tests run them small)
  bool spin_skip = true;        // MachineConfig::spin_skip
  // --pv: the Linux guest's machines, once per setting.
  std::vector<PvSetting> pv{PvSetting::Off};
  // --pv asks for more than the default (off alone).
  bool pv_axis() const { return pv != std::vector<PvSetting>{PvSetting::Off}; }
  CostModel cost = CostModel::defaults();
};

// The options that change an experiment's results, as its JSON and its
// case files record them, in that order: experiment, kernel, quantum,
// repeats, scale_percent, spin_skip.
nlohmann::ordered_json recorded_options_json(const ExperimentOptions& o);

// One experiment: its machines, its tables and its charts.
struct Experiment {
  std::string name;
  std::string description;  // one line, for `topolab experiment` with no name
  // The cases, one run each: experiment_cases() adds the repeats.
  std::function<std::vector<ExperimentCase>(const ExperimentOptions&)> cases;
  // Tables and charts (file name -> SVG) of the cases combined over their repeats.
  std::function<std::string(const ExperimentOptions&, const std::vector<CaseMeasurement>&)> tables;
  std::function<std::map<std::string, std::string>(const ExperimentOptions&, const std::vector<CaseMeasurement>&)> charts;
  // A cost-model key (CostModel::entries()) each case sets itself: the
  // tables show "(per configuration)" as its value.
  std::string per_case_cost;
};

// Every experiment, in the order `topolab experiment` lists them.
const std::vector<Experiment>& experiments();
// Throws ConfigError for an unknown name.
const Experiment& find_experiment(const std::string& name);

// The names `topolab experiment` takes, with one line on each.
const std::vector<std::pair<std::string, std::string>>& experiment_names();

// The cases of an experiment. Throws ConfigError for an unknown name.
std::vector<ExperimentCase> experiment_cases(const ExperimentOptions& options);

// One measurement per case from the runs of its repeats (which follow one
// another in `runs`).
std::vector<CaseMeasurement> combine_repeats(const std::vector<CaseMeasurement>& runs);
inline constexpr unsigned kMaxRepeats = 10;

std::string format_experiment_tables(const ExperimentOptions& options, const std::vector<CaseMeasurement>& results);
std::string format_experiment_json(const ExperimentOptions& options, const std::vector<CaseMeasurement>& results);
// File name -> SVG text.
std::map<std::string, std::string> experiment_charts(const ExperimentOptions& options,
                                                     const std::vector<CaseMeasurement>& results);
// The experiment's HTML page (report/html_report.h): the charts, the
// tables, and each machine it ran as CPUID describes it. `command` is the
// command line the page names.
std::string format_experiment_html(const ExperimentOptions& options, const std::vector<CaseMeasurement>& results,
                                   const std::string& command);

}  // namespace topolab
