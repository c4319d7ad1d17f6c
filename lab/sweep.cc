// SPDX-License-Identifier: GPL-2.0-or-later
#include "lab/sweep.h"

#include <algorithm>
#include <fstream>
#include <limits>
#include <optional>
#include <sstream>
#include <string_view>
#include <tuple>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "base/errors.h"
#include "base/text_buffer.h"

namespace topolab {

namespace {

using nlohmann::ordered_json;

constexpr const char* kCaseSchema = "topolab.experiment-case/1";

// The options that change an experiment's results, as the case file records
// them, and the flag that sets each (for the error that says which differs).
// --jobs, --format and --output change none of the bytes; --image is the
// user's business (the runs record the image as "sched.elf" wherever it is).
struct RecordedOption {
  const char* key;
  const char* flag;
};
constexpr RecordedOption kRecordedOptions[] = {
    {"kernel", "--kernel"}, {"quantum", "--quantum"}, {"repeats", "--repeats"},
    {"scale_percent", "--scale"}, {"cost", "--cost"}, {"spin_skip", "--spin-skip"},
};

ordered_json options_json(const ExperimentOptions& o) {
  ordered_json j = recorded_options_json(o);
  j["cost"] = o.cost.to_string();
  return j;
}

// Every field of a CaseMeasurement but its spec (the case index names that),
// by kind, so writing and reading cannot drift apart.
constexpr std::pair<const char*, uint64_t CaseMeasurement::*> kCounts[] = {
    {"window_ns", &CaseMeasurement::window_ns},
    {"window_min_ns", &CaseMeasurement::window_min_ns},
    {"window_max_ns", &CaseMeasurement::window_max_ns},
    {"ns_per_op_sum", &CaseMeasurement::ns_per_op_sum},
    {"res_ipis", &CaseMeasurement::res_ipis},
    {"cal_ipis", &CaseMeasurement::cal_ipis},
    {"hlt_exits", &CaseMeasurement::hlt_exits},
    {"halt_poll_hits", &CaseMeasurement::halt_poll_hits},
    {"exits", &CaseMeasurement::exits},
    {"send_exits", &CaseMeasurement::send_exits},
    {"ipis_received", &CaseMeasurement::ipis_received},
    {"mwait_store_wakes", &CaseMeasurement::mwait_wakes},
};
constexpr std::pair<const char*, unsigned CaseMeasurement::*> kSmallCounts[] = {
    {"runs", &CaseMeasurement::runs},
    {"vcpus", &CaseMeasurement::vcpus},
};
constexpr std::pair<const char*, double CaseMeasurement::*> kReals[] = {
    {"ipi_rate_min", &CaseMeasurement::ipi_rate_min},
    {"ipi_rate_max", &CaseMeasurement::ipi_rate_max},
    {"host_cpu_percent", &CaseMeasurement::host_cpu_percent},
};

ordered_json measurement_json(const CaseMeasurement& m) {
  ordered_json j;
  for (const auto& [key, field] : kCounts) j[key] = m.*field;
  for (const auto& [key, field] : kSmallCounts) j[key] = m.*field;
  for (const auto& [key, field] : kReals) j[key] = m.*field;
  ordered_json guest = ordered_json::object();
  for (const auto& [k, v] : m.sched) guest[k] = v;
  j["guest"] = guest;
  return j;
}

// Reads the fields of one case file, each error naming the file.
class CaseFileReader {
 public:
  CaseFileReader(const ordered_json& root, const std::string& name) : root_(root), name_(name) {}

  [[noreturn]] void fail(const std::string& what) const { throw ConfigError(fmt::format("{}: {}", name_, what)); }

  const ordered_json& at(const ordered_json& parent, const char* key) const {
    if (!parent.is_object() || !parent.contains(key)) fail(fmt::format("no \"{}\"", key));
    return parent[key];
  }
  uint64_t count(const ordered_json& parent, const char* key, uint64_t max) const {
    const ordered_json& v = at(parent, key);
    if (!v.is_number_unsigned() || v.get<uint64_t>() > max) fail(fmt::format("\"{}\" is no count: {}", key, v.dump()));
    return v.get<uint64_t>();
  }
  double real(const ordered_json& parent, const char* key) const {
    const ordered_json& v = at(parent, key);
    if (!v.is_number()) fail(fmt::format("\"{}\" is no number: {}", key, v.dump()));
    return v.get<double>();
  }
  std::string text(const ordered_json& parent, const char* key) const {
    const ordered_json& v = at(parent, key);
    if (!v.is_string()) fail(fmt::format("\"{}\" is no string: {}", key, v.dump()));
    return v.get<std::string>();
  }

