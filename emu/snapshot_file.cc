// SPDX-License-Identifier: GPL-2.0-or-later
#include "emu/snapshot_file.h"

#include <algorithm>
#include <fstream>
#include <iterator>
#include <memory>
#include <optional>
#include <stdexcept>

#include <fmt/format.h>
#include <xxhash.h>
#include <zstd.h>

#include "base/errors.h"

namespace topolab {
namespace {

// The file's first 16 bytes.
constexpr std::string_view kMagic = "topolab snapshot";
static_assert(kMagic.size() == 16);
// Magic, version, reserved, body length before and after compression, checksum.
constexpr size_t kHeaderBytes = 16 + 4 + 4 + 8 + 8 + 8;
// The largest body a snapshot may unpack to: a 64 GiB guest's RAM and its
// state; a header that says more is damaged, not a reason to allocate it.
constexpr uint64_t kMaxBodyBytes = uint64_t{80} << 30;
// zstd's level: 3 (its default) packs a Linux guest's RAM about 4:1 at
// several hundred MB/s; higher levels cost seconds for a few percent.
constexpr int kZstdLevel = 3;

// The body, laid out by hand rather than by an archive: every count and
// length is checked against the bytes that are left before anything is
// allocated for it, so a body that claims a billion pages is refused, not
// attempted. Integers are 8 bytes, little-endian; a string is its length
// and its bytes; a list is its count and its items.
class BodyWriter {
 public:
  void number(uint64_t value) { put_le(out_, value, 8); }
  void text(std::string_view value) {
    number(value.size());
    out_ += value;
  }
  std::string take() { return std::move(out_); }

 private:
  static void put_le(std::string& out, uint64_t value, unsigned bytes) {
    for (unsigned i = 0; i < bytes; ++i) out.push_back(static_cast<char>(value >> (8 * i)));
  }
  std::string out_;
};

class BodyReader {
 public:
  explicit BodyReader(std::string_view in) : in_(in) {}
  uint64_t number() {
    need(8);
    uint64_t value = 0;
    for (unsigned i = 0; i < 8; ++i) value |= uint64_t{static_cast<uint8_t>(in_[at_ + i])} << (8 * i);
    at_ += 8;
    return value;
  }
  std::string text() {
    const uint64_t length = number();
    need(length);
    std::string value(in_.substr(at_, length));
    at_ += length;
    return value;
  }
  // A count of items that take at least `smallest` bytes each.
  uint64_t count(uint64_t smallest) {
    const uint64_t n = number();
    if (n > (in_.size() - at_) / smallest) throw std::length_error("a count larger than the bytes left");
    return n;
  }
  bool done() const { return at_ == in_.size(); }

 private:
  void need(uint64_t bytes) const {
    if (bytes > in_.size() - at_) throw std::length_error("the body ends early");
  }
  std::string_view in_;
  size_t at_ = 0;
};

std::string write_body(const MachineSnapshot& s) {
  BodyWriter out;
  out.number(s.fingerprint.size());
  for (const auto& [name, value] : s.fingerprint) {
    out.text(name);
    out.text(value);
  }
  out.number(s.at_ns);
  out.number(s.instructions);
  out.text(s.output);
  out.text(s.state);
  out.number(s.pages.size());
  for (const auto& [page, bytes] : s.pages) {
    out.number(page);
    out.text(bytes);
  }
  return out.take();
}

MachineSnapshot read_body(std::string_view body) {
  BodyReader in(body);
  MachineSnapshot s;
  for (uint64_t n = in.count(16); n > 0; --n) {
    std::string name = in.text();
    s.fingerprint.emplace_back(std::move(name), in.text());
  }
  s.at_ns = in.number();
  s.instructions = in.number();
  s.output = in.text();
  s.state = in.text();
  for (uint64_t n = in.count(16); n > 0; --n) {
    const uint64_t page = in.number();
    s.pages.emplace_back(page, in.text());
  }
  if (!in.done()) throw std::length_error("bytes left over");
  return s;
}

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
// costs no more memory than the frame gives; no chunk reaches more than one
// byte past `size` (the byte that tells a frame that holds more), so a
// small snapshot costs no MiB of zeroed memory.
std::optional<std::string> unpack(std::string_view packed, uint64_t size) {
  constexpr size_t kChunk = size_t{1} << 20;
  std::unique_ptr<ZSTD_DStream, decltype(&ZSTD_freeDStream)> stream(ZSTD_createDStream(), ZSTD_freeDStream);
  std::string out;
  ZSTD_inBuffer in{packed.data(), packed.size(), 0};
  for (;;) {
    const size_t used = out.size();  // at most `size`: more returned below
    const size_t room = static_cast<size_t>(std::min<uint64_t>(kChunk, size - used + 1));
    out.resize(used + room);
    ZSTD_outBuffer chunk{out.data() + used, room, 0};
    const size_t left = ZSTD_decompressStream(stream.get(), &chunk, &in);
    out.resize(used + chunk.pos);
    if (ZSTD_isError(left) || out.size() > size) return std::nullopt;
    if (left == 0) break;  // the frame is complete
    if (in.pos == in.size && chunk.pos < room) return std::nullopt;  // it ends early
  }
  if (out.size() != size || in.pos != in.size) return std::nullopt;
  return out;
}

}  // namespace

std::string encode_snapshot(const MachineSnapshot& snapshot) { return seal_snapshot_body(write_body(snapshot)); }

std::string seal_snapshot_body(std::string_view raw) {
  std::string packed(ZSTD_compressBound(raw.size()), '\0');
  const size_t n = ZSTD_compress(packed.data(), packed.size(), raw.data(), raw.size(), kZstdLevel);
  if (ZSTD_isError(n)) throw InputError(fmt::format("cannot compress the snapshot: {}", ZSTD_getErrorName(n)));
  packed.resize(n);

  std::string file(kMagic);
  put_le(file, kSnapshotFormat, 4);
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
  if (version != kSnapshotFormat)
    throw InputError(fmt::format("{} is a snapshot of format {}; this build reads format {}", name, version,
                                 kSnapshotFormat));
  const uint64_t raw_size = get_le(file, 24, 8), packed_size = get_le(file, 32, 8), checksum = get_le(file, 40, 8);
  const std::string_view packed = file.substr(kHeaderBytes);
  if (packed.size() != packed_size || XXH3_64bits(packed.data(), packed.size()) != checksum)
    throw InputError(fmt::format("{} is damaged: its checksum does not match", name));
  if (ZSTD_getFrameContentSize(packed.data(), packed.size()) != raw_size || raw_size > kMaxBodyBytes)
    throw InputError(fmt::format("{} is damaged: its body's length does not match", name));
  const std::optional<std::string> raw = unpack(packed, raw_size);
  if (!raw) throw InputError(fmt::format("{} is damaged: its body does not unpack", name));

  try {
    return read_body(*raw);
  } catch (const std::exception& e) {
    throw InputError(fmt::format("{} is damaged: {}", name, one_line(e.what())));
  }
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
