// SPDX-License-Identifier: GPL-2.0-or-later
#include "model/machine_spec.h"

#include <sstream>
#include <vector>

#include <fmt/format.h>

#include "base/errors.h"
#include "model/qemu_options.h"

namespace topolab {

std::string MachineSpec::label() const {
  std::string text = fmt::format("-smp {} -cpu {}", smp, cpu);
  if (!machine.empty()) text += fmt::format(" -machine {}", machine);
  if (!memory.empty()) text += fmt::format(" -m {}", memory);
  for (const std::string& o : objects) text += fmt::format(" -object {}", o);
  for (const std::string& n : numa) text += fmt::format(" -numa {}", n);
  return text;
}

ParsedMachine parse_machine_spec(const MachineSpec& spec) {
  Topology topology = Topology::parse(spec.smp);
  CpuConfig cpu = parse_cpu(spec.cpu);
  MachineOptions machine_options = spec.machine.empty() ? MachineOptions{} : parse_machine(spec.machine);
  const uint64_t ram_mib = spec.memory.empty() ? kDefaultRamMib : parse_qemu_ram_size(spec.memory);
  NumaConfig numa = NumaOptions(spec.numa, spec.objects, machine_options.hmat).complete(topology, ram_mib << 20);
  return {std::move(topology), std::move(cpu), std::move(machine_options), ram_mib, std::move(numa)};
}

MachineSpec parse_machine_words(std::string_view text, std::string_view option) {
  std::istringstream in{std::string(text)};
  std::vector<std::string> words;
  for (std::string w; in >> w;) words.push_back(w);
  MachineSpec spec;
  for (size_t i = 0; i < words.size(); ++i) {
    std::string key = words[i], value;
    if (key.starts_with("--")) key.erase(0, 1);
    if (size_t eq = key.find('='); eq != std::string::npos && key.starts_with("-")) {
      value = key.substr(eq + 1);
      key.resize(eq);
    } else if (i + 1 < words.size()) {
      value = words[++i];
    }
    std::string* field = key == "-smp" ? &spec.smp : key == "-cpu" ? &spec.cpu : key == "-machine" ? &spec.machine
                         : key == "-m" ? &spec.memory : nullptr;
    std::vector<std::string>* list = key == "-numa" ? &spec.numa : key == "-object" ? &spec.objects : nullptr;
    if ((!field && !list) || value.empty())
      throw ConfigError(fmt::format(
          "{} \"{}\": expected \"-smp N,... -cpu MODEL,... [-machine ...] [-m SIZE] [-object ...] [-numa ...]\"",
          option, text));
    if (field) *field = value;
    else list->push_back(value);
  }
  return spec;
}

}  // namespace topolab
