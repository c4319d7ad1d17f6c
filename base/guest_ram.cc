// SPDX-License-Identifier: GPL-2.0-or-later
#include "base/guest_ram.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include <fmt/format.h>

#include "base/errors.h"

namespace topolab {

namespace {

constexpr uint64_t kPage = 4096;

void check_regions(const std::vector<RamRegion>& regions) {
  if (regions.empty() || regions.front().base != 0)
    throw std::invalid_argument("guest RAM needs a region from address 0");
  uint64_t end = 0;
  for (const RamRegion& r : regions) {
    if (r.size == 0 || r.base % kPage || r.size % kPage || r.base + r.size < r.base)
      throw std::invalid_argument(fmt::format("guest RAM region [{:#x}, +{:#x}) is not whole 4 KiB pages", r.base, r.size));
    if (r.base < end)
      throw std::invalid_argument(fmt::format("guest RAM region at {:#x} overlaps or precedes the one before", r.base));
    end = r.end();
  }
}

}  // namespace

GuestRam::GuestRam(uint64_t bytes) : GuestRam(std::vector<RamRegion>{{0, (bytes + kPage - 1) & ~(kPage - 1)}}) {}

GuestRam::GuestRam(std::vector<RamRegion> regions) : regions_(std::move(regions)) {
  if (regions_.size() == 1 && regions_.front().base == 0 && regions_.front().size == 0)
    throw std::invalid_argument("guest RAM size must be positive");
  check_regions(regions_);
  for (const RamRegion& r : regions_) total_bytes_ += r.size;
  // One reservation from 0 to the top: page-aligned, zeroed, and backed only
  // where touched, so a large -m costs nothing until the guest uses it. The
  // gaps between regions stay inaccessible, so that a host access there is
  // a crash, not a silently backed page.
  void* p = mmap(nullptr, top(), PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED)
    throw ConfigError(fmt::format("the host cannot reserve {} MiB of address space for guest RAM ({})", top() >> 20,
                                  std::strerror(errno)));
  data_ = static_cast<uint8_t*>(p);
  for (const RamRegion& r : regions_)
    if (mprotect(data_ + r.base, r.size, PROT_READ | PROT_WRITE) != 0) {
      const int error = errno;
      munmap(data_, top());
      throw ConfigError(fmt::format("the host cannot map {} MiB of guest RAM ({})", r.size >> 20, std::strerror(error)));
    }
}

GuestRam::~GuestRam() { munmap(data_, top()); }

void GuestRam::discard() {
  // A private anonymous mapping reads zeros after MADV_DONTNEED, and the
  // engines that map it keep the same host addresses.
  for (const RamRegion& r : regions_)
    if (madvise(data_ + r.base, r.size, MADV_DONTNEED) != 0) std::memset(data_ + r.base, 0, r.size);
}

bool GuestRam::is_ram(uint64_t addr, uint64_t len) const {
  // The last region that starts at or below addr.
  auto it = std::upper_bound(regions_.begin(), regions_.end(), addr,
                             [](uint64_t a, const RamRegion& r) { return a < r.base; });
  if (it == regions_.begin()) return false;
  --it;
  return addr <= it->end() && len <= it->end() - addr;
}

std::span<uint8_t> GuestRam::bytes(uint64_t addr, uint64_t len) {
  if (!is_ram(addr, len))
    throw std::out_of_range(fmt::format("guest RAM access [{:#x}, +{:#x}) is outside RAM (top {:#x})", addr, len, top()));
  return {data_ + addr, static_cast<size_t>(len)};
}

std::span<const uint8_t> GuestRam::bytes(uint64_t addr, uint64_t len) const {
  return const_cast<GuestRam*>(this)->bytes(addr, len);
}

std::vector<uint64_t> GuestRam::backed_pages() const {
  // pagemap: one 64-bit entry per virtual page; bit 63 present in memory,
  // bit 62 in swap (Documentation/admin-guide/mm/pagemap.rst). Readable by
  // the process itself without privileges (only the frame numbers are hidden).
  constexpr uint64_t kPresent = uint64_t{1} << 63, kSwapped = uint64_t{1} << 62;
  std::vector<uint64_t> pages;
  const int fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
  for (const RamRegion& r : regions_) {
    const uint64_t first = reinterpret_cast<uintptr_t>(data_ + r.base) / kPage;
    const uint64_t count = r.size / kPage;
    std::vector<uint64_t> entries(std::min<uint64_t>(count, 8192));
    for (uint64_t done = 0; done < count;) {
      const uint64_t n = std::min<uint64_t>(entries.size(), count - done);
      const ssize_t got = fd < 0 ? -1 : pread(fd, entries.data(), n * 8, static_cast<off_t>((first + done) * 8));
      if (got != static_cast<ssize_t>(n * 8)) {
        // No pagemap to ask: every page may hold something.
        for (uint64_t i = done; i < count; ++i) pages.push_back(r.base + i * kPage);
        break;
      }
      for (uint64_t i = 0; i < n; ++i)
        if (entries[i] & (kPresent | kSwapped)) pages.push_back(r.base + (done + i) * kPage);
      done += n;
    }
  }
  if (fd >= 0) close(fd);
  return pages;
}

}  // namespace topolab
