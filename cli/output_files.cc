// SPDX-License-Identifier: GPL-2.0-or-later
#include "cli/output_files.h"

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "base/errors.h"

namespace topolab::cli {

namespace {

// Writes all of `text` and closes `f`; false if either failed.
bool write_and_close(std::FILE* f, std::string_view text) {
  const bool written = std::fwrite(text.data(), 1, text.size(), f) == text.size();
  return (std::fclose(f) == 0) && written;
}

}  // namespace

void write_text_file(const std::filesystem::path& path, std::string_view text, const std::string& failure) {
  std::FILE* f = std::fopen(path.c_str(), "w");
  if (!f || !write_and_close(f, text))
    throw ConfigError(failure.empty() ? fmt::format("cannot write {}", path.string()) : failure);
}

void make_output_dir(const std::string& dir, std::string_view option) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw ConfigError(fmt::format("{} {}: {}", option, dir, ec.message()));
}

HtmlFile::HtmlFile(const std::string& path) : path_(path) {
  if (path_.empty()) return;
  file_ = std::fopen(path_.c_str(), "w");
  if (!file_) throw ConfigError(fmt::format("--html {}: cannot write it ({})", path_, std::strerror(errno)));
}

HtmlFile::~HtmlFile() {
  if (!file_) return;
  std::fclose(file_);
  std::remove(path_.c_str());
}

void HtmlFile::write(const std::string& page) {
  std::FILE* f = file_;
  file_ = nullptr;
  if (!write_and_close(f, page)) throw ConfigError(fmt::format("--html {}: cannot write it", path_));
}

}  // namespace topolab::cli
