// SPDX-License-Identifier: GPL-2.0-or-later
#include "model/qemu_options.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>

#include <fmt/format.h>

#include "base/errors.h"

namespace topolab {

std::vector<std::string> split_qemu_properties(std::string_view text) {
  std::vector<std::string> out(1);
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == ',' && i + 1 < text.size() && text[i + 1] == ',') {
      out.back() += ',';
      ++i;
    } else if (text[i] == ',') {
      out.emplace_back();
    } else {
      out.back() += text[i];
    }
  }
  return out;
}

std::string escape_qemu_commas(std::string_view item) {
  std::string out;
  for (char c : item) {
    out += c;
    if (c == ',') out += ',';
  }
  return out;
}

QemuProperty split_qemu_property(std::string_view item) {
  const size_t eq = item.find('=');
  if (eq == std::string_view::npos) return {std::string(item), "", false};
  return {std::string(item.substr(0, eq)), std::string(item.substr(eq + 1)), true};
}

std::vector<QemuProperty> parse_qemu_properties(std::string_view text) {
  std::vector<QemuProperty> out;
  for (const std::string& item : split_qemu_properties(text)) out.push_back(split_qemu_property(item));
  return out;
}

std::optional<bool> parse_qemu_bool(std::string_view text) {
  if (text == "on" || text == "yes" || text == "true" || text == "y") return true;
  if (text == "off" || text == "no" || text == "false" || text == "n") return false;
  return std::nullopt;
}

std::optional<uint64_t> parse_qemu_number(std::string_view text) {
  int base = 10;
  if (text.starts_with("0x") || text.starts_with("0X")) {
    base = 16;
    text.remove_prefix(2);
  }
  uint64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value, base);
  if (ec != std::errc{} || end != text.data() + text.size() || text.empty()) return std::nullopt;
  return value;
}

std::optional<uint64_t> parse_qemu_size(std::string_view text, unsigned default_shift) {
  size_t digits = 0;
  while (digits < text.size() && (std::isdigit(static_cast<unsigned char>(text[digits])) || text[digits] == '.'))
    ++digits;
  if (digits == 0) return std::nullopt;
  const std::string number(text.substr(0, digits));
  const std::string_view suffix = text.substr(digits);
  unsigned shift = default_shift;
  if (!suffix.empty()) {
    static constexpr std::string_view kSuffixes = "BKMGTPE";
    const size_t at =
        suffix.size() == 1 ? kSuffixes.find(static_cast<char>(std::toupper(static_cast<unsigned char>(suffix[0]))))
                           : std::string_view::npos;
    if (at == std::string_view::npos) return std::nullopt;
    shift = static_cast<unsigned>(at) * 10;
  }
  if (number.find('.') == std::string::npos) {
    const std::optional<uint64_t> n = parse_qemu_number(number);
    if (!n || shift >= 64 || *n > (~uint64_t{0} >> shift)) return std::nullopt;
    return *n << shift;
  }
  // qemu_strtosz takes a fraction only with a unit larger than a byte, and
  // truncates the product.
  if (shift == 0 || std::count(number.begin(), number.end(), '.') != 1 || number.front() == '.' ||
      number.back() == '.')
    return std::nullopt;
  const double value = std::stod(number) * std::ldexp(1.0, static_cast<int>(shift));
  if (!(value < 18446744073709551616.0)) return std::nullopt;
  return static_cast<uint64_t>(value);
}

namespace {

uint64_t ram_size_of(std::string_view text) {
  std::vector<std::string> items = split_qemu_properties(text);
  std::string size = items.front();
  for (size_t i = 0; i < items.size(); ++i) {
    const QemuProperty p = split_qemu_property(items[i]);
    if (i == 0 && !p.has_value) continue;
    if (p.name == "size") size = p.value;
    else throw ConfigError(fmt::format("-m {}: {}: topolab's RAM has no hotplug slots (only -m [size=]SIZE)", text, p.name));
  }
  if (size.empty()) throw ConfigError(fmt::format("-m {}: missing the size", text));
  uint64_t shift = 20;  // no suffix: MiB
  const char last = static_cast<char>(std::toupper(static_cast<unsigned char>(size.back())));
  if (!std::isdigit(static_cast<unsigned char>(size.back()))) {
    switch (last) {
      case 'B': shift = 0; break;
      case 'K': shift = 10; break;
      case 'M': shift = 20; break;
      case 'G': shift = 30; break;
      case 'T': shift = 40; break;
      default: throw ConfigError(fmt::format("-m {}: unknown size suffix '{}' (K, M, G or T)", text, size.back()));
    }
    size.pop_back();
  }
  const std::optional<uint64_t> n = parse_qemu_number(size);
  if (!n || *n == 0) throw ConfigError(fmt::format("-m {}: not a size", text));
  if (*n > (uint64_t{1} << (60 - shift))) throw ConfigError(fmt::format("-m {}: too large", text));
  const uint64_t bytes = *n << shift;
  if (bytes % (uint64_t{1} << 20)) throw ConfigError(fmt::format("-m {}: topolab's RAM is a whole number of MiB", text));
  return bytes >> 20;
}

}  // namespace

uint64_t parse_qemu_ram_size(std::string_view text) {
  try {
    return ram_size_of(text);
  } catch (const ConfigError& e) {
    throw ConfigError(one_line(e.what()));
  }
}

}  // namespace topolab