  CaseMeasurement measurement() const {
    const ordered_json& j = at(root_, "measurement");
    CaseMeasurement m;
    for (const auto& [key, field] : kCounts) m.*field = count(j, key, std::numeric_limits<uint64_t>::max());
    for (const auto& [key, field] : kSmallCounts) m.*field = count(j, key, std::numeric_limits<unsigned>::max());
    for (const auto& [key, field] : kReals) m.*field = real(j, key);
    const ordered_json& guest = at(j, "guest");
    if (!guest.is_object()) fail("\"guest\" is no object");
    for (const auto& [k, v] : guest.items()) m.sched[k] = text(guest, k.c_str());
    return m;
  }

 private:
  const ordered_json& root_;
  const std::string& name_;
};

std::string option_text(const ordered_json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); }

std::vector<std::string> comma_items(const std::string& text) {
  std::vector<std::string> items;
  for (size_t at = 0; at <= text.size();) {
    const size_t end = std::min(text.find(',', at), text.size());
    items.push_back(text.substr(at, end - at));
    at = end + 1;
  }
  return items;
}

// Of two --cost spellings ("cpi=1,...,ipiv=0"), the items of `a` that `b`
// lacks: a whole cost model in an error would hide the one key that differs.
std::string cost_items_not_in(const std::string& a, const std::string& b) {
  const std::vector<std::string> theirs = comma_items(b);
  std::string out;
  for (const std::string& item : comma_items(a))
    if (std::find(theirs.begin(), theirs.end(), item) == theirs.end()) out += (out.empty() ? "" : ",") + item;
  return out.empty() ? a : out;
}

// The file's options must be the merge's: the first that differs is named
// by its flag, so the user knows what to pass.
void check_options(const CaseFileReader& file, const ordered_json& recorded, const ExperimentOptions& options) {
  const ordered_json expected = options_json(options);
  const std::string experiment = file.text(recorded, "experiment");
  if (experiment != options.name) file.fail(fmt::format("a case of experiment {}, not {}", experiment, options.name));
  // --pv is recorded only when it is not off.
  const std::string ran_pv = recorded.contains("pv") ? option_text(recorded["pv"]) : "off";
  const std::string here_pv = expected.contains("pv") ? option_text(expected["pv"]) : "off";
  if (ran_pv != here_pv)
    file.fail(fmt::format("run with --pv {}, this merge has --pv {} (merge with the options of the runs)", ran_pv,
                          here_pv));
  for (const RecordedOption& o : kRecordedOptions) {
    const ordered_json& got = file.at(recorded, o.key);
    if (got == expected[o.key]) continue;
    std::string ran = option_text(got), here = option_text(expected[o.key]);
    if (std::string_view(o.key) == "cost" && got.is_string())
      std::tie(ran, here) = std::pair(cost_items_not_in(ran, here), cost_items_not_in(here, ran));
    file.fail(fmt::format("run with {} {}, this merge has {} {} (merge with the options of the runs)", o.flag, ran,
                          o.flag, here));
  }
}

}  // namespace

std::string format_case_list(const std::vector<ExperimentCase>& cases) {
  fmt::memory_buffer out;
  for (size_t i = 0; i < cases.size(); ++i) appendf(out, "{}\t{}\n", i, describe_case(cases[i]));
  return fmt::to_string(out);
}

std::string case_file_name(size_t index) { return fmt::format("case-{}.json", index); }

std::string format_case_file(const ExperimentOptions& options, size_t cases, size_t index, const CaseMeasurement& m) {
  ordered_json j;
  j["schema"] = kCaseSchema;
  j["options"] = options_json(options);
  j["cases"] = cases;
  j["case"] = index;
  j["description"] = describe_case(m.spec);
  j["measurement"] = measurement_json(m);
  return j.dump(2) + "\n";
}

