// SPDX-License-Identifier: GPL-2.0-or-later
#include "emu/machine_snapshot.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>
#include <optional>
#include <sstream>

#include <fmt/format.h>
#include <xxhash.h>
#include <zstd.h>

#include "base/errors.h"
#include "base/state_archive.h"
#include "emu/machine.h"
#include "emu/unicorn_vcpu.h"

namespace topolab {
namespace {

constexpr uint64_t kPage = 4096;
// The file's first 16 bytes.
constexpr std::string_view kMagic = "topolab snapshot";
static_assert(kMagic.size() == 16);
// Bumped whenever the file's layout or any class's serialize changes. A
// state that still parses but ends early or late is refused too
// (restore_snapshot), which catches a bump forgotten.
constexpr uint32_t kFormatVersion = 1;
// Magic, version, reserved, body length before and after compression, checksum.
constexpr size_t kHeaderBytes = 16 + 4 + 4 + 8 + 8 + 8;
// The largest body a snapshot may unpack to: a 64 GiB guest's RAM and its
// state; a header that says more is damaged, not a reason to allocate it.
constexpr uint64_t kMaxBodyBytes = uint64_t{80} << 30;
// zstd's level: 3 (its default) packs a Linux guest's RAM about 4:1 at
// several hundred MB/s; higher levels cost seconds for a few percent.
constexpr int kZstdLevel = 3;

std::string hex64(uint64_t value) { return fmt::format("{:016x}", value); }

std::string cpuid_digest(const Machine& machine) {
  XXH3_state_t* state = XXH3_createState();
  XXH3_64bits_reset(state);
  for (unsigned i = 0; i < machine.vcpu_count(); ++i)
    for (const CpuidModel::Entry& e : machine.cpuid().enumerate(i)) {
      const std::array<uint32_t, 6> words = {e.leaf, e.subleaf, e.regs.eax, e.regs.ebx, e.regs.ecx, e.regs.edx};
      XXH3_64bits_update(state, words.data(), sizeof words);
    }
  const uint64_t digest = XXH3_64bits_digest(state);
  XXH3_freeState(state);
  return hex64(digest);
}

std::string devices_of(const MachineConfig& config) {
  std::string names;
  for (const PlatformDeviceInfo& info : kPlatformDevices)
    if (config.devices.has(info.device)) names += fmt::format("{}{}", names.empty() ? "" : ",", info.qemu_name);
  return names;
}

bool all_zero(const uint8_t* page) {
  static const std::array<uint8_t, kPage> zero{};
  return std::memcmp(page, zero.data(), kPage) == 0;
}

template <class T>
std::string to_bytes(T& object) {
  std::ostringstream out(std::ios::binary);
  {
    StateWriter writer(out);
    writer(object);
  }
  return std::move(out).str();
}

// The body: everything after the header, before compression.
struct Body {
  MachineSnapshot& s;
  template <class Archive>
  void serialize(Archive& ar) {
    ar(s.fingerprint, s.at_ns, s.instructions, s.output, s.state, s.pages);
  }
};

void put_le(std::string& out, uint64_t value, unsigned bytes) {
  for (unsigned i = 0; i < bytes; ++i) out.push_back(static_cast<char>(value >> (8 * i)));
}
uint64_t get_le(std::string_view in, size_t at, unsigned bytes) {
  uint64_t value = 0;
  for (unsigned i = 0; i < bytes; ++i) value |= uint64_t{static_cast<uint8_t>(in[at + i])} << (8 * i);
  return value;
}

// zstd's frame, unpacked to exactly `size` bytes; nullopt if it does not.
// In chunks, so that a header that promises more than the frame holds
// costs no more memory than the frame gives.
std::optional<std::string> unpack(std::string_view packed, uint64_t size) {
  constexpr size_t kChunk = size_t{1} << 20;
  std::unique_ptr<ZSTD_DStream, decltype(&ZSTD_freeDStream)> stream(ZSTD_createDStream(), ZSTD_freeDStream);
  std::string out;
  ZSTD_inBuffer in{packed.data(), packed.size(), 0};
  for (;;) {
    const size_t used = out.size();
    out.resize(used + kChunk);
    ZSTD_outBuffer chunk{out.data() + used, kChunk, 0};
    const size_t left = ZSTD_decompressStream(stream.get(), &chunk, &in);
    out.resize(used + chunk.pos);
    if (ZSTD_isError(left) || out.size() > size) return std::nullopt;
    if (left == 0) break;  // the frame is complete
    if (in.pos == in.size && chunk.pos < kChunk) return std::nullopt;  // it ends early
  }
  if (out.size() != size || in.pos != in.size) return std::nullopt;
  return out;
}

}  // namespace

MachineFingerprint machine_fingerprint(const Machine& machine) {
  const MachineConfig& c = machine.config();
  const GuestRam& ram = const_cast<Machine&>(machine).ram();
  return {
      {"build", fmt::format("topolab on Unicorn {}, snapshot format {}", engine_version(), kFormatVersion)},
      {"topology", c.topology.describe()},
      {"-cpu", c.cpu.arg},
      {"-machine", c.machine_options.arg},
      {"-m", fmt::format("{} MiB", c.ram_mib)},
      {"command line", c.append},
      {"time limit", fmt::format("{} s", c.time_limit_seconds)},
      {"quantum", fmt::format("{}", c.quantum)},
      {"cost model", c.cost.to_string()},
      {"spin skipping", c.spin_skip ? "on" : "off"},
      {"clocks", !c.synced_clocks ? "by image" : *c.synced_clocks ? "synced" : "per vCPU"},
      {"devices", devices_of(c)},
      {"CPUID", cpuid_digest(machine)},
      {"memory at start (image, initrd, tables)", hex64(XXH3_64bits(ram.data(), ram.size()))},
  };
}

std::string fingerprint_difference(const MachineFingerprint& snapshot, const MachineFingerprint& now) {
  for (size_t i = 0; i < std::max(snapshot.size(), now.size()); ++i) {
    const std::string name = i < snapshot.size() ? snapshot[i].first : now[i].first;
    const std::string theirs = i < snapshot.size() && snapshot[i].first == name ? snapshot[i].second : "?";
    const std::string ours = i < now.size() && now[i].first == name ? now[i].second : "?";
    if (theirs != ours) return fmt::format("{}: the snapshot's \"{}\", this run's \"{}\"", name, theirs, ours);
  }
  return "";
}

MachineSnapshot take_snapshot(Machine& machine, MachineFingerprint fingerprint, std::string output) {
  MachineSnapshot s{.fingerprint = std::move(fingerprint),
                    .at_ns = machine.virtual_time(),
                    .instructions = machine.instructions(),
                    .output = std::move(output),
                    .state = save_state_bytes(machine),
                    .pages = {}};
  const GuestRam& ram = machine.ram();
  for (uint64_t page = 0; page < ram.size() / kPage; ++page) {
    const uint8_t* bytes = ram.data() + page * kPage;
    if (!all_zero(bytes)) s.pages.emplace_back(page, std::string(reinterpret_cast<const char*>(bytes), kPage));
  }
  return s;
}

void restore_snapshot(Machine& machine, const MachineSnapshot& snapshot) {
  GuestRam& ram = machine.ram();
  for (const auto& [page, bytes] : snapshot.pages)
    if (bytes.size() != kPage || page >= ram.size() / kPage)
      throw InputError(fmt::format("the snapshot holds a page at {:#x} that this machine's RAM does not", page * kPage));
  std::istringstream in(snapshot.state, std::ios::binary);
  try {
    StateReader reader(in);
    machine.serialize(reader);
  } catch (const std::exception& e) {
    throw InputError(fmt::format("the snapshot's machine state does not fit this build ({})", one_line(e.what())));
  }
  if (in.peek() != std::char_traits<char>::eof())
    throw InputError("the snapshot's machine state does not fit this build (bytes left over)");
  ram.discard();
  for (const auto& [page, bytes] : snapshot.pages) std::memcpy(ram.data() + page * kPage, bytes.data(), kPage);
}

std::string encode_snapshot(const MachineSnapshot& snapshot) {
  MachineSnapshot& s = const_cast<MachineSnapshot&>(snapshot);  // Body's archive is two-way; saving reads only
  Body body{s};
  const std::string raw = to_bytes(body);
  std::string packed(ZSTD_compressBound(raw.size()), '\0');
  const size_t n = ZSTD_compress(packed.data(), packed.size(), raw.data(), raw.size(), kZstdLevel);
  if (ZSTD_isError(n)) throw InputError(fmt::format("cannot compress the snapshot: {}", ZSTD_getErrorName(n)));
  packed.resize(n);

  std::string file(kMagic);
  put_le(file, kFormatVersion, 4);
  put_le(file, 0, 4);
  put_le(file, raw.size(), 8);
  put_le(file, packed.size(), 8);
  put_le(file, XXH3_64bits(packed.data(), packed.size()), 8);
  return file + packed;
}

MachineSnapshot decode_snapshot(std::string_view file, std::string_view name) {
  if (file.size() < kHeaderBytes || file.substr(0, kMagic.size()) != kMagic)
    throw InputError(fmt::format("{} is not a topolab snapshot", name));
  const uint64_t version = get_le(file, 16, 4);
  if (version != kFormatVersion)
    throw InputError(fmt::format("{} is a snapshot of format {}; this build reads format {}", name, version,
                                 kFormatVersion));
  const uint64_t raw_size = get_le(file, 24, 8), packed_size = get_le(file, 32, 8), checksum = get_le(file, 40, 8);
  const std::string_view packed = file.substr(kHeaderBytes);
  if (packed.size() != packed_size || XXH3_64bits(packed.data(), packed.size()) != checksum)
    throw InputError(fmt::format("{} is damaged: its checksum does not match", name));
  if (ZSTD_getFrameContentSize(packed.data(), packed.size()) != raw_size || raw_size > kMaxBodyBytes)
    throw InputError(fmt::format("{} is damaged: its body's length does not match", name));
  const std::optional<std::string> raw = unpack(packed, raw_size);
  if (!raw) throw InputError(fmt::format("{} is damaged: its body does not unpack", name));

  MachineSnapshot s;
  Body body{s};
  std::istringstream in(*raw, std::ios::binary);
  try {
    StateReader reader(in);
    reader(body);
  } catch (const std::exception& e) {
    throw InputError(fmt::format("{} is damaged: {}", name, one_line(e.what())));
  }
  if (in.peek() != std::char_traits<char>::eof()) throw InputError(fmt::format("{} is damaged: bytes left over", name));
  return s;
}

void write_snapshot_file(const std::string& path, const MachineSnapshot& snapshot) {
  const std::string file = encode_snapshot(snapshot);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(file.data(), static_cast<std::streamsize>(file.size()));
  out.close();
  if (!out) throw InputError(fmt::format("cannot write the snapshot to {}", path));
}

MachineSnapshot read_snapshot_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(fmt::format("cannot read the snapshot {}", path));
  const std::string file((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return decode_snapshot(file, path);
}

}  // namespace topolab
