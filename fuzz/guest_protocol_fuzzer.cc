// SPDX-License-Identifier: GPL-2.0-or-later
// What the experiments read back from a guest's serial port
// (lab/guest_protocol.h): the sched kernel's result line and the Linux
// guest's /init lines. The guest, not topolab, writes these bytes.
// Input: first byte even, the rest is the serial text as it is; odd, the
// rest drives a transcript the harness writes as /init does (one or more
// benchmarks, each with its /proc/interrupts blocks before and after,
// perf's or topolab-ctxsw's lines, kernel messages and console CRs in
// between), whose values it then expects back.
// Invariants, for any text:
// - serial_lines gives lines without '\n' or '\r' that joined with '\n'
//   give the text back without its CRs (and without one final '\n');
// - a sched result is at the start of a line, has at least one field, and
//   its keys and values hold no blank, no '=' in a key, no line break;
// - perf's fields hold no line break; any field means "bench" and "loops"
//   are there; ns_per_op is ns_per_switch where the latter is;
// - the interrupt deltas either come back or are one GuestProtocolError
//   line, never any other exception;
// - line_from is empty exactly when the marker is absent, else starts with
//   it and holds no line break.
// For a transcript: the deltas are each CPU's counts after less before, of
// the last benchmark only; perf's fields are the last benchmark's; a count
// that fell or does not fit 64 bits is a GuestProtocolError naming it.
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "fuzz/fuzz_check.h"
#include "fuzz/fuzz_input.h"
#include "lab/guest_protocol.h"

using namespace topolab;

namespace {

bool has_break(const std::string& s) { return s.find_first_of("\r\n") != std::string::npos; }

void check_any_text(const std::string& text) {
  const std::vector<std::string> lines = serial_lines(text);
  std::string joined;
  for (size_t i = 0; i < lines.size(); ++i) {
    FUZZ_CHECK(!has_break(lines[i]), "serial line {} holds a line break", i);
    joined += (i ? "\n" : "") + lines[i];
  }
  std::string want = text.ends_with('\n') ? text.substr(0, text.size() - 1) : text;
  std::erase(want, '\r');
  FUZZ_CHECK(joined == want, "serial_lines of {} bytes do not join back to the text", text.size());

  if (const auto result = parse_sched_result(text)) {
    const size_t at = text.rfind("sched-result:");
    FUZZ_CHECK(at != std::string::npos && (at == 0 || text[at - 1] == '\n'), "a sched result not at a line start");
    FUZZ_CHECK(!result->empty(), "an empty sched result");
    for (const auto& [key, value] : *result)
      FUZZ_CHECK(!key.empty() && key.find_first_of(" =\r\n") == std::string::npos &&
                     value.find_first_of(" \r\n") == std::string::npos,
                 "sched result field '{}' = '{}'", key, value);
  }

  const std::map<std::string, std::string> bench = parse_perf_bench(text);
  for (const auto& [key, value] : bench) FUZZ_CHECK(!has_break(key) && !has_break(value), "perf field '{}'", key);
  if (!bench.empty()) FUZZ_CHECK(bench.contains("bench") && bench.contains("loops"), "perf fields without a bench");
  if (bench.contains("ns_per_switch"))
    FUZZ_CHECK(bench.contains("ns_per_op") && bench.at("ns_per_op") == bench.at("ns_per_switch"), "ns_per_op");

  try {
    linux_interrupt_deltas(text);
  } catch (const GuestProtocolError& e) {
    const std::string what = e.what();
    FUZZ_CHECK(!what.empty() && !has_break(what), "GuestProtocolError not one line: '{}'", what);
  }

  for (const char* marker : {"Kernel panic - not syncing", "topolab-init: error", "RES:"}) {
    const std::string line = line_from(text, marker);
    FUZZ_CHECK(line.empty() == (text.find(marker) == std::string::npos), "line_from('{}') presence", marker);
    FUZZ_CHECK(line.empty() || (line.starts_with(marker) && !has_break(line)), "line_from('{}') = '{}'", marker, line);
  }
}

// A transcript /init could print, with what it should parse to.
// 2^64 - 1 is 18446744073709551615.
constexpr const char* kPast64Bits = "18446744073709551616";

class Transcript {
 public:
  explicit Transcript(fuzz::Input& in) : in_(in) {}

