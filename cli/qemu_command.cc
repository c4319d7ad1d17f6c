// SPDX-License-Identifier: GPL-2.0-or-later
#include "cli/qemu_command.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <functional>
#include <map>
#include <string_view>

#include <fmt/format.h>

#include "base/errors.h"

namespace topolab {

namespace {

// The parser's state: the command being built and the option being read.
class Parser {
 public:
  QemuCommand parse(const std::vector<std::string>& args);

 private:
  void option(const std::string& name, const std::optional<std::string>& value);
  void machine(const std::string& value, const std::string& spelled);
  void gdb(const std::string& value);
  void accel(const std::string& value, const std::string& spelled);
  void device(const std::string& value);
  void global(const std::string& value);
  void serial(const std::string& value);

  QemuCommand cmd_;
  bool serial_given_ = false, nodefaults_ = false, nographic_ = false;
};

// Options QEMU has that topolab refuses, with the reason.
const std::map<std::string, std::string, std::less<>>& refused_options() {
  static const std::map<std::string, std::string, std::less<>> kRefused = {
      {"enable-kvm", "topolab runs its own TCG only (Unicorn); it has no KVM"},
      {"bios", "topolab's firmware is built in; it takes no BIOS image"},
      {"no-acpi", "topolab's firmware always builds its ACPI tables"},
      {"no-shutdown", "topolab's run ends when the guest shuts down"},
      {"icount", "topolab's clock is virtual already (instructions at a fixed CPI); it takes no -icount"},
      {"rtc", "topolab has no CMOS RTC yet"},
      {"chardev", "topolab's COM1 goes where -serial says; it has no other character devices"},
      {"drive", "topolab has no disks"},
      {"blockdev", "topolab has no disks"},
      {"hda", "topolab has no disks"},
      {"cdrom", "topolab has no disks"},
      {"netdev", "topolab has no network"},
      {"nic", "topolab has no network"},
      {"qmp", "topolab has no QMP monitor"},
      {"d", "QEMU's log; topolab's instruction trace is --trace in TOPOLAB_OPTS"},
      {"D", "QEMU's log; topolab's instruction trace is --trace in TOPOLAB_OPTS"},
      {"trace", "QEMU's trace events; topolab's instruction trace is --trace in TOPOLAB_OPTS"},
      {"usb", "topolab has no USB"},
      {"usbdevice", "topolab has no USB"},
      {"incoming", "topolab does not migrate"},
      {"loadvm", "topolab has no snapshots"},
      {"snapshot", "topolab has no snapshots"},
      {"overcommit", "topolab has no host CPUs to pin or pass power management through to"},
  };
  return kRefused;
}

// Options that take a value (the next argument), and flags.
constexpr std::array kValueOptions = {
    "kernel", "initrd", "append", "smp",  "cpu",  "m",       "machine", "M",    "accel", "device",  "serial",
    "vnc",    "display", "name",  "global", "monitor", "L",  "boot",    "net",  "bios",  "icount",  "rtc",
    "chardev", "drive",  "blockdev", "hda", "cdrom", "netdev", "nic",   "numa", "object", "gdb",   "qmp",
    "d",      "D",       "trace", "usbdevice", "incoming", "loadvm", "k",   "vga",     "overcommit"};
constexpr std::array kFlagOptions = {"nodefaults", "nographic", "no-reboot", "no-hpet", "enable-kvm", "no-acpi",
                                     "no-shutdown", "S", "s", "version", "help", "h", "usb", "snapshot"};

bool takes_value(std::string_view name) {
  return std::find(kValueOptions.begin(), kValueOptions.end(), name) != kValueOptions.end();
}
bool is_flag(std::string_view name) {
  return std::find(kFlagOptions.begin(), kFlagOptions.end(), name) != kFlagOptions.end();
}

// Device models QEMU 7.2 has on x86 that topolab does not emulate: refused
// as "not emulated" rather than "not a valid device model name".
bool known_qemu_device(std::string_view name) {
  static constexpr std::array kKnown = {
      "intel-iommu", "amd-iommu",      "edu",        "e1000",         "e1000e",      "rtl8139",
      "pcie-root-port", "ioh3420",     "isa-serial", "pci-serial",    "i6300esb",    "ib700",
      "hpet",        "kvm-pit",        "isa-pit",    "ivshmem-plain", "ivshmem-doorbell", "pci-bridge",
      "usb-ehci",    "qemu-xhci",      "nec-usb-xhci", "ich9-ahci",   "ide-hd",      "ide-cd",
      "sga",         "vmcoreinfo",     "pvpanic",    "isa-debugcon",  "vfio-pci",    "nvme",
      "vmxnet3",     "megasas",        "lsi53c895a", "ramfb",         "VGA",         "cirrus-vga",
      "pxb",         "pxb-pcie",       "tpm-tis",    "sdhci-pci",     "x86-iommu",   "ich9-intel-hda",
      "hyperv-testdev"};
  if (name.starts_with("virtio-") || name.starts_with("vhost-")) return true;
  return std::find(kKnown.begin(), kKnown.end(), name) != kKnown.end();
}

QemuCommand Parser::parse(const std::vector<std::string>& args) {
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a.size() < 2 || a[0] != '-') {
      // QEMU takes a bare argument as a disk image (-hda).
      throw ConfigError(fmt::format("{}: topolab has no disks (a bare argument is QEMU's -hda)", a));
    }
    std::string name = a.substr(a[1] == '-' ? 2 : 1);
    std::optional<std::string> value;
    // "--opt=value" (two dashes): QEMU's getopt-style spelling.
    if (a[1] == '-')
      if (const size_t eq = name.find('='); eq != std::string::npos) {
        value = name.substr(eq + 1);
        name.resize(eq);
      }
    if (takes_value(name)) {
      if (!value) {
        if (i + 1 >= args.size()) throw ConfigError(fmt::format("-{}: requires an argument", name));
        value = args[++i];
      }
    } else if (!is_flag(name)) {
      throw ConfigError(fmt::format("-{}: invalid option", name));
    } else if (value) {
      throw ConfigError(fmt::format("-{}: takes no argument", name));
    }
    option(name, value);
  }
  if (!serial_given_) cmd_.serial = nographic_ && !nodefaults_ ? "stdio" : "none";
  if (cmd_.action == QemuCommand::Action::Run && cmd_.kernel.empty())
    throw ConfigError("-kernel: topolab boots a kernel image (Multiboot); give it with -kernel FILE");
  return cmd_;
}

