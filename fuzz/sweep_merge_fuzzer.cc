// SPDX-License-Identifier: GPL-2.0-or-later
// The case files `topolab experiment NAME --merge DIR` reads
// (lab/sweep.h): parse_case_file, which read_case_files runs
// on every case-*.json and whose ConfigError the command turns into one
// line and status 125. Input: the file's text; the merge is the l3-cache
// experiment with its default options, or halt-poll when the text's first
// byte is odd (the cases differ; "{" is odd, so the l3-cache seeds start
// with a blank).
// Invariants:
// - ConfigError is the only refusal, and its message is one line that
//   names the file;
// - an accepted file names a case of this experiment, carries that case's
//   spec, and a measurement that format_case_file writes back to a file
//   that parses to the same measurement (every field, doubles to the bit).
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "base/errors.h"
#include "lab/sweep.h"
#include "fuzz/fuzz_check.h"

using namespace topolab;

namespace {

struct Merge {
  ExperimentOptions options;
  std::vector<ExperimentCase> cases;
  explicit Merge(const char* name) {
    options.name = name;
    cases = experiment_cases(options);
  }
};

bool same_bits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

bool same(const CaseMeasurement& a, const CaseMeasurement& b) {
  return describe_case(a.spec) == describe_case(b.spec) && a.sched == b.sched && a.runs == b.runs &&
         a.window_ns == b.window_ns && a.window_min_ns == b.window_min_ns && a.window_max_ns == b.window_max_ns &&
         same_bits(a.ipi_rate_min, b.ipi_rate_min) && same_bits(a.ipi_rate_max, b.ipi_rate_max) &&
         a.ns_per_op_sum == b.ns_per_op_sum && a.res_ipis == b.res_ipis && a.cal_ipis == b.cal_ipis &&
         a.hlt_exits == b.hlt_exits && a.halt_poll_hits == b.halt_poll_hits && a.mwait_wakes == b.mwait_wakes &&
         a.vcpus == b.vcpus && same_bits(a.host_cpu_percent, b.host_cpu_percent);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const Merge l3("l3-cache"), halt_poll("halt-poll");
  const Merge& merge = size > 0 && (data[0] & 1) ? halt_poll : l3;
  const std::string text(reinterpret_cast<const char*>(data), size);
  const std::string name = "case-7.json";
  CaseFile file;
  try {
    file = parse_case_file(merge.options, merge.cases, text, name);
  } catch (const ConfigError& e) {
    const std::string what = e.what();
    FUZZ_CHECK(what.starts_with(name + ": ") && what.find('\n') == std::string::npos && what.find('\r') == std::string::npos,
               "refusal not one line naming the file: '{}'", what);
    return 0;
  }
  FUZZ_CHECK(file.index < merge.cases.size(), "case {} of {}", file.index, merge.cases.size());
  FUZZ_CHECK(describe_case(file.measurement.spec) == describe_case(merge.cases[file.index]), "case {}'s spec",
             file.index);
  const std::string again_text = format_case_file(merge.options, merge.cases.size(), file.index, file.measurement);
  CaseFile again;
  try {
    again = parse_case_file(merge.options, merge.cases, again_text, name);
  } catch (const ConfigError& e) {
    FUZZ_CHECK(false, "the accepted case file, written back, is refused: {}", e.what());
  }
  FUZZ_CHECK(again.index == file.index && same(again.measurement, file.measurement),
             "case {} does not read back the same from what format_case_file wrote", file.index);
  return 0;
}
