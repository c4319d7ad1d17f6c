// SPDX-License-Identifier: GPL-2.0-or-later
// The files topolab's commands write (--output, --report-file, --svg,
// --html, an experiment's results): one way to write them, and one message
// when that fails. Bad paths throw ConfigError.
#pragma once

#include <cstdio>
#include <filesystem>
#include <string>
#include <string_view>

namespace topolab::cli {

// Writes `text` to `path`, replacing it. On failure throws ConfigError with
// `failure`, or "cannot write PATH" when that is empty.
void write_text_file(const std::filesystem::path& path, std::string_view text, const std::string& failure = "");

// Creates `dir` and its parents; `option` names it in the error.
void make_output_dir(const std::string& dir, std::string_view option);

// Where --html goes: opened before the work starts, so that a path that
// cannot be written fails at once rather than after a long run.
class HtmlFile {
 public:
  explicit HtmlFile(const std::string& path);
  // A page never written (the work failed first) leaves no empty file behind.
  ~HtmlFile();
  HtmlFile(const HtmlFile&) = delete;
  HtmlFile& operator=(const HtmlFile&) = delete;
  bool wanted() const { return file_ != nullptr; }
  void write(const std::string& page);

 private:
  std::string path_;
  std::FILE* file_ = nullptr;
};

}  // namespace topolab::cli
