// SPDX-License-Identifier: GPL-2.0-or-later
#include "lab/check_report.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

namespace topolab {
namespace {

CpuidModel make(const char* smp, const char* cpu) { return CpuidModel(Topology::parse(smp), parse_cpu(cpu)); }

TEST(CheckReport, JsonAndTextCarryTheSameFindings) {
  RawCpuid raw = raw_cpuid_of(make("4,cores=2,threads=2", "EPYC,-topoext"), "-smp 4,cores=2,threads=2 -cpu EPYC,-topoext");
  LintInput in = decode_for_lint(raw, {});
  auto findings = lint_topology(in);
  ASSERT_FALSE(findings.empty());
  std::string text = format_check_text(in, findings), json = format_check_json(in, findings);
  for (const auto& f : findings) {
    EXPECT_NE(text.find("[" + f.id + "]"), std::string::npos) << f.id;
    EXPECT_NE(json.find("\"id\": \"" + f.id + "\""), std::string::npos) << f.id;
  }
  EXPECT_NE(text.find(fmt::format("{} findings", findings.size())), std::string::npos);
}

}  // namespace
}  // namespace topolab
