// SPDX-License-Identifier: GPL-2.0-or-later
#include "lab/guest_protocol.h"

#include <algorithm>
#include <charconv>
#include <sstream>
#include <string_view>

#include <fmt/format.h>

namespace topolab {

namespace {

bool all_digits(std::string_view word) {
  return !word.empty() && std::all_of(word.begin(), word.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// A /proc/interrupts count: all digits (Linux prints an unsigned int), and
// within 64 bits, so that a guest's garbage is a clear error and not a
// wrapped number.
uint64_t interrupt_count(const std::string& label, const std::string& word) {
  uint64_t value = 0;
  const auto [end, error] = std::from_chars(word.data(), word.data() + word.size(), value);
  if (error != std::errc() || end != word.data() + word.size())
    throw GuestProtocolError(fmt::format("the guest's /proc/interrupts: a {} count of {} digits exceeds 64 bits",
                                         label.substr(0, 3), word.size()));
  return value;
}

}  // namespace

std::vector<std::string> serial_lines(const std::string& serial) {
  std::vector<std::string> lines;
  size_t at = 0;
  while (at < serial.size()) {
    size_t end = serial.find('\n', at);
    if (end == std::string::npos) end = serial.size();
    std::string line = serial.substr(at, end - at);
    std::erase(line, '\r');
    lines.push_back(std::move(line));
    at = end + 1;
  }
  return lines;
}

std::optional<std::map<std::string, std::string>> parse_sched_result(const std::string& serial) {
  static const std::string kTag = "sched-result:";
  size_t at = serial.rfind(kTag);
  if (at == std::string::npos || (at > 0 && serial[at - 1] != '\n')) return std::nullopt;
  std::string line = serial.substr(at + kTag.size(), serial.find('\n', at) - at - kTag.size());
  std::erase(line, '\r');  // the console's, as serial_lines drops them
  std::map<std::string, std::string> fields;
  size_t pos = 0;
  while (pos < line.size()) {
    size_t start = line.find_first_not_of(' ', pos);
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

std::map<std::string, std::string> parse_perf_bench(const std::string& serial) {
  std::map<std::string, std::string> out;
  bool inside = false;
  for (const std::string& line : serial_lines(serial)) {
    if (line.starts_with("topolab-bench-begin ")) {
      out.clear();
      out["bench"] = line.substr(20);
      out["loops"] = out["bench"].substr(out["bench"].rfind(':') + 1);
      inside = true;
      continue;
    }
    if (line.starts_with("topolab-bench-end ")) inside = false;
    if (!inside) continue;
    if (line.starts_with("topolab-ctxsw ") || line.starts_with("topolab-cpuidle ")) {
      std::istringstream fields(line.substr(line.find(' ') + 1));
      std::string field;
      while (fields >> field)
        if (size_t eq = field.find('='); eq != std::string::npos && field.substr(0, eq) != "loops")
          out[field.substr(0, eq)] = field.substr(eq + 1);
      if (out.contains("ns_per_switch")) out["ns_per_op"] = out["ns_per_switch"];
      continue;
    }
    std::istringstream words(line);
    std::string a, b, c;
    words >> a >> b >> c;
    if (a == "Total" && b == "time:") out["total_sec"] = c;
    if (b == "usecs/op") out["usecs_per_op"] = a;
    if (b == "ops/sec") out["ops_per_sec"] = a;
  }
  return out;
}

LinuxInterruptDeltas linux_interrupt_deltas(const std::string& serial) {
  std::map<std::string, std::vector<uint64_t>> before, after, *block = nullptr;
  for (const std::string& line : serial_lines(serial)) {
    if (line.starts_with("topolab-interrupts-before ")) { block = &before; block->clear(); continue; }
    if (line.starts_with("topolab-interrupts-after ")) { block = &after; block->clear(); continue; }
    if (line == "topolab-interrupts-end") { block = nullptr; continue; }
    if (!block) continue;
    std::istringstream words(line);
    std::string label, word;
    words >> label;
    if (label != "RES:" && label != "CAL:") continue;
    std::vector<uint64_t>& counts = (*block)[label];
    while (words >> word && all_digits(word)) counts.push_back(interrupt_count(label, word));
  }
  LinuxInterruptDeltas d;
  auto delta = [&](const std::string& label, std::vector<uint64_t>& out) {
    const auto &b = before[label], &a = after[label];
    for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) {
      if (a[i] < b[i])
        throw GuestProtocolError(fmt::format("the guest's /proc/interrupts: CPU{}'s {} count went down over the "
                                             "benchmark, from {} to {}", i, label.substr(0, 3), b[i], a[i]));
      out.push_back(a[i] - b[i]);
    }
  };
  delta("RES:", d.res);
  delta("CAL:", d.cal);
  return d;
}

std::string line_from(const std::string& serial, const std::string& marker) {
  const size_t at = serial.find(marker);
  if (at == std::string::npos) return "";
  std::string line = serial.substr(at, serial.find('\n', at) - at);
  std::erase(line, '\r');
  return line;
}

}  // namespace topolab