void Parser::option(const std::string& name, const std::optional<std::string>& value) {
  using Action = QemuCommand::Action;
  if (auto it = refused_options().find(name); it != refused_options().end())
    throw ConfigError(fmt::format("-{}{}: {}", name, value ? " " + *value : "", it->second));
  const std::string& v = value ? *value : std::string();
  if (name == "version") cmd_.action = Action::Version;
  else if (name == "help" || name == "h") cmd_.action = Action::Help;
  else if (name == "kernel") cmd_.kernel = v;
  else if (name == "append") cmd_.append = v;
  else if (name == "initrd") {
    cmd_.initrd.clear();
    for (const std::string& module : split_qemu_properties(v)) cmd_.initrd.push_back(module);
  } else if (name == "smp") cmd_.machine.smp = v;
  else if (name == "cpu") {
    if (v == "help" || v == "?") cmd_.action = Action::ListCpus;
    else cmd_.machine.cpu = v;
  } else if (name == "m") {
    cmd_.ram_mib = parse_qemu_ram_size(v);
    cmd_.machine.memory = v;
  } else if (name == "numa") cmd_.machine.numa.push_back(v);
  else if (name == "object") cmd_.machine.objects.push_back(v);
  else if (name == "machine" || name == "M") machine(v, "-" + name);
  else if (name == "accel") accel(v, "-accel");
  else if (name == "device") device(v);
  else if (name == "global") global(v);
  else if (name == "serial") serial(v);
  else if (name == "nodefaults") nodefaults_ = true;
  else if (name == "nographic") nographic_ = true;
  else if (name == "no-reboot") cmd_.no_reboot = true;
  else if (name == "s") cmd_.gdb = "tcp::1234";  // QEMU's shorthand for -gdb tcp::1234
  else if (name == "S") cmd_.gdb_wait = true;
  else if (name == "gdb") gdb(v);
  else if (name == "no-hpet") {
    // topolab has no HPET to remove.
  } else if (name == "vnc") {
    if (v != "none") throw ConfigError(fmt::format("-vnc {}: topolab has no display (only -vnc none)", v));
  } else if (name == "display") {
    if (v != "none") throw ConfigError(fmt::format("-display {}: topolab has no display (only -display none)", v));
  } else if (name == "vga") {
    if (v != "none") throw ConfigError(fmt::format("-vga {}: topolab has no display (only -vga none)", v));
  } else if (name == "monitor") {
    if (v != "none" && v != "stdio")
      throw ConfigError(fmt::format("-monitor {}: topolab's monitor is on stdio only (-monitor stdio or none)", v));
    if (v == "stdio") cmd_.monitor = "stdio";
  } else if (name == "name" || name == "L" || name == "k") {
    // A name for the guest, the data directory, the keyboard layout: nothing
    // of topolab's machine changes.
  } else if (name == "boot") {
    // The boot order among disks; with -kernel QEMU boots the kernel anyway.
  } else if (name == "net") {
    if (v != "none") throw ConfigError(fmt::format("-net {}: topolab has no network (only -net none)", v));
  } else {
    throw ConfigError(fmt::format("-{}: invalid option", name));
  }
}

