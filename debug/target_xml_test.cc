// SPDX-License-Identifier: GPL-2.0-or-later
#include "debug/target_xml.h"

#include <algorithm>
#include <regex>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "arch/register_file.h"

namespace topolab::debug {
namespace {

std::vector<std::string> reg_lines(const std::string& xml) {
  std::vector<std::string> lines;
  size_t pos = 0;
  while ((pos = xml.find("<reg ", pos)) != std::string::npos) {
    const size_t end = xml.find("/>", pos);
    lines.push_back(xml.substr(pos, end - pos));
    pos = end;
  }
  return lines;
}

TEST(TargetXml, ListsEveryRegisterInOrderWithItsNumber) {
  const auto lines = reg_lines(target_xml());
  const auto regs = x86::debug_registers();
  ASSERT_EQ(lines.size(), regs.size());
  ASSERT_EQ(lines.size(), static_cast<size_t>(x86::RegisterId::kCount));
  for (size_t i = 0; i < lines.size(); ++i) {
    EXPECT_NE(lines[i].find(fmt::format("name=\"{}\"", regs[i].name)), std::string::npos) << lines[i];
    EXPECT_NE(lines[i].find(fmt::format("bitsize=\"{}\"", regs[i].bits)), std::string::npos) << lines[i];
    EXPECT_NE(lines[i].find(fmt::format("type=\"{}\"", regs[i].type)), std::string::npos) << lines[i];
    EXPECT_NE(lines[i].find(fmt::format("regnum=\"{}\"", i)), std::string::npos) << lines[i];
  }
  EXPECT_NE(lines[16].find("name=\"rip\""), std::string::npos);
}

// Well-formed enough for gdb's parser: every element opened is closed, in
// order; the document starts with the declaration gdb expects.
TEST(TargetXml, ElementsNestAndClose) {
  const std::string& xml = target_xml();
  EXPECT_TRUE(xml.starts_with("<?xml version=\"1.0\"?>\n<!DOCTYPE target SYSTEM \"gdb-target.dtd\">\n"));
  std::vector<std::string> open;
  const std::regex tag(R"(<(/?)([A-Za-z]+)[^>]*?(/?)>)");
  for (auto it = std::sregex_iterator(xml.begin(), xml.end(), tag); it != std::sregex_iterator(); ++it) {
    const auto& m = *it;
    if (m[1] == "/") {
      ASSERT_FALSE(open.empty()) << m[0];
      EXPECT_EQ(open.back(), m[2]) << m[0];
      open.pop_back();
    } else if (m[3] != "/") {
      open.push_back(m[2]);
    }
  }
  EXPECT_TRUE(open.empty());
  EXPECT_EQ(std::count(xml.begin(), xml.end(), '<'), std::count(xml.begin(), xml.end(), '>'));
}

TEST(TargetXml, ArchitectureFeaturesAndTypes) {
  const std::string& xml = target_xml();
  EXPECT_NE(xml.find("<architecture>i386:x86-64</architecture>"), std::string::npos);
  for (const char* feature : {"org.gnu.gdb.i386.core", "org.gnu.gdb.i386.sse", "org.gnu.gdb.i386.segments"}) {
    EXPECT_NE(xml.find(fmt::format("<feature name=\"{}\">", feature)), std::string::npos) << feature;
  }
  // Each type defined once, before its first use.
  for (const char* type : {"i386_eflags", "i386_mxcsr", "vec128"}) {
    const std::string defined = fmt::format("id=\"{}\"", type);
    const std::string used = fmt::format("type=\"{}\"", type);
    ASSERT_NE(xml.find(defined), std::string::npos) << type;
    EXPECT_EQ(xml.find(defined), xml.rfind(defined)) << type;
    EXPECT_LT(xml.find(defined), xml.find(used)) << type;
  }
  EXPECT_NE(xml.find("<field name=\"ID\" start=\"21\" end=\"21\"/>"), std::string::npos);
  EXPECT_NE(xml.find("<field name=\"FZ\" start=\"15\" end=\"15\"/>"), std::string::npos);
  // i387_ext is gdb's own: never defined here.
  EXPECT_EQ(xml.find("id=\"i387_ext\""), std::string::npos);
  // The segments feature holds fs_base and gs_base, not k_gs_base.
  const size_t segments = xml.find("org.gnu.gdb.i386.segments");
  const size_t segments_end = xml.find("</feature>", segments);
  EXPECT_LT(xml.find("name=\"gs_base\""), segments_end);
  EXPECT_GT(xml.find("name=\"k_gs_base\""), segments_end);
}

TEST(TargetXml, ChunksReassembleTheDocument) {
  const std::string& xml = target_xml();
  for (uint64_t size : {1u, 7u, 100u, 4096u}) {
    std::string whole;
    for (uint64_t offset = 0;; offset += size) {
      const std::string chunk = xfer_chunk(xml, offset, size);
      ASSERT_FALSE(chunk.empty());
      whole += chunk.substr(1);
      if (chunk[0] == 'l') break;
      ASSERT_EQ(chunk[0], 'm');
      ASSERT_EQ(chunk.size(), size + 1);
    }
    EXPECT_EQ(whole, xml) << "chunks of " << size;
  }
}

TEST(TargetXml, ChunkAtOrPastTheEnd) {
  EXPECT_EQ(xfer_chunk("abc", 3, 10), "l");
  EXPECT_EQ(xfer_chunk("abc", 1000, 10), "l");
  EXPECT_EQ(xfer_chunk("abc", 0, 3), "labc");
  EXPECT_EQ(xfer_chunk("abc", 0, 2), "mab");
  EXPECT_EQ(xfer_chunk("abc", UINT64_MAX, UINT64_MAX), "l");
  EXPECT_EQ(xfer_chunk("abc", 2, UINT64_MAX), "lc");
}

}  // namespace
}  // namespace topolab::debug
