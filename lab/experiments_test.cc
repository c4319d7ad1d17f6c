// SPDX-License-Identifier: GPL-2.0-or-later
#include "lab/experiments.h"

#include <stdlib.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "model/topology.h"
#include "lab/sweep.h"

namespace topolab {
namespace {

TEST(ExperimentCases, L3CacheRunsBothWorkloadsOnThreeMachinesOffThenOn) {
  ExperimentOptions o;
  o.name = "l3-cache";
  o.sched_image = "sched.elf";
  o.repeats = 1;
  const auto cases = experiment_cases(o);
  ASSERT_EQ(cases.size(), 12u);
  EXPECT_EQ(cases[0].workload, "messaging");
  EXPECT_EQ(cases[0].config.cpu.arg, "Skylake-Server,+x2apic,l3-cache=off");
  EXPECT_FALSE(cases[0].config.cpu.l3_cache);
  EXPECT_EQ(cases[1].config.cpu.arg, "Skylake-Server,+x2apic,l3-cache=on");
  EXPECT_TRUE(cases[1].config.cpu.l3_cache);
  EXPECT_EQ(cases[0].config.topology.to_smp_arg(), "16,sockets=1,dies=1,cores=8,threads=2");
  EXPECT_EQ(cases[5].config.cpu.arg, "qemu64,+x2apic,l3-cache=on");
  EXPECT_EQ(cases[6].workload, "pipe");
  EXPECT_NE(cases[0].config.append.find("wakelist=res"), std::string::npos);
  o.wake_list = WakeList::Cal;
  EXPECT_NE(experiment_cases(o)[0].config.append.find("wakelist=cal"), std::string::npos);
}

TEST(ExperimentCases, RepeatsFollowEachOtherAtOtherQuanta) {
  ExperimentOptions o;
  o.name = "halt-poll";
  o.quantum = 1000;
  o.repeats = 3;
  const auto cases = experiment_cases(o);
  ASSERT_EQ(cases.size(), 33u);
  EXPECT_EQ(cases[0].config.quantum, 1000u);
  EXPECT_EQ(cases[1].config.quantum, 600u);
  EXPECT_EQ(cases[2].config.quantum, 800u);
  EXPECT_EQ(cases[2].setting, cases[0].setting);
  EXPECT_EQ(cases[2].repeat, 2u);
  EXPECT_NE(cases[3].setting, cases[0].setting);
}

TEST(ExperimentCases, HaltPollVariesOnlyThePolling) {
  ExperimentOptions o;
  o.name = "halt-poll";
  o.repeats = 1;
  o.cost = CostModel::defaults();
  const auto cases = experiment_cases(o);
  ASSERT_EQ(cases.size(), 11u);
  EXPECT_EQ(cases[0].config.cost.halt_poll_ns, 0u);
  EXPECT_NE(cases[1].config.append.find("idle=haltpoll=10000"), std::string::npos);
  EXPECT_EQ(cases[5].config.cost.halt_poll_ns, 10000u);
  EXPECT_NE(cases[5].config.append.find("idle=halt "), std::string::npos);
  EXPECT_NE(cases[9].config.append.find("idle=poll"), std::string::npos);
  EXPECT_NE(cases[10].config.append.find("idle=mwait"), std::string::npos);
  for (const auto& c : cases) EXPECT_EQ(c.config.cost.hlt_exit_ns, o.cost.hlt_exit_ns);
}

// On Linux: topolab-ctxsw under QEMU's KVM guest; guest polling is the
// haltpoll cpuidle driver (KVM_HINTS_REALTIME and poll control), the host's
// polling the cost model's, idle=poll the kernel's option, MWAIT offered.
TEST(ExperimentCases, HaltPollOnLinuxVariesTheIdleAndThePolling) {
  ExperimentOptions o;
  o.name = "halt-poll";
  o.guest = Guest::Linux;
  o.linux_dir = "linux";
  o.repeats = 1;
  const auto cases = experiment_cases(o);
  ASSERT_EQ(cases.size(), 8u);
  for (const auto& c : cases) {
    EXPECT_EQ(c.guest, Guest::Linux);
    EXPECT_NE(c.config.append.find("topolab.bench=ctxsw:2000"), std::string::npos) << c.config.append;
    EXPECT_EQ(c.config.topology.cpus(), 10u);
    EXPECT_TRUE(c.config.cpu.kvm_pv.has(KvmPvFeature::Clock)) << "QEMU's KVM guest";
  }
  EXPECT_EQ(cases[0].setting, "no polling");
  EXPECT_EQ(cases[0].config.cost.halt_poll_ns, 0u);
  EXPECT_TRUE(cases[1].config.cpu.kvm_pv.has(KvmPvFeature::HintDedicated));
  EXPECT_TRUE(cases[1].config.cpu.kvm_pv.has(KvmPvFeature::PollControl));
  EXPECT_EQ(cases[1].config.cost.halt_poll_ns, 200000u) << "KVM's default, until the guest turns it off";
  EXPECT_FALSE(cases[2].config.cpu.kvm_pv.has(KvmPvFeature::HintDedicated));
  EXPECT_EQ(cases[2].config.cost.halt_poll_ns, 10000u);
  EXPECT_EQ(cases[5].config.cost.halt_poll_ns, 500000u);
  EXPECT_NE(cases[6].config.append.find(" idle=poll"), std::string::npos);
  EXPECT_TRUE(cases[7].config.cpu.has(CpuFeature::Monitor));
}

TEST(ExperimentCases, UnknownNameListsTheKnownOnes) {
  ExperimentOptions o;
  o.name = "l4-cache";
  try {
    experiment_cases(o);
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("l3-cache"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("halt-poll"), std::string::npos);
  }
}

CaseMeasurement measured(const std::string& workload, const std::string& setting, uint64_t res, uint64_t ns) {
  CaseMeasurement m;
  m.spec.workload = workload;
  m.spec.topology = "8 vCPUs";
  m.spec.setting = setting;
  m.res_ipis = res;
  m.window_ns = ns;
  m.vcpus = 8;
  m.sched = {{"loops", "100"}, {"ns_per_op", "1234"}};
  return m;
}

TEST(ExperimentTables, RepeatsCombineIntoSumsAndASpread) {
  std::vector<CaseMeasurement> runs = {measured("pipe", "l3-cache=on", 100, 1'000'000),
                                       measured("pipe", "l3-cache=on", 300, 1'000'000),
                                       measured("pipe", "l3-cache=off", 0, 2'000'000)};
  runs[0].ns_per_op_sum = 100;
  runs[1].ns_per_op_sum = 301;
  const auto cases = combine_repeats(runs);
  ASSERT_EQ(cases.size(), 2u);
  EXPECT_EQ(cases[0].runs, 2u);
  EXPECT_DOUBLE_EQ(cases[0].per_second(cases[0].res_ipis), 200'000.0);
  EXPECT_DOUBLE_EQ(cases[0].ipi_rate_min, 100'000.0);
  EXPECT_DOUBLE_EQ(cases[0].ipi_rate_max, 300'000.0);
  EXPECT_EQ(cases[0].sched_number("ns_per_op"), 200u) << "the mean of the runs";
  EXPECT_EQ(cases[1].runs, 1u);
}

TEST(ExperimentTables, L3CacheShowsRatesAndTheChange) {
  ExperimentOptions o;
  o.name = "l3-cache";
  const std::vector<CaseMeasurement> results = {measured("messaging", "l3-cache=off", 560, 1'000'000),
                                                measured("messaging", "l3-cache=on", 40, 1'000'000)};
  const std::string text = format_experiment_tables(o, results);
  EXPECT_NE(text.find("560.0K"), std::string::npos) << text;
  EXPECT_NE(text.find("40.0K"), std::string::npos) << text;
  EXPECT_NE(text.find("-93%"), std::string::npos) << text;
  const auto charts = experiment_charts(o, results);
  ASSERT_EQ(charts.count("l3-cache-messaging.svg"), 1u);
  EXPECT_NE(charts.at("l3-cache-messaging.svg").find("-93%"), std::string::npos);
  EXPECT_NE(format_experiment_json(o, results).find("\"res_per_s\": 560000.0"), std::string::npos);
}

TEST(ExperimentTables, APerCaseCostKeyShowsAsPerConfiguration) {
  ExperimentOptions o;
  o.name = "halt-poll";
  o.cost = CostModel::parse("halt_poll_ns=7", CostModel::defaults());
  const std::string text = format_experiment_tables(o, {measured("ctxsw", "no polling", 1, 1'000'000)});
  EXPECT_NE(text.find("halt_poll_ns=(per configuration)"), std::string::npos) << text;
  EXPECT_EQ(text.find("halt_poll_ns=7"), std::string::npos) << text;
  o.name = "l3-cache";
  EXPECT_NE(format_experiment_tables(o, {}).find("halt_poll_ns=7"), std::string::npos) << "l3-cache sets no cost itself";
}

TEST(CaseMeasurement, SchedNumberReadsAFieldOrZero) {
  CaseMeasurement m;
  m.sched = {{"loops", "10"}, {"workload", "pipe"}, {"negative", "-5"}, {"huge", "18446744073709551616"},
             {"trailing", "12ns"}};
  EXPECT_EQ(m.sched_number("loops"), 10u);
  EXPECT_EQ(m.sched_number("workload"), 0u);
  EXPECT_EQ(m.sched_number("absent"), 0u);
  EXPECT_EQ(m.sched_number("negative"), 0u) << "not 2^64 - 5, as stoull read it";
  EXPECT_EQ(m.sched_number("huge"), 0u);
  EXPECT_EQ(m.sched_number("trailing"), 0u);
}

TEST(ExperimentOptions, GuestAndKernelAreRecordedByTheirCommandLineNames) {
  ExperimentOptions o;
  o.name = "l3-cache";
  EXPECT_EQ(recorded_options_json(o)["kernel"], "2016");
  EXPECT_FALSE(recorded_options_json(o).contains("guest")) << "the sched guest's JSON stays as it was";
  o.wake_list = WakeList::Cal;
  o.guest = Guest::Linux;
  EXPECT_EQ(recorded_options_json(o)["kernel"], "6.x");
  EXPECT_EQ(recorded_options_json(o)["guest"], "linux");
}

// --pv: each Linux machine once per setting, named apart (off keeps the
// name, so the default run's tables stay as they were), each with its -cpu
// properties; recorded only when not off.
TEST(ExperimentCases, PvRunsEachLinuxMachineOncePerSetting) {
  ExperimentOptions o;
  o.name = "l3-cache";
  o.guest = Guest::Linux;
  o.linux_dir = "linux";
  o.repeats = 1;
  const auto plain = experiment_cases(o);
  ASSERT_EQ(plain.size(), 12u);
  EXPECT_NE(plain[0].config.cpu.arg.find(",kvm=on,-kvmclock"), std::string::npos) << plain[0].config.cpu.arg;
  EXPECT_FALSE(plain[0].config.cpu.kvm_pv.any());
  EXPECT_FALSE(recorded_options_json(o).contains("pv"));
  o.pv = {PvSetting::Off, PvSetting::Qemu, PvSetting::All};
  const auto cases = experiment_cases(o);
  ASSERT_EQ(cases.size(), 36u);
  EXPECT_EQ(cases[0].topology, plain[0].topology);
  EXPECT_EQ(cases[2].topology, plain[0].topology + ", KVM PV: QEMU's");
  EXPECT_EQ(cases[4].topology, plain[0].topology + ", KVM PV: all");
  EXPECT_EQ(cases[2].setting, "l3-cache=off");
  EXPECT_EQ(cases[3].setting, "l3-cache=on");
  EXPECT_TRUE(cases[2].config.cpu.kvm_pv == KvmPvSet::qemu_defaults());
  EXPECT_TRUE(cases[4].config.cpu.kvm_pv.has(KvmPvFeature::PvIpi));
  EXPECT_TRUE(cases[4].config.cpu.kvm_pv.has(KvmPvFeature::PvUnhalt));
  EXPECT_TRUE(cases[4].config.cpu.kvm_pv.has(KvmPvFeature::PollControl));
  EXPECT_FALSE(cases[4].config.cpu.kvm_pv.has(KvmPvFeature::HintDedicated));
  EXPECT_EQ(recorded_options_json(o)["pv"], "off,qemu,all");
}

// A --pv run's table: the IPIs, the exits that sent them and every exit.
TEST(ExperimentTables, PvShowsIpisBesideTheExitsThatSentThem) {
  ExperimentOptions o;
  o.name = "l3-cache";
  o.guest = Guest::Linux;
  o.pv = {PvSetting::All};
  std::vector<CaseMeasurement> results = {measured("messaging", "l3-cache=off", 560, 1'000'000),
                                          measured("messaging", "l3-cache=on", 40, 1'000'000)};
  results[0].ipis_received = 900;
  results[0].send_exits = 300;
  results[1].ipis_received = 100;
  results[1].send_exits = 100;
  const std::string text = format_experiment_tables(o, results);
  EXPECT_NE(text.find("send exits/s"), std::string::npos) << text;
  EXPECT_NE(text.find("900.0K"), std::string::npos) << text;
  EXPECT_NE(text.find("300.0K"), std::string::npos) << text;
  EXPECT_NE(text.find("-67%"), std::string::npos) << text;
  EXPECT_NE(text.find("one hypercall carries a whole multicast"), std::string::npos);
  EXPECT_NE(format_experiment_json(o, results).find("\"send_exits\": 300"), std::string::npos);
}

TEST(ExperimentOptions, NamesReadBackToTheirValues) {
  for (PvSetting p : {PvSetting::Off, PvSetting::Qemu, PvSetting::All}) EXPECT_EQ(pv_named(pv_name(p)), p);
  EXPECT_FALSE(pv_named("some"));
  for (Guest g : {Guest::Sched, Guest::Linux}) EXPECT_EQ(guest_named(guest_name(g)), g);
  for (WakeList w : {WakeList::Res, WakeList::Cal}) EXPECT_EQ(wake_list_named(kernel_name(w)), w);
  EXPECT_FALSE(guest_named("windows"));
  EXPECT_FALSE(wake_list_named("2017"));
}

// The page of an experiment: its charts and tables, and each machine once
// (the l3-cache experiment runs six: three topologies, l3-cache off and on),
// with no measurement needed beyond what the cases carry.
TEST(ExperimentHtml, ChartsTablesAndEachMachineOnce) {
  ExperimentOptions o;
  o.name = "l3-cache";
  o.repeats = 1;
  std::vector<CaseMeasurement> results;
  for (const ExperimentCase& c : experiment_cases(o)) {
    CaseMeasurement m;
    m.spec = c;
    m.window_ns = 1'000'000;
    m.res_ipis = 100;
    m.vcpus = 8;
    results.push_back(m);
  }
  const std::string page = format_experiment_html(o, results, "topolab experiment l3-cache");
  EXPECT_NE(page.find("id=\"chart-l3-cache-messaging\""), std::string::npos);
  EXPECT_NE(page.find("id=\"chart-l3-cache-pipe\""), std::string::npos);
  EXPECT_NE(page.find("id=\"experiment-table-text\""), std::string::npos);
  EXPECT_NE(page.find("id=\"machine-5\""), std::string::npos);
  EXPECT_EQ(page.find("id=\"machine-6\""), std::string::npos) << "12 cases, 6 machines";
  EXPECT_NE(page.find("-cpu qemu64,+x2apic,l3-cache=on)</summary>"), std::string::npos);
  EXPECT_NE(page.find("<code id=\"command\">topolab experiment l3-cache</code>"), std::string::npos);
  EXPECT_EQ(page, format_experiment_html(o, results, "topolab experiment l3-cache"));
}

// ---- a sweep in pieces: case files and their merge (sweep.h) ----

// Runs made up, one per case of a small halt-poll, with doubles that only
// read back exactly if they are written with every digit they need.
class SweepFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    options.name = "halt-poll";
    options.repeats = 2;
    options.scale_percent = 5;
    cases = experiment_cases(options);
    for (size_t i = 0; i < cases.size(); ++i) runs.push_back(made_up_run(i));
    char pattern[] = "/tmp/topolab-sweep-XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    dir = pattern;
  }
  void TearDown() override { std::filesystem::remove_all(dir); }

  CaseMeasurement made_up_run(size_t i) const {
    CaseMeasurement m;
    m.spec = cases[i];
    m.window_ns = 1'000'003 * (i + 1);
    m.res_ipis = 7 * i;
    m.cal_ipis = i % 3;
    m.hlt_exits = std::numeric_limits<uint64_t>::max() - i;  // no detour through a double
    m.halt_poll_hits = i;
    m.mwait_wakes = 2 * i;
    m.ns_per_op_sum = 100 + i;
    m.vcpus = 10;
    m.host_cpu_percent = 100.0 / 3 * (i + 1) + 0.1;
    m.ipi_rate_min = i == 0 ? std::numeric_limits<double>::denorm_min() : 0.1 + 0.2;
    m.ipi_rate_max = i == 1 ? std::numeric_limits<double>::max() : 1e-300;
    m.sched = {{"workload", "ctxsw"}, {"ns_per_op", std::to_string(100 + i)}, {"note", "a b=c \"quoted\""}};
    return m;
  }
  void write(size_t index, const std::string& text) const {
    std::ofstream(dir / case_file_name(index)) << text;
  }
  void write_all() const {
    for (size_t i = 0; i < runs.size(); ++i) write(i, format_case_file(options, cases.size(), i, runs[i]));
  }
  // Case file 0 with one change, for parse_case_file.
  std::string edited(const std::function<void(nlohmann::ordered_json&)>& edit) const {
    auto j = nlohmann::ordered_json::parse(format_case_file(options, cases.size(), 0, runs[0]));
    edit(j);
    return j.dump(2);
  }
  std::string parse_error(const std::string& text) const {
    try {
      parse_case_file(options, cases, text, "case-0.json");
    } catch (const ConfigError& e) {
      return e.what();
    }
    return "(no error)";
  }
  std::string merge_error() const {
    try {
      read_case_files(options, cases, dir);
    } catch (const ConfigError& e) {
      return e.what();
    }
    return "(no error)";
  }

  ExperimentOptions options;
  std::vector<ExperimentCase> cases;
  std::vector<CaseMeasurement> runs;
  std::filesystem::path dir;
};

bool same_bits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

TEST_F(SweepFiles, ACaseFileReadsBackEveryFieldExactly) {
  for (size_t i = 0; i < 2; ++i) {
    const CaseFile back = parse_case_file(options, cases, format_case_file(options, cases.size(), i, runs[i]), "f");
    const CaseMeasurement& m = back.measurement;
    EXPECT_EQ(back.index, i);
    EXPECT_EQ(describe_case(m.spec), describe_case(cases[i]));
    EXPECT_EQ(m.spec.config.quantum, cases[i].config.quantum);
    EXPECT_EQ(m.sched, runs[i].sched);
    EXPECT_EQ(m.hlt_exits, runs[i].hlt_exits);
    EXPECT_EQ(m.window_ns, runs[i].window_ns);
    EXPECT_EQ(m.ns_per_op_sum, runs[i].ns_per_op_sum);
    EXPECT_EQ(m.runs, 1u);
    EXPECT_EQ(m.vcpus, 10u);
    EXPECT_TRUE(same_bits(m.host_cpu_percent, runs[i].host_cpu_percent)) << m.host_cpu_percent;
    EXPECT_TRUE(same_bits(m.ipi_rate_min, runs[i].ipi_rate_min)) << m.ipi_rate_min;
    EXPECT_TRUE(same_bits(m.ipi_rate_max, runs[i].ipi_rate_max)) << m.ipi_rate_max;
  }
  EXPECT_NE(format_case_file(options, cases.size(), 0, runs[0]).find("\"res_ipis\": 0,"), std::string::npos)
      << "counts are JSON integers";
}

TEST_F(SweepFiles, MergedCaseFilesGiveTheBytesOfTheRunInOnePiece) {
  write_all();
  std::ofstream(dir / "results.json") << "{}";  // not a case file: left alone
  const std::vector<CaseMeasurement> merged = read_case_files(options, cases, dir);
  ASSERT_EQ(merged.size(), runs.size());
  EXPECT_EQ(format_experiment_json(options, merged), format_experiment_json(options, runs));
  EXPECT_EQ(format_experiment_tables(options, merged), format_experiment_tables(options, runs));
  EXPECT_EQ(experiment_charts(options, merged), experiment_charts(options, runs));
}

TEST_F(SweepFiles, TheCaseListNumbersEveryRun) {
  const std::string list = format_case_list(cases);
  EXPECT_EQ(std::count(list.begin(), list.end(), '\n'), 22);
  EXPECT_EQ(list.substr(0, list.find('\n')),
            "0\tctxsw on 10 vCPUs Skylake-Server,+x2apic,+monitor with no polling, quantum 1000");
}

TEST_F(SweepFiles, AForeignCaseFileNamesWhatDiffers) {
  EXPECT_TRUE(parse_error("{").starts_with("case-0.json: not JSON ([json.exception.parse_error")) << parse_error("{");
  EXPECT_EQ(parse_error("[]"), "case-0.json: not a case file (its schema is not topolab.experiment-case/1)");
  EXPECT_EQ(parse_error(edited([](auto& j) { j["options"]["experiment"] = "l3-cache"; })),
            "case-0.json: a case of experiment l3-cache, not halt-poll");
  EXPECT_EQ(parse_error(edited([](auto& j) { j["options"]["kernel"] = "6.x"; })),
            "case-0.json: run with --kernel 6.x, this merge has --kernel 2016 (merge with the options of the runs)");
  EXPECT_EQ(parse_error(edited([](auto& j) { j["options"]["quantum"] = 500; })).substr(0, 40),
            "case-0.json: run with --quantum 500, thi");
  EXPECT_EQ(parse_error(edited([](auto& j) { j["options"]["repeats"] = 3; })).substr(0, 40),
            "case-0.json: run with --repeats 3, this ");
  EXPECT_EQ(parse_error(edited([](auto& j) { j["options"]["scale_percent"] = 6; })).substr(0, 40),
            "case-0.json: run with --scale 6, this me");
  const std::string ipiv_off = edited([](auto&) {});
  options.cost.ipiv = true;
  EXPECT_EQ(parse_error(ipiv_off).substr(0, 65), "case-0.json: run with --cost ipiv=0, this merge has --cost ipiv=1");
}

TEST_F(SweepFiles, AMangledCaseFileIsOneError) {
  EXPECT_EQ(parse_error(edited([](auto& j) { j["cases"] = 21; })),
            "case-0.json: its experiment had 21 cases, this one has 22 (another topolab?)");
  EXPECT_EQ(parse_error(edited([](auto& j) { j["case"] = 22; })),
            "case-0.json: case 22, but the experiment has 22 cases (0-21)");
  EXPECT_EQ(parse_error(edited([](auto& j) { j["case"] = 1; })).substr(0, 36), "case-0.json: case 1 is \"ctxsw on 10 ");
  EXPECT_EQ(parse_error(edited([](auto& j) { j["measurement"]["res_ipis"] = -1; })),
            "case-0.json: \"res_ipis\" is no count: -1");
  EXPECT_EQ(parse_error(edited([](auto& j) { j["measurement"]["vcpus"] = 1.5; })),
            "case-0.json: \"vcpus\" is no count: 1.5");
  EXPECT_EQ(parse_error(edited([](auto& j) { j["measurement"]["vcpus"] = 1ull << 32; })),
            "case-0.json: \"vcpus\" is no count: 4294967296");
  EXPECT_EQ(parse_error(edited([](auto& j) { j["measurement"]["host_cpu_percent"] = "high"; })),
            "case-0.json: \"host_cpu_percent\" is no number: \"high\"");
  EXPECT_EQ(parse_error(edited([](auto& j) { j["measurement"].erase("window_ns"); })),
            "case-0.json: no \"window_ns\"");
  EXPECT_EQ(parse_error(edited([](auto& j) { j["measurement"]["guest"]["ops"] = 5; })),
            "case-0.json: \"ops\" is no string: 5");
}

// JSON escapes can put a line break in what an error quotes; the error
// stays one line (fuzz/sweep_merge_fuzzer.cc).
TEST_F(SweepFiles, AnErrorQuotingTheFileStaysOneLine) {
  const std::string description = describe_case(cases[0]);
  EXPECT_EQ(parse_error(edited([](auto& j) { j["description"] = "a\nb\r\x01"; })),
            "case-0.json: case 0 is \"a\\nb\\r\\x01\" there, \"" + description + "\" here (another topolab?)");
  EXPECT_EQ(parse_error(edited([](auto& j) { j["options"]["experiment"] = "x\ny"; })),
            "case-0.json: a case of experiment x\\ny, not halt-poll");
}

TEST_F(SweepFiles, AMergeWantsEveryCaseOnce) {
  write_all();
  std::filesystem::remove(dir / case_file_name(4));
  std::filesystem::remove(dir / case_file_name(7));
  EXPECT_EQ(merge_error(), "--merge " + dir.string() + ": 2 of 22 case files missing; the first is case 4 (" +
                               describe_case(cases[4]) + "): run it with --case 4");
  write(7, format_case_file(options, cases.size(), 3, runs[3]));
  EXPECT_EQ(merge_error().substr(0, merge_error().find(" (")),
            (dir / case_file_name(7)).string() + ": case 3 again");
  std::filesystem::remove_all(dir);
  EXPECT_EQ(merge_error(), "--merge " + dir.string() + ": no such directory");
}

}  // namespace
}  // namespace topolab
