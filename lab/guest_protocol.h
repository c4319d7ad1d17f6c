// SPDX-License-Identifier: GPL-2.0-or-later
// What the experiments' guests print on their serial port, read back: the
// sched kernel's result line (testcases/sched) and the Linux guest's /init
// lines (tools/linux_init.sh): perf bench sched's output between
// "topolab-bench-begin"/"-end", and /proc/interrupts' RES and CAL lines
// before and after the benchmark. Pure functions of the serial text.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace topolab {

// What a guest printed that cannot be read as a measurement: a count past
// 64 bits, a counter that went down. One line that quotes no guest text;
// the experiment names its case and ends. The experiments boot their own
// guests (the sched kernel, /init on Debian's kernel), so this is no
// InputError.
class GuestProtocolError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The lines of the serial output, without the console's CRs.
std::vector<std::string> serial_lines(const std::string& serial);

// The sched kernel's last "sched-result: k=v k=v" line, at the start of a
// line; nullopt when there is none or it is not all k=v.
std::optional<std::map<std::string, std::string>> parse_sched_result(const std::string& serial);

// What the benchmark /init ran last printed: "bench" (messaging:1:100),
// "loops", and perf's "total_sec", "usecs_per_op", "ops_per_sec" where it
// gives them; for ctxsw:L topolab-ctxsw's fields ("switches",
// "elapsed_ns", "ns_per_switch", the last also as "ns_per_op") and the
// guest's cpuidle "driver", "governor" and "states".
std::map<std::string, std::string> parse_perf_bench(const std::string& serial);

// Each CPU's RES and CAL rise between the last /proc/interrupts /init printed
// before a benchmark and the one after (as many CPUs as both blocks name).
// Throws GuestProtocolError for a count past 64 bits or one that fell.
struct LinuxInterruptDeltas {
  std::vector<uint64_t> res, cal;
};
LinuxInterruptDeltas linux_interrupt_deltas(const std::string& serial);

// The rest of the first line that contains `marker`, from the marker on
// ("Kernel panic - not syncing: ...", "topolab-init: error ..."), without
// the console's CRs; empty when no line does. Still the guest's bytes:
// quote it through one_line() (base/errors.h).
std::string line_from(const std::string& serial, const std::string& marker);

}  // namespace topolab