// -gdb: tcp::PORT or tcp:HOST:PORT (QEMU's -gdb takes a chardev; topolab's
// stub listens on TCP only). The endpoint is checked where it is opened.
void Parser::gdb(const std::string& value) {
  if (!value.starts_with("tcp:"))
    throw ConfigError(fmt::format("-gdb {}: topolab's gdb stub listens on TCP only: tcp::PORT or tcp:HOST:PORT", value));
  cmd_.gdb = value;
}

// -machine [TYPE,]prop=value,...: the type, accel=, pit=, smp-cache.* and
// hmat= (which the MachineSpec's parse_machine reads), and properties that
// only matter for what topolab does not have.
void Parser::machine(const std::string& value, const std::string& spelled) {
  std::vector<std::string> for_spec;
  bool first = true;
  for (const std::string& item : split_qemu_properties(value)) {
    const QemuProperty p = split_qemu_property(item);
    if (!p.has_value) {
      if (!first) throw ConfigError(fmt::format("{} {}: {}: expected property=value", spelled, value, item));
      if (item == "help" || item == "?") {
        cmd_.action = QemuCommand::Action::ListMachines;
      } else if (item == "pc" || item.starts_with("pc-i440fx-") || item == "q35" || item.starts_with("pc-q35-")) {
        cmd_.machine_type = item == "pc" || item.starts_with("pc-i440fx-") ? "pc" : "q35";
      } else if (item == "isapc" || item == "microvm" || item == "none" || item == "x-remote") {
        throw ConfigError(fmt::format("{} {}: topolab's machine is QEMU's pc (or q35); it does not emulate {}",
                                      spelled, value, item));
      } else {
        throw ConfigError(fmt::format("{} {}: unsupported machine type '{}' (see -machine help)", spelled, value, item));
      }
      first = false;
      continue;
    }
    first = false;
    if (p.name == "type") {
      machine(p.value, spelled);
    } else if (p.name == "accel") {
      accel(p.value, spelled + " accel=");
    } else if (p.name == "pit") {
      const std::optional<bool> on = parse_qemu_bool(p.value);
      if (!on) throw ConfigError(fmt::format("{} {}: pit={}: expected on or off", spelled, value, p.value));
      cmd_.devices.set(PlatformDevice::Pit, *on);
    } else if (p.name.starts_with("smp-cache.") || p.name == "hmat") {
      for_spec.push_back(item);
    } else if (p.name == "kernel-irqchip" || p.name == "kernel_irqchip" || p.name == "vmport" || p.name == "hpet" ||
               p.name == "usb" || p.name == "graphics" || p.name == "dump-guest-core" || p.name == "mem-merge" ||
               p.name == "sata" || p.name == "smbus" || p.name == "suppress-vmdesc") {
      // These choose between KVM's and QEMU's device models, or devices
      // topolab has neither of; with TCG and topolab's platform they change
      // nothing the guest sees.
      if (!parse_qemu_bool(p.value) && p.value != "split" && p.value != "auto")
        throw ConfigError(fmt::format("{} {}: {}={}: expected on or off", spelled, value, p.name, p.value));
    } else {
      throw ConfigError(fmt::format("{} {}: property '{}' is not one of this machine's", spelled, value, p.name));
    }
  }
  if (!for_spec.empty()) {
    // Commas inside a value stay escaped (",,"), so that the joined string
    // splits into the same properties again.
    std::string joined;
    for (const std::string& s : for_spec) joined += (joined.empty() ? "" : ",") + escape_qemu_commas(s);
    cmd_.machine.machine = cmd_.machine.machine.empty() ? joined : cmd_.machine.machine + "," + joined;
  }
}

