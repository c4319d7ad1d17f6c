// SPDX-License-Identifier: GPL-2.0-or-later
// QEMU's command line (`topolab qemu`, build/qemu-system-x86_64). Input: the
// arguments, separated by NUL bytes. The invariants are what the parser
// promises (cli/qemu_command.h):
// - ConfigError is the only refusal, and its message is one non-empty line
//   (the command prints it after "topolab: " and exits 1);
// - parsing is deterministic: the same arguments give the same command or
//   the same message;
// - an accepted command prints back (to_qemu_args) to arguments that parse
//   to the same command;
// - an accepted command is one topolab can act on: a run has a kernel, the
//   machine is pc or q35, -serial is stdio, none or file:PATH, RAM is at
//   least 1 MiB;
// - -m: a size parses to a whole number of MiB that reads back the same in
//   every spelling (N, NM, size=NM, N*1024K);
// - TOPOLAB_OPTS splits into non-empty words without blanks.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include <fmt/format.h>

#include "base/errors.h"
#include "cli/qemu_command.h"
#include "fuzz/fuzz_check.h"

using namespace topolab;

namespace {

void check_message(const std::string& what, std::string_view context) {
  FUZZ_CHECK(!what.empty() && what.find('\n') == std::string::npos && what.find('\r') == std::string::npos,
             "ConfigError not one line for {}: '{}'", context, what);
}

// The command, or the refusal's message; anything else escapes and is a
// finding (libFuzzer reports the uncaught exception).
std::variant<QemuCommand, std::string> parse(const std::vector<std::string>& args) {
  try {
    return parse_qemu_command(args);
  } catch (const ConfigError& e) {
    return std::string(e.what());
  }
}

std::string joined(const std::vector<std::string>& args) {
  std::string out;
  for (const std::string& a : args) out += (out.empty() ? "'" : " '") + a + "'";
  return out;
}

void check_ram_size(const std::string& text) {
  uint64_t mib;
  try {
    mib = parse_qemu_ram_size(text);
  } catch (const ConfigError& e) {
    check_message(e.what(), "-m");
    return;
  }
  FUZZ_CHECK(mib >= 1, "-m '{}' gives {} MiB", text, mib);
  for (const std::string& spelled : {fmt::format("{}", mib), fmt::format("{}M", mib), fmt::format("size={}m", mib)})
    FUZZ_CHECK(parse_qemu_ram_size(spelled) == mib, "-m '{}' = {} MiB, but '{}' differs", text, mib, spelled);
  if (mib < (uint64_t{1} << 40)) FUZZ_CHECK(parse_qemu_ram_size(fmt::format("{}K", mib * 1024)) == mib, "-m {}K", mib);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  std::vector<std::string> args;
  for (size_t at = 0; !input.empty() && at <= input.size() && args.size() < 64;) {
    const size_t end = std::min(input.find('\0', at), input.size());
    args.emplace_back(input.substr(at, end - at));
    at = end + 1;
  }
  if (!input.empty() && input.back() == '\0') args.pop_back();  // a trailing separator ends the last argument

  const auto first = parse(args);
  const auto second = parse(args);
  if (const std::string* message = std::get_if<std::string>(&first)) {
    check_message(*message, joined(args));
    const std::string* again = std::get_if<std::string>(&second);
    FUZZ_CHECK(again && *again == *message, "{}: refused, then not the same way", joined(args));
  } else {
    const QemuCommand& cmd = std::get<QemuCommand>(first);
    const QemuCommand* again = std::get_if<QemuCommand>(&second);
    FUZZ_CHECK(again && cmd == *again, "{}: two parses differ", joined(args));
    const std::vector<std::string> printed = to_qemu_args(cmd);
    const auto reparsed = parse(printed);
    const std::string* refused = std::get_if<std::string>(&reparsed);
    FUZZ_CHECK(!refused, "{}: printed back as {}, refused: {}", joined(args), joined(printed), refused ? *refused : "");
    FUZZ_CHECK(std::get<QemuCommand>(reparsed) == cmd, "{}: printed back as {}, parses to another command",
               joined(args), joined(printed));
    if (cmd.action == QemuCommand::Action::Run) FUZZ_CHECK(!cmd.kernel.empty(), "{}: a run without -kernel", joined(args));
    FUZZ_CHECK(cmd.machine_type == "pc" || cmd.machine_type == "q35", "{}: machine '{}'", joined(args), cmd.machine_type);
    FUZZ_CHECK(cmd.serial == "stdio" || cmd.serial == "none" || (cmd.serial.starts_with("file:") && cmd.serial.size() > 5),
               "{}: serial '{}'", joined(args), cmd.serial);
    FUZZ_CHECK(cmd.ram_mib >= 1, "{}: {} MiB", joined(args), cmd.ram_mib);
  }

  // The arguments are also tried as -m's value (the first few: a refusal is
  // an exception, and unwinding dominates the time of an execution) and as
  // TOPOLAB_OPTS.
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (i < 4) check_ram_size(a);
    for (const std::string& word : split_topolab_opts(a, "test-name")) {
      FUZZ_CHECK(!word.empty() && word.find_first_of(" \t\n") == std::string::npos, "TOPOLAB_OPTS '{}' gave '{}'", a,
                 word);
    }
  }
  return 0;
}
