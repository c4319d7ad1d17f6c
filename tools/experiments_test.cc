#include "tools/experiments.h"

#include <gtest/gtest.h>

#include "model/topology.h"

namespace topolab {
namespace {

TEST(SchedResult, ParsesTheLastResultLine) {
  const std::string serial =
      "boot\nsched-result: workload=old\nsome line\nsched-result: workload=pipe idle=halt loops=10 ns_per_op=590\n";
  auto fields = parse_sched_result(serial);
  ASSERT_TRUE(fields);
  EXPECT_EQ(fields->at("workload"), "pipe");
  EXPECT_EQ(fields->at("ns_per_op"), "590");
  CaseMeasurement m;
  m.sched = *fields;
  EXPECT_EQ(m.sched_number("loops"), 10u);
  EXPECT_EQ(m.sched_number("absent"), 0u);
}

TEST(SchedResult, RejectsGarbage) {
  EXPECT_FALSE(parse_sched_result("no result here\n"));
  EXPECT_FALSE(parse_sched_result("sched-result: novalue\n"));
  EXPECT_FALSE(parse_sched_result("xsched-result: a=1\n")) << "only at the start of a line";
}

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
  o.kernel = "6.x";
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

}  // namespace
}  // namespace topolab