// -accel NAME[,props] or -machine accel=A[:B...]: TCG, which topolab is.
void Parser::accel(const std::string& value, const std::string& spelled) {
  const std::vector<std::string> items = split_qemu_properties(value);
  const std::string& names = items.front();
  if (names == "help" || names == "?") {
    cmd_.action = QemuCommand::Action::ListAccelerators;
    return;
  }
  // "kvm:tcg": QEMU tries each in turn; topolab is the TCG one.
  bool tcg = false;
  size_t start = 0;
  while (start <= names.size()) {
    size_t colon = names.find(':', start);
    if (colon == std::string::npos) colon = names.size();
    if (names.substr(start, colon - start) == "tcg") tcg = true;
    start = colon + 1;
  }
  if (!tcg) throw ConfigError(fmt::format("{}{}: topolab runs TCG only (its own, on Unicorn); it has no {}", spelled, value, names));
  for (size_t i = 1; i < items.size(); ++i) {
    const QemuProperty p = split_qemu_property(items[i]);
    // thread=single|multi, tb-size, split-wx: how QEMU runs TCG, not what
    // the guest sees; topolab schedules its vCPUs deterministically either way.
    if (p.name != "thread" && p.name != "tb-size" && p.name != "split-wx")
      throw ConfigError(fmt::format("{}{}: property '{}' is not one of tcg's", spelled, value, p.name));
  }
}

void Parser::device(const std::string& value) {
  const std::vector<std::string> items = split_qemu_properties(value);
  const std::string& driver = items.front();
  if (driver == "help" || driver == "?") {
    cmd_.action = QemuCommand::Action::ListDevices;
    return;
  }
  auto no_properties = [&] {
    if (items.size() > 1) throw ConfigError(fmt::format("-device {}: {} takes no properties here", value, driver));
  };
  if (driver == "isa-debug-exit") {
    for (size_t i = 1; i < items.size(); ++i) {
      const QemuProperty p = split_qemu_property(items[i]);
      const std::optional<uint64_t> n = parse_qemu_number(p.value);
      if (p.name == "iobase") {
        if (n != 0xf4u)
          throw ConfigError(fmt::format("-device {}: topolab's isa-debug-exit sits at iobase=0xf4 only", value));
      } else if (p.name == "iosize") {
        if (!n || *n < 1 || *n > 4)
          throw ConfigError(fmt::format("-device {}: iosize must be 1 to 4 (topolab decodes 0xf4-0xf7)", value));
      } else {
        throw ConfigError(fmt::format("-device {}: property '{}' is not one of isa-debug-exit's", value, p.name));
      }
    }
    cmd_.devices.add(PlatformDevice::IsaDebugExit);
  } else if (const std::optional<PlatformDevice> device = platform_device_named(driver)) {
    no_properties();
    cmd_.devices.add(*device);
  } else if (known_qemu_device(driver)) {
    throw ConfigError(fmt::format("-device {}: topolab does not emulate {}", value, driver));
  } else {
    throw ConfigError(fmt::format("-device {}: '{}' is not a valid device model name", value, driver));
  }
}

