// SPDX-License-Identifier: GPL-2.0-or-later
// The runner on scripted fake vCPUs (emu/machine_test_support.h): a guest
// that speaks the sched kernel's protocol without a sched kernel, so the
// runner's reading of a run is tested without Unicorn.
#include "lab/runner.h"

#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <stdexcept>

#include <gtest/gtest.h>

#include "emu/machine_test_support.h"

namespace topolab {
namespace {

using namespace machine_test;

// COM1's transmit register: what the guest prints.
constexpr uint16_t kCom1 = 0x3f8;

Action print(std::string text) {
  return [text](FakeVcpu& v, uint64_t) {
    for (char c : text) v.host().port_out(kCom1, 1, static_cast<uint8_t>(c));
    v.retire(text.size());
    return stop();
  };
}

// A one-vCPU case of the sched guest's protocol; its image is a HLT the
// fakes never run, written where the machine reads it.
class RunnerOnFakes : public ::testing::Test {
 protected:
  void SetUp() override {
    char dir[] = "/tmp/topolab-runner-XXXXXX";
    ASSERT_NE(mkdtemp(dir), nullptr);
    dir_ = dir;
    const std::vector<uint8_t> elf = make_elf(0x100000, {0xf4});
    std::ofstream(dir_ / "guest.elf", std::ios::binary).write(reinterpret_cast<const char*>(elf.data()), elf.size());
    spec_.workload = "pipe";
    spec_.topology = "1 fake vCPU";
    spec_.setting = "none";
    spec_.config.topology = Topology::parse("1");
    spec_.config.cpu = parse_cpu("Skylake-Server");
    spec_.config.image = (dir_ / "guest.elf").string();
    spec_.config.cost = CostModel::parse("none,cpi=1,freq_mhz=1000", CostModel::defaults());
    spec_.config.time_limit_seconds = 0.01;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // A factory of vCPU 0 running `script`.
  static VcpuFactory fakes(std::vector<Action> script) {
    return [script](unsigned index, GuestRam&, VcpuHost& host, EngineCpuModel) -> std::unique_ptr<Vcpu> {
      return std::make_unique<FakeVcpu>(index, host, index == 0 ? script : std::vector<Action>{});
    };
  }

  std::filesystem::path dir_;
  ExperimentCase spec_;
};

TEST_F(RunnerOnFakes, ReadsTheResultLineAndTheWindow) {
  ExperimentOptions options;
  const auto results = run_experiment_cases(
      options, {spec_},
      fakes({measure(MeasurePort::Mark::Begin), run_for(500), measure(MeasurePort::Mark::End),
             print("sched-result: workload=pipe loops=3 ns_per_op=42\n"), guest_exit(0)}),
      nullptr);
  ASSERT_EQ(results.size(), 1u);
  const CaseMeasurement& m = results[0];
  EXPECT_EQ(m.sched.at("loops"), "3");
  EXPECT_EQ(m.ns_per_op_sum, 42u);
  EXPECT_EQ(m.vcpus, 1u);
  EXPECT_GE(m.window_ns, 500u) << "one instruction is one nanosecond";
  EXPECT_EQ(m.spec.setting, "none");
}

TEST_F(RunnerOnFakes, AFailedGuestNamesItsCase) {
  ExperimentOptions options;
  try {
    run_experiment_cases(options, {spec_}, fakes({print("FAIL: lost a wakeup\n"), guest_exit(3)}), nullptr);
    FAIL() << "a guest that exited 3 passed";
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string(e.what()), "pipe on 1 fake vCPU with none: the guest failed: FAIL: lost a wakeup");
  }
}

// What the guest printed is quoted as one line: no CR, no escape sequence
// reaching the user's terminal.
TEST_F(RunnerOnFakes, AFailedGuestsLineIsQuotedAsOneLine) {
  ExperimentOptions options;
  try {
    run_experiment_cases(options, {spec_}, fakes({print("FAIL: \x1b[31mred\r\n"), guest_exit(3)}), nullptr);
    FAIL() << "a guest that exited 3 passed";
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string(e.what()), "pipe on 1 fake vCPU with none: the guest failed: FAIL: \\x1b[31mred");
  }
}

TEST_F(RunnerOnFakes, AGuestWithoutAWindowIsAFailure) {
  ExperimentOptions options;
  EXPECT_THROW(run_experiment_cases(options, {spec_}, fakes({print("sched-result: loops=3\n"), guest_exit(0)}), nullptr),
               std::runtime_error);
}

}  // namespace
}  // namespace topolab