namespace {

CaseFile parse_case_text(const ExperimentOptions& options, const std::vector<ExperimentCase>& cases,
                         const std::string& text, const std::string& name);

}  // namespace

CaseFile parse_case_file(const ExperimentOptions& options, const std::vector<ExperimentCase>& cases,
                         const std::string& text, const std::string& name) {
  try {
    return parse_case_text(options, cases, text, name);
  } catch (const ConfigError& e) {
    throw ConfigError(one_line(e.what()));
  }
}

namespace {

CaseFile parse_case_text(const ExperimentOptions& options, const std::vector<ExperimentCase>& cases,
                         const std::string& text, const std::string& name) {
  ordered_json root;
  try {
    root = ordered_json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw ConfigError(fmt::format("{}: not JSON ({})", name, e.what()));
  }
  const CaseFileReader file(root, name);
  if (!root.is_object() || !root.contains("schema") || root["schema"] != kCaseSchema)
    file.fail(fmt::format("not a case file (its schema is not {})", kCaseSchema));
  check_options(file, file.at(root, "options"), options);
  const uint64_t recorded_cases = file.count(root, "cases", std::numeric_limits<uint64_t>::max());
  if (recorded_cases != cases.size())
    file.fail(fmt::format("its experiment had {} cases, this one has {} (another topolab?)", recorded_cases,
                          cases.size()));
  CaseFile out;
  out.index = file.count(root, "case", std::numeric_limits<uint64_t>::max());
  if (out.index >= cases.size())
    file.fail(fmt::format("case {}, but the experiment has {} cases (0-{})", out.index, cases.size(), cases.size() - 1));
  const std::string description = file.text(root, "description");
  const ExperimentCase& spec = cases[out.index];
  if (description != describe_case(spec))
    file.fail(fmt::format("case {} is \"{}\" there, \"{}\" here (another topolab?)", out.index, description,
                          describe_case(spec)));
  out.measurement = file.measurement();
  out.measurement.spec = spec;
  return out;
}

std::string read_whole_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  if (!in) throw ConfigError(fmt::format("{}: cannot read it", path.string()));
  return text.str();
}

// The case files of a directory, by name so that which error comes first
// does not depend on the file system. Anything else there (results.json,
// the charts of an earlier merge) is not a case file and is left alone.
std::vector<std::filesystem::path> case_file_paths(const std::filesystem::path& dir) {
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec))
    throw ConfigError(fmt::format("--merge {}: no such directory", dir.string()));
  std::vector<std::filesystem::path> paths;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    const std::string file = entry.path().filename().string();
    if (file.starts_with("case-") && file.ends_with(".json")) paths.push_back(entry.path());
  }
  if (ec) throw ConfigError(fmt::format("--merge {}: {}", dir.string(), ec.message()));
  std::sort(paths.begin(), paths.end());
  return paths;
}

}  // namespace

std::vector<CaseMeasurement> read_case_files(const ExperimentOptions& options,
                                             const std::vector<ExperimentCase>& cases,
                                             const std::filesystem::path& dir) {
  std::vector<std::optional<CaseMeasurement>> runs(cases.size());
  std::vector<std::string> found_in(cases.size());
  for (const std::filesystem::path& path : case_file_paths(dir)) {
    CaseFile file = parse_case_file(options, cases, read_whole_file(path), path.string());
    if (runs[file.index])
      throw ConfigError(fmt::format("{}: case {} again (it is in {} too)", path.string(), file.index,
                                    found_in[file.index]));
    runs[file.index] = std::move(file.measurement);
    found_in[file.index] = path.string();
  }
  const size_t missing = std::count(runs.begin(), runs.end(), std::nullopt);
  if (missing > 0) {
    const size_t first = std::find(runs.begin(), runs.end(), std::nullopt) - runs.begin();
    throw ConfigError(fmt::format("--merge {}: {} of {} case files missing; the first is case {} ({}): run it with --case {}",
                                  dir.string(), missing, cases.size(), first, describe_case(cases[first]), first));
  }
  std::vector<CaseMeasurement> out;
  for (auto& r : runs) out.push_back(std::move(*r));
  return out;
}

}  // namespace topolab