// -global DRIVER.PROP=VALUE: QEMU applies it to every DRIVER it creates and
// to none if it creates none. topolab's own devices take no properties, so
// a global for one of them is refused; one for a device topolab has not,
// like QEMU's for a device it did not create, changes nothing.
void Parser::global(const std::string& value) {
  const size_t dot = value.find('.'), eq = value.find('=');
  if (dot == std::string::npos || eq == std::string::npos || dot > eq || dot == 0)
    throw ConfigError(fmt::format("-global {}: expected DRIVER.PROPERTY=VALUE", value));
  const std::string driver = value.substr(0, dot);
  if (driver == "isa-debug-exit" || driver == "pc-testdev" || driver == "pci-testdev")
    throw ConfigError(fmt::format("-global {}: topolab's {} takes no properties", value, driver));
}

void Parser::serial(const std::string& value) {
  if (serial_given_) throw ConfigError(fmt::format("-serial {}: topolab has one serial port (COM1)", value));
  serial_given_ = true;
  if (value == "stdio" || value == "mon:stdio") cmd_.serial = "stdio";
  else if (value == "none" || value == "null") cmd_.serial = "none";
  else if (value.starts_with("file:") && value.size() > 5) cmd_.serial = value;
  else throw ConfigError(fmt::format("-serial {}: topolab's COM1 goes to stdio, file:PATH or none", value));
}

}  // namespace

QemuCommand parse_qemu_command(const std::vector<std::string>& args) {
  try {
    return Parser().parse(args);
  } catch (const ConfigError& e) {
    throw ConfigError(one_line(e.what()));
  }
}

std::vector<std::string> to_qemu_args(const QemuCommand& c) {
  std::vector<std::string> args;
  auto option = [&](const char* name, const std::string& value) {
    args.push_back(name);
    args.push_back(value);
  };
  if (!c.kernel.empty()) option("-kernel", c.kernel);
  if (!c.initrd.empty()) {
    std::string modules;
    for (size_t i = 0; i < c.initrd.size(); ++i) modules += (i ? "," : "") + escape_qemu_commas(c.initrd[i]);
    option("-initrd", modules);
  }
  if (!c.append.empty()) option("-append", c.append);
  option("-smp", c.machine.smp);
  option("-cpu", c.machine.cpu);
  std::string machine = c.machine_type;
  if (!c.machine.machine.empty()) machine += "," + c.machine.machine;
  if (!c.devices.has(PlatformDevice::Pit)) machine += ",pit=off";
  option("-machine", machine);
  if (!c.machine.memory.empty()) option("-m", c.machine.memory);
  for (const std::string& o : c.machine.objects) option("-object", o);
  for (const std::string& n : c.machine.numa) option("-numa", n);
  option("-serial", c.serial);
  if (c.no_reboot) args.push_back("-no-reboot");
  if (!c.gdb.empty()) option("-gdb", c.gdb);
  if (c.gdb_wait) args.push_back("-S");
  if (!c.monitor.empty()) option("-monitor", c.monitor);
  for (const PlatformDeviceInfo& info : kPlatformDevices) {
    if (info.qemu_help.empty() || !c.devices.has(info.device)) continue;
    option("-device", info.device == PlatformDevice::IsaDebugExit ? "isa-debug-exit,iobase=0xf4,iosize=4"
                                                                    : std::string(info.qemu_name));
  }
  using Action = QemuCommand::Action;
  switch (c.action) {
    case Action::Run: break;
    case Action::Version: args.push_back("-version"); break;
    case Action::Help: args.push_back("-help"); break;
    case Action::ListDevices: option("-device", "help"); break;
    case Action::ListCpus: option("-cpu", "help"); break;
    case Action::ListMachines: option("-machine", "help"); break;
    case Action::ListAccelerators: option("-accel", "help"); break;
  }
  return args;
}

