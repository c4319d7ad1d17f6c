// SPDX-License-Identifier: GPL-2.0-or-later
#include "cli/qemu_command.h"

#include <gtest/gtest.h>

#include "base/errors.h"

namespace topolab {
namespace {

using Action = QemuCommand::Action;

QemuCommand parse(std::vector<std::string> args) { return parse_qemu_command(args); }

// The message of the ConfigError `args` raise ("" if they parse).
std::string refusal(std::vector<std::string> args) {
  try {
    parse_qemu_command(args);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

// kvm-unit-tests' x86/run, as it starts the apic test on TCG.
TEST(QemuCommand, TakesKvmUnitTestsCommandLine) {
  const QemuCommand q = parse({"-nodefaults", "-device", "pc-testdev", "-device", "isa-debug-exit,iobase=0xf4,iosize=0x4",
                               "-vnc", "none", "-serial", "stdio", "-device", "pci-testdev", "-machine", "accel=tcg",
                               "-kernel", "x86/apic.flat", "-smp", "2", "-cpu", "qemu64,+x2apic,+tsc-deadline",
                               "-machine", "pit=off", "-initrd", "/tmp/env"});
  EXPECT_EQ(q.action, Action::Run);
  EXPECT_EQ(q.kernel, "x86/apic.flat");
  EXPECT_EQ(q.machine.smp, "2");
  EXPECT_EQ(q.machine.cpu, "qemu64,+x2apic,+tsc-deadline");
  EXPECT_EQ(q.serial, "stdio");
  EXPECT_TRUE(q.devices.has(PlatformDevice::IsaDebugExit));
  EXPECT_TRUE(q.devices.has(PlatformDevice::PcTestdev));
  EXPECT_TRUE(q.devices.has(PlatformDevice::PciTestdev));
  EXPECT_FALSE(q.devices.has(PlatformDevice::Pit));
  EXPECT_EQ(q.initrd, std::vector<std::string>{"/tmp/env"});
  EXPECT_FALSE(q.no_reboot);
}

TEST(QemuCommand, OptionsTakeOneDashOrTwoAndTwoDashesTakeEquals) {
  const QemuCommand q = parse({"--no-reboot", "--kernel=k.elf", "--append", "-smp 4", "--smp=4,cores=2,threads=2",
                               "-M", "q35", "--m=1G"});
  EXPECT_TRUE(q.no_reboot);
  EXPECT_EQ(q.kernel, "k.elf");
  EXPECT_EQ(q.append, "-smp 4");  // a value that looks like an option stays a value
  EXPECT_EQ(q.machine.smp, "4,cores=2,threads=2");
  EXPECT_EQ(q.machine_type, "q35");
  EXPECT_EQ(q.ram_mib, 1024u);
}

TEST(QemuCommand, SerialDefaultsAsQemus) {
  EXPECT_EQ(parse({"-kernel", "k"}).serial, "none");  // QEMU's vc: not on stdout
  EXPECT_EQ(parse({"-kernel", "k", "-nographic"}).serial, "stdio");
  EXPECT_EQ(parse({"-kernel", "k", "-nographic", "-nodefaults"}).serial, "none");
  EXPECT_EQ(parse({"-kernel", "k", "-serial", "mon:stdio"}).serial, "stdio");
  EXPECT_EQ(parse({"-kernel", "k", "-serial", "file:out.txt"}).serial, "file:out.txt");
  EXPECT_NE(refusal({"-kernel", "k", "-serial", "tcp::4444"}), "");
  EXPECT_NE(refusal({"-kernel", "k", "-serial", "stdio", "-serial", "stdio"}), "");
}

TEST(QemuCommand, AnswersWithoutRunning) {
  EXPECT_EQ(parse({"-version"}).action, Action::Version);
  EXPECT_EQ(parse({"--version"}).action, Action::Version);
  EXPECT_EQ(parse({"-help"}).action, Action::Help);
  EXPECT_EQ(parse({"-device", "?"}).action, Action::ListDevices);
  EXPECT_EQ(parse({"-device", "help"}).action, Action::ListDevices);
  EXPECT_EQ(parse({"-cpu", "help"}).action, Action::ListCpus);
  EXPECT_EQ(parse({"-machine", "help"}).action, Action::ListMachines);
  EXPECT_EQ(parse({"-accel", "help"}).action, Action::ListAccelerators);
  EXPECT_NE(qemu_device_list_text().find("\"pc-testdev\""), std::string::npos);
  const std::string first_line = "QEMU emulator version 7.2.0 (topolab 0.9.0, on Unicorn 2.1.3)\n";
  EXPECT_EQ(qemu_version_text("0.9.0", "2.1.3").rfind(first_line, 0), 0u);
  EXPECT_EQ(qemu_help_text("0.9.0", "2.1.3").rfind(first_line, 0), 0u);
}

TEST(QemuCommand, AcceleratorIsTcg) {
  EXPECT_EQ(refusal({"-kernel", "k", "-accel", "tcg,thread=single"}), "");
  EXPECT_EQ(refusal({"-kernel", "k", "-machine", "accel=kvm:tcg"}), "");
  EXPECT_NE(refusal({"-kernel", "k", "-accel", "kvm"}).find("TCG only"), std::string::npos);
  EXPECT_NE(refusal({"-kernel", "k", "-machine", "accel=kvm"}).find("TCG only"), std::string::npos);
  EXPECT_NE(refusal({"-kernel", "k", "-enable-kvm"}).find("-enable-kvm: topolab runs its own TCG only"),
            std::string::npos);
  EXPECT_NE(refusal({"-kernel", "k", "-accel", "tcg,nosuch=1"}).find("'nosuch'"), std::string::npos);
}

TEST(QemuCommand, MachineProperties) {
  const QemuCommand q = parse({"-kernel", "k", "-machine", "pc-i440fx-7.2,accel=tcg,pit=off,vmport=off,"
                                                           "smp-cache.0.cache=l3,smp-cache.0.topology=core"});
  EXPECT_EQ(q.machine_type, "pc");
  EXPECT_FALSE(q.devices.has(PlatformDevice::Pit));
  EXPECT_EQ(q.machine.machine, "smp-cache.0.cache=l3,smp-cache.0.topology=core");
  EXPECT_NE(refusal({"-kernel", "k", "-machine", "pit=maybe"}).find("pit=maybe"), std::string::npos);
  EXPECT_NE(refusal({"-kernel", "k", "-machine", "frob=1"}).find("property 'frob'"), std::string::npos);
  EXPECT_NE(refusal({"-kernel", "k", "-machine", "microvm"}).find("does not emulate microvm"), std::string::npos);
  EXPECT_NE(refusal({"-kernel", "k", "-machine", "sparc"}).find("unsupported machine type"), std::string::npos);
}

// hmat= goes to the MachineSpec, which lets -numa hmat-lb/hmat-cache in.
TEST(QemuCommand, MachineHmatReachesTheNumaNodes) {
  const QemuCommand q = parse({"-kernel", "k", "-machine", "pc,hmat=on,smp-cache.0.cache=l3,smp-cache.0.topology=core"});
  EXPECT_EQ(q.machine.machine, "hmat=on,smp-cache.0.cache=l3,smp-cache.0.topology=core");
  EXPECT_TRUE(parse_machine(q.machine.machine).hmat);
}

TEST(QemuCommand, DevicesTopolabDoesNotEmulateAreRefusedByName) {
  EXPECT_NE(refusal({"-kernel", "k", "-device", "intel-iommu"}).find("topolab does not emulate intel-iommu"),
            std::string::npos);
  EXPECT_NE(refusal({"-kernel", "k", "-device", "edu"}).find("does not emulate edu"), std::string::npos);
  EXPECT_NE(refusal({"-kernel", "k", "-device", "hyperv-testdev"}).find("does not emulate"), std::string::npos);
  EXPECT_NE(refusal({"-kernel", "k", "-device", "virtio-net-pci"}).find("does not emulate"), std::string::npos);
  EXPECT_NE(refusal({"-kernel", "k", "-device", "nosuch"}).find("'nosuch' is not a valid device model name"),
            std::string::npos);
  EXPECT_NE(refusal({"-kernel", "k", "-device", "isa-debug-exit,iobase=0x501"}).find("iobase=0xf4 only"),
            std::string::npos);
  EXPECT_NE(refusal({"-kernel", "k", "-device", "isa-debug-exit,color=red"}).find("'color'"), std::string::npos);
}

TEST(QemuCommand, UnknownAndRefusedOptionsNameThemselves) {
  EXPECT_EQ(refusal({"-kernel", "k", "-frobnicate"}), "-frobnicate: invalid option");
  EXPECT_EQ(refusal({"-kernel"}), "-kernel: requires an argument");
  EXPECT_NE(refusal({"-kernel", "k", "-vnc", ":1"}).find("no display"), std::string::npos);
  EXPECT_NE(refusal({"-kernel", "k", "-drive", "file=disk.img"}).find("-drive file=disk.img: topolab has no disks"),
            std::string::npos);
  EXPECT_NE(refusal({"-kernel", "k", "-net", "user"}).find("no network"), std::string::npos);
  EXPECT_EQ(refusal({"-kernel", "k", "-net", "none", "-no-hpet", "-name", "guest"}), "");
  EXPECT_NE(refusal({"disk.img"}).find("no disks"), std::string::npos);
  EXPECT_NE(refusal({"-smp", "2"}).find("-kernel"), std::string::npos);
  EXPECT_NE(refusal({"-kernel", "k", "--nographic=1"}).find("takes no argument"), std::string::npos);
}

// QEMU's debugger options (docs/debugging.md): -s is -gdb tcp::1234, -S
// waits for the client, and the stub listens on TCP only.
TEST(QemuCommand, GdbOptionsAsQemus) {
  EXPECT_EQ(parse({"-kernel", "k"}).gdb, "");
  const QemuCommand s = parse({"-kernel", "k", "-s", "-S"});
  EXPECT_EQ(s.gdb, "tcp::1234");
  EXPECT_TRUE(s.gdb_wait);
  EXPECT_FALSE(parse({"-kernel", "k", "-s"}).gdb_wait);
  EXPECT_EQ(parse({"-kernel", "k", "-gdb", "tcp:127.0.0.1:4321"}).gdb, "tcp:127.0.0.1:4321");
  EXPECT_EQ(refusal({"-kernel", "k", "-gdb", "stdio"}),
            "-gdb stdio: topolab's gdb stub listens on TCP only: tcp::PORT or tcp:HOST:PORT");
  EXPECT_EQ(parse({"-kernel", "k", "-monitor", "stdio"}).monitor, "stdio");
  EXPECT_EQ(parse({"-kernel", "k", "-monitor", "none"}).monitor, "");
  EXPECT_EQ(refusal({"-kernel", "k", "-monitor", "telnet::4444"}),
            "-monitor telnet::4444: topolab's monitor is on stdio only (-monitor stdio or none)");
}

// A refusal quotes the argument; a line break or another control character
// in it is escaped, so the message stays one line (fuzz/qemu_command_fuzzer.cc).
TEST(QemuCommand, RefusalsStayOneLineWhateverTheArgumentsHold) {
  EXPECT_EQ(refusal({"-vnc", "a\nb\r"}), "-vnc a\\nb\\r: topolab has no display (only -vnc none)");
  EXPECT_EQ(refusal({"-device", "x\x01\ty"}), "-device x\\x01\\ty: 'x\\x01\\ty' is not a valid device model name");
  EXPECT_EQ(refusal({"-kernel", "k", "-m", "1\nG"}), "-m 1\\nG: not a size");
  try {
    parse_qemu_ram_size("\r");
    ADD_FAILURE() << "-m \\r was accepted";
  } catch (const ConfigError& e) {
    EXPECT_EQ(std::string(e.what()), "-m \\r: unknown size suffix '\\r' (K, M, G or T)");
  }
}

TEST(QemuCommand, GlobalsForTopolabsDevicesAreRefused) {
  EXPECT_EQ(refusal({"-kernel", "k", "-global", "kvm-pit.lost_tick_policy=discard"}), "");
  EXPECT_NE(refusal({"-kernel", "k", "-global", "pc-testdev.x=1"}), "");
  EXPECT_NE(refusal({"-kernel", "k", "-global", "nodot"}).find("DRIVER.PROPERTY=VALUE"), std::string::npos);
}

TEST(QemuCommand, RamSizesTakeQemusSuffixes) {
  EXPECT_EQ(parse_qemu_ram_size("256"), 256u);
  EXPECT_EQ(parse_qemu_ram_size("4g"), 4096u);
  EXPECT_EQ(parse_qemu_ram_size("4G"), 4096u);
  EXPECT_EQ(parse_qemu_ram_size("512M"), 512u);
  EXPECT_EQ(parse_qemu_ram_size("2048k"), 2u);
  EXPECT_EQ(parse_qemu_ram_size("size=1g"), 1024u);
  EXPECT_THROW(parse_qemu_ram_size("1000k"), ConfigError);  // not a whole MiB
  EXPECT_THROW(parse_qemu_ram_size("4x"), ConfigError);
  EXPECT_THROW(parse_qemu_ram_size("0"), ConfigError);
  EXPECT_THROW(parse_qemu_ram_size("1g,slots=2,maxmem=4g"), ConfigError);
  EXPECT_THROW(parse_qemu_ram_size("99999999999999T"), ConfigError);
}

TEST(QemuCommand, InitrdModulesSplitAtCommasAsQemus) {
  EXPECT_EQ(parse({"-kernel", "k", "-initrd", "a.bin arg1,b.bin"}).initrd,
            (std::vector<std::string>{"a.bin arg1", "b.bin"}));
  EXPECT_EQ(parse({"-kernel", "k", "-initrd", "a,,b"}).initrd, std::vector<std::string>{"a,b"});
}

// to_qemu_args prints a command back to arguments that parse to it again:
// every field, commas inside values escaped, the defaults -nodefaults and
// -nographic chose made explicit.
TEST(QemuCommand, PrintsBackToArgumentsThatParseToTheSameCommand) {
  const std::vector<std::vector<std::string>> commands = {
      {"-nodefaults", "-device", "pc-testdev", "-device", "isa-debug-exit,iobase=0xf4,iosize=0x4", "-vnc", "none",
       "-device", "pci-testdev", "-machine", "accel=tcg", "-kernel", "x86/apic.flat", "-smp", "2", "-cpu",
       "qemu64,+x2apic", "-machine", "pit=off", "-initrd", "a,,b c,d", "-append", "x=1 y"},
      {"-kernel", "k", "-M", "q35,smp-cache.0.cache=l3,smp-cache.0.topology=socket", "-m", "2G", "-object",
       "memory-backend-ram,id=a,size=1G", "-object", "memory-backend-ram,id=b,size=1G", "-numa", "node,memdev=a",
       "-numa", "node,memdev=b", "-numa", "dist,src=0,dst=1,val=21", "-machine", "hmat=on"},
      {"-kernel", "k", "-nographic", "-no-reboot", "-s", "-S", "-monitor", "stdio", "-serial", "file:out.txt"},
      {"-kernel", "k", "-machine", "pc,smp-cache.0.cache=l3,,x"},
      {"-cpu", "help", "-smp", "4"},
      {"-version"},
      {"-device", "help"},
      {"-machine", "help"},
      {"-accel", "help"},
  };
  for (const std::vector<std::string>& args : commands) {
    const QemuCommand q = parse(args);
    const std::vector<std::string> printed = to_qemu_args(q);
    std::string shown;
    for (const std::string& a : printed) shown += " '" + a + "'";
    EXPECT_EQ(parse(printed), q) << "printed as" << shown;
  }
  EXPECT_EQ(to_qemu_args(parse({"-kernel", "k"})),
            (std::vector<std::string>{"-kernel", "k", "-smp", "1", "-cpu", "qemu64", "-machine", "pc", "-serial",
                                      "none"}));
}

TEST(QemuCommand, TopolabOptsSplitAtBlanksWithTheTestName) {
  EXPECT_EQ(split_topolab_opts("  --report json --report-file out/%t.json\t--quantum 1000\n", "apic"),
            (std::vector<std::string>{"--report", "json", "--report-file", "out/apic.json", "--quantum", "1000"}));
  EXPECT_TRUE(split_topolab_opts("   ", "x").empty());
}

}  // namespace
}  // namespace topolab