  // Kernel messages (printk lands between /init's lines, and inside them
  // for `cat /proc/interrupts`): bytes of the input behind a timestamp, so
  // no message starts with a protocol word. Sometimes none.
  void noise() {
    const uint8_t n = in_.take<uint8_t>() % 4;
    for (uint8_t i = 0; i < n; ++i) {
      std::string message;
      for (uint8_t len = in_.take<uint8_t>() % 48; len > 0; --len) {
        const char c = static_cast<char>(in_.take<uint8_t>());
        message += c == '\n' || c == '\r' ? ' ' : c;
      }
      line("[    1.234567] " + message);
    }
  }
  void line(const std::string& text) { out_ += text + (in_.take<uint8_t>() & 1 ? "\r\n" : "\n"); }

  // One /proc/interrupts block; RES and CAL counts per CPU, and a CPU
  // whose RES count is printed past 64 bits (garbage a guest may print).
  void interrupts(const std::string& when, const std::string& spec, const std::vector<uint64_t>& res,
                  const std::vector<uint64_t>& cal, std::optional<size_t> huge_res = std::nullopt) {
    line("topolab-interrupts-" + when + " " + spec);
    std::string header = "    ";
    for (size_t i = 0; i < res.size(); ++i) header += fmt::format("       CPU{}", i);
    line(header);
    line(row("  0:", std::vector<uint64_t>(res.size(), 7)) + "   IO-APIC   2-edge      timer");
    noise();
    std::string res_row = row("RES:", res);
    if (huge_res) res_row = row("RES:", std::vector<uint64_t>(res.begin(), res.begin() + *huge_res)) +
                            fmt::format(" {}", kPast64Bits) + row("", std::vector<uint64_t>(res.begin() + *huge_res + 1, res.end()));
    line(res_row + "   Rescheduling interrupts");
    line(row("CAL:", cal) + "   Function call interrupts");
    line(row("TLB:", std::vector<uint64_t>(res.size(), 3)) + "   TLB shootdowns");
    line("topolab-interrupts-end");
  }
  static std::string row(const std::string& label, const std::vector<uint64_t>& counts) {
    std::string s = label;
    for (const uint64_t c : counts) s += fmt::format(" {:>10}", c);
    return s;
  }

  std::string text() const { return out_; }

