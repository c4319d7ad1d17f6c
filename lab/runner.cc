// SPDX-License-Identifier: GPL-2.0-or-later
#include "lab/runner.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <exception>
#include <functional>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <thread>

#include <fmt/format.h>

#include "base/errors.h"
#include "base/kvm_para.h"
#include "emu/machine.h"
#include "lab/guest_protocol.h"
#include "report/run_report.h"

namespace topolab {

namespace {

// Linux x86's vectors, which the sched kernel uses too.
constexpr uint8_t kReschedVector = 0xFD;
constexpr uint8_t kCallFunctionVector = 0xFB;
// Linux's other CAL vector (CALL_FUNCTION_VECTOR: smp_call_function_many),
// which /proc/interrupts counts on the CAL line with 0xFB.
constexpr uint8_t kCallFunctionManyVector = 0xFC;

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
    m.exits += s.total_exits();
    // ICR writes and PV IPI hypercalls (not PV spinlocks' kicks).
    const auto pv_ipis = s.hypercalls.find(KVM_HC_SEND_IPI);
    m.send_exits += s.exits[static_cast<size_t>(ExitKind::Icr)] + (pv_ipis == s.hypercalls.end() ? 0 : pv_ipis->second);
    m.ipis_received += s.total_received();
  }
  m.host_cpu_percent = host_cpu_percent(w.stats, m.window_ns);
}

// The Linux guest's run: it must have powered off after /init finished, and
// its own /proc/interrupts deltas must equal what topolab's window saw.
void measure_linux_case(const std::string& serial, const RunResult& r, const MeasureWindow* w, CaseMeasurement& m,
                        const std::function<std::string()>& where) {
  if (const std::string panic = line_from(serial, "Kernel panic - not syncing"); !panic.empty())
    throw std::runtime_error(fmt::format("{}: the guest's kernel panicked: {}", where(), one_line(panic)));
  if (r.outcome != RunResult::Outcome::Shutdown || serial.find("topolab-init: done") == std::string::npos) {
    const std::string error = line_from(serial, "topolab-init: error");
    throw std::runtime_error(fmt::format("{}: the guest failed: {}", where(), !error.empty() ? one_line(error) : r.diagnosis));
  }
  m.sched = parse_perf_bench(serial);
  m.ns_per_op_sum = m.sched_number("ns_per_op");  // topolab-ctxsw's; perf's benchmarks have none
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

// The sched kernel's run: it must have exited 0 through isa-debug-exit after
// its result line, inside the window it marked (port 0x4a0).
void measure_sched_case(const std::string& serial, const RunResult& r, const MeasureWindow* w, CaseMeasurement& m,
                        const std::function<std::string()>& where) {
  if (r.outcome != RunResult::Outcome::GuestExit || r.guest_value != 0u) {
    std::string last_line;
    if (size_t fail = serial.rfind("FAIL"); fail != std::string::npos)
      last_line = serial.substr(fail, serial.find('\n', fail) - fail);
    std::erase(last_line, '\r');
    throw std::runtime_error(fmt::format("{}: the guest failed: {}", where(),
                                         !r.diagnosis.empty() ? r.diagnosis
                                         : !last_line.empty() ? one_line(last_line)
                                                              : fmt::format("exit value {}", r.guest_value.value_or(0))));
  }
  auto sched = parse_sched_result(serial);
  if (!sched) throw std::runtime_error(fmt::format("{}: the guest printed no sched-result line", where()));
  m.sched = *sched;
  m.ns_per_op_sum = m.sched_number("ns_per_op");
  if (!w || !w->ended_by_guest)
    throw std::runtime_error(fmt::format("{}: the guest did not mark its measuring window (port 0x4a0)", where()));
}

CaseMeasurement measure_case(const ExperimentCase& spec, const VcpuFactory& make_vcpu) {
  std::string serial;
  Machine machine(spec.config, [&serial](uint8_t b) { serial.push_back(static_cast<char>(b)); }, make_vcpu);
  RunResult r = machine.run();
  auto where = [&] { return fmt::format("{} on {} with {}", spec.workload, spec.topology, spec.setting); };
  const std::optional<MeasureWindow>& w = machine.window();
  CaseMeasurement m;
  m.spec = spec;
  const bool linux_guest = spec.guest == Guest::Linux;
  if (linux_guest) measure_linux_case(serial, r, w ? &*w : nullptr, m, where);
  else measure_sched_case(serial, r, w ? &*w : nullptr, m, where);
  fill_window_counts(*w, m, linux_guest);
  return m;
}

// Any failure names the case it belongs to; bad input stays bad input.
CaseMeasurement run_case(const ExperimentCase& spec, const VcpuFactory& make_vcpu) {
  try {
    return measure_case(spec, make_vcpu);
  } catch (const InputError&) {
    throw;
  } catch (const std::exception& e) {
    const std::string what = e.what();
    if (what.find(spec.workload + " on ") == 0) throw;
    throw std::runtime_error(fmt::format("{} on {} with {}: {}", spec.workload, spec.topology, spec.setting, what));
  }
}

}  // namespace

std::vector<CaseMeasurement> run_experiment_cases(const ExperimentOptions& options,
                                                  const std::vector<ExperimentCase>& cases,
                                                  const VcpuFactory& make_vcpu, std::FILE* progress) {
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
        results[i] = run_case(cases[i], make_vcpu);
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

}  // namespace topolab