std::string qemu_version_text(const std::string& topolab_version, const std::string& engine_version) {
  // kvm-unit-tests and other scripts read "QEMU emulator version X.Y.Z" off
  // the first line; the parenthesis says what is really answering.
  return fmt::format(
      "QEMU emulator version 7.2.0 (topolab {}, on Unicorn {})\n"
      "Copyright (c) 2003-2022 Fabrice Bellard and the QEMU Project developers\n",
      topolab_version, engine_version);
}

std::string qemu_help_text(const std::string& topolab_version, const std::string& engine_version) {
  // The first line is -version's: kvm-unit-tests reads QEMU's version off
  // `-h | head -1` into the guest's environment.
  const std::string version = qemu_version_text(topolab_version, engine_version);
  return version.substr(0, version.find('\n') + 1) +
         "usage: qemu-system-x86_64 [options] (topolab: QEMU 7.2's x86 command line, as far as topolab's machine goes)\n"
         "\n"
         "-kernel FILE      a Multiboot kernel image\n"
         "-initrd FILE[ ARGS][,FILE...]  Multiboot modules\n"
         "-append TEXT      the kernel command line\n"
         "-smp, -cpu, -m    as QEMU's (-cpu help lists the models)\n"
         "-machine [pc|q35][,accel=tcg][,pit=on|off][,smp-cache.N.*][,hmat=on|off]\n"
         "-accel tcg[,thread=single|multi]\n"
         "-device isa-debug-exit,iobase=0xf4,iosize=4 | pc-testdev | pci-testdev (-device help lists them)\n"
         "-serial stdio|file:PATH|none, -nodefaults, -nographic, -no-reboot\n"
         "-vnc none, -display none, -monitor none, -name NAME, -global D.P=V (accepted, change nothing)\n"
         "\n"
         "topolab's own options (--report, --report-file, --svg, --cost, --quantum, --time-limit,\n"
         "--spin-skip, --trace, --info-lapic, --html) go in the environment variable TOPOLAB_OPTS;\n"
         "\"%t\" in a value becomes $TESTNAME (or the kernel's name).\n";
}

std::string qemu_device_list_text() {
  // QEMU's format: scripts grep for the quoted names.
  // kvm-unit-tests' x86/run adds -device pci-testdev when the list has it.
  std::string text = "Misc devices:\n";
  for (const PlatformDeviceInfo& info : kPlatformDevices)
    if (!info.qemu_help.empty()) text += std::string(info.qemu_help) + "\n";
  return text;
}

std::string qemu_machine_list_text() {
  return "Supported machines are:\n"
         "pc                   Standard PC (i440FX + PIIX, 1996) (alias of pc-i440fx-7.2)\n"
         "pc-i440fx-7.2        Standard PC (i440FX + PIIX, 1996) (default)\n"
         "q35                  Standard PC (Q35 + ICH9, 2009) (alias of pc-q35-7.2)\n"
         "pc-q35-7.2           Standard PC (Q35 + ICH9, 2009)\n";
}

std::string qemu_accelerator_list_text() { return "Accelerators supported in QEMU binary:\ntcg\n"; }

std::vector<std::string> split_topolab_opts(const std::string& text, const std::string& test_name) {
  std::vector<std::string> out;
  std::string word;
  auto flush = [&] {
    if (word.empty()) return;
    std::string expanded;
    for (size_t i = 0; i < word.size(); ++i) {
      if (word[i] == '%' && i + 1 < word.size() && word[i + 1] == 't') {
        expanded += test_name;
        ++i;
      } else {
        expanded += word[i];
      }
    }
    out.push_back(expanded);
    word.clear();
  };
  for (char c : text) {
    if (c == ' ' || c == '\t' || c == '\n') flush();
    else word += c;
  }
  flush();
  return out;
}

}  // namespace topolab