 private:
  fuzz::Input& in_;
  std::string out_;
};

uint64_t take_count(fuzz::Input& in) {
  const uint8_t how = in.take<uint8_t>();
  if (how < 0xc0) return in.take<uint16_t>();
  if (how < 0xf0) return in.take<uint32_t>();
  return in.take<uint64_t>();
}

void check_transcript(fuzz::Input& in) {
  Transcript t(in);
  const unsigned benchmarks = 1 + in.take<uint8_t>() % 3;
  const unsigned cpus = 1 + in.take<uint8_t>() % 12;
  std::vector<uint64_t> want_res, want_cal;
  std::map<std::string, std::string> want_bench;
  bool falls = false, past_64_bits = false;
  t.noise();
  for (unsigned b = 0; b < benchmarks; ++b) {
    const uint8_t kind = in.take<uint8_t>();
    const uint16_t loops = in.take<uint16_t>();
    const std::string spec = kind & 1 ? fmt::format("ctxsw:{}", loops) : fmt::format("messaging:1:{}", loops);
    std::vector<uint64_t> res_before(cpus), cal_before(cpus), res_after(cpus), cal_after(cpus);
    for (unsigned i = 0; i < cpus; ++i) {
      res_before[i] = take_count(in), cal_before[i] = take_count(in);
      // Mostly a rise; now and then a count that fell (or a sum that wrapped
      // past 2^64), which must be refused.
      const uint8_t fall = in.take<uint8_t>();
      res_after[i] = fall == 0xff && res_before[i] ? res_before[i] - 1 : res_before[i] + in.take<uint16_t>();
      cal_after[i] = fall == 0xfe && cal_before[i] ? cal_before[i] - 1 : cal_before[i] + in.take<uint16_t>();
    }
    t.interrupts("before", spec, res_before, cal_before);
    t.noise();
    t.line("topolab-bench-begin " + spec);
    std::map<std::string, std::string> bench = {{"bench", spec}, {"loops", std::to_string(loops)}};
    if (kind & 1) {
      const uint32_t switches = in.take<uint32_t>(), ns = in.take<uint32_t>();
      t.line("topolab-cpuidle driver=haltpoll governor=menu states=POLL,haltpoll");
      t.line(fmt::format("topolab-ctxsw loops={} switches={} elapsed_ns={} ns_per_switch={}", loops, switches,
                         uint64_t{switches} * ns, ns));
      bench.insert({{"driver", "haltpoll"}, {"governor", "menu"}, {"states", "POLL,haltpoll"},
                    {"switches", std::to_string(switches)}, {"elapsed_ns", std::to_string(uint64_t{switches} * ns)},
                    {"ns_per_switch", std::to_string(ns)}, {"ns_per_op", std::to_string(ns)}});
    } else {
      const uint16_t ms = in.take<uint16_t>();
      t.line("# Running 'sched/messaging' benchmark:");
      t.line(fmt::format("# 20 sender and receiver processes per group"));
      t.noise();
      t.line(fmt::format("     Total time: {}.{:03} [sec]", ms / 1000, ms % 1000));
      bench["total_sec"] = fmt::format("{}.{:03}", ms / 1000, ms % 1000);
    }
    t.line("topolab-bench-end " + spec + " status=0");
    std::optional<size_t> huge;
    if (const uint8_t h = in.take<uint8_t>(); h >= 0xf8) huge = h % cpus;
    past_64_bits = past_64_bits || huge;
    t.interrupts("after", spec, res_after, cal_after, huge);
    t.noise();
    want_res.clear(), want_cal.clear();
    falls = false;
    for (unsigned i = 0; i < cpus; ++i) {
      falls = falls || res_after[i] < res_before[i] || cal_after[i] < cal_before[i];
      want_res.push_back(res_after[i] - res_before[i]);
      want_cal.push_back(cal_after[i] - cal_before[i]);
    }
    want_bench = bench;
  }
  const std::string text = t.text();
  check_any_text(text);
  FUZZ_CHECK(parse_perf_bench(text) == want_bench, "perf's fields are not the last benchmark's");
  std::optional<LinuxInterruptDeltas> got;
  try {
    got = linux_interrupt_deltas(text);
  } catch (const GuestProtocolError& e) {
    // Every count is read before any delta is taken.
    FUZZ_CHECK(past_64_bits || falls, "counts that rose were refused: {}", e.what());
    FUZZ_CHECK(std::string(e.what()).find(past_64_bits ? "exceeds 64 bits" : "went down") != std::string::npos,
               "refusal: {}", e.what());
    return;
  }
  FUZZ_CHECK(!past_64_bits, "a count past 64 bits was read");
  FUZZ_CHECK(!falls, "a count that fell gave a delta");
  FUZZ_CHECK(got->res == want_res && got->cal == want_cal, "the deltas are not after less before on {} CPUs", cpus);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  if (data[0] & 1) {
    fuzz::Input in(data + 1, size - 1);
    check_transcript(in);
  } else {
    check_any_text(std::string(reinterpret_cast<const char*>(data) + 1, size - 1));
  }
  return 0;
}
