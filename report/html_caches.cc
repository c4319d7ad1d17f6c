// SPDX-License-Identifier: GPL-2.0-or-later
// The cache section of the HTML page: one column per CPU, one row per
// topology level and per cache, each instance a box over the CPUs that
// share it (as Linux decodes leaf 4 / 0x8000001D, report/cpuid_report.h),
// then the reason for each cache's sharing in plain words, down to the
// CPUID field and the APIC-ID bits.
#include <algorithm>
#include <map>

#include "base/text_buffer.h"
#include "report/cpuid_report.h"
#include "report/html_page.h"

namespace topolab {

namespace {

constexpr unsigned kMapCpuLimit = 128;  // columns drawn; the words cover every CPU
constexpr unsigned kLabelWidth = 120, kRowHeight = 26, kRowGap = 4;
constexpr size_t kInstancesListed = 8;
const char* const kFills[] = {"#cfe8ff", "#ffe2c6", "#d9f5d0", "#f3d4f5", "#fff5b8", "#d4f0f0", "#f5d0d0", "#e0e0ff"};

struct MapRow {
  std::string label;
  std::string name;  // what one instance is called: "L2", "core"
  std::vector<std::vector<unsigned>> groups;
};

std::string cache_name(const DecodedCache& c) { return fmt::format("L{}{}", c.level, c.kind); }

std::string human_bytes(uint64_t bytes) {
  if (bytes >= (1u << 20) && bytes % (1u << 20) == 0) return fmt::format("{} MiB", bytes >> 20);
  return fmt::format("{} KiB", bytes >> 10);
}

// CPUs grouped by their coordinates down to `depth` (1 package .. 4 core).
std::vector<std::vector<unsigned>> level_groups(const Topology& t, int depth) {
  std::map<std::vector<unsigned>, std::vector<unsigned>> groups;
  for (unsigned cpu = 0; cpu < t.cpus(); ++cpu) {
    const CpuCoords c = t.coords_of(cpu);
    std::vector<unsigned> key = {c.package, c.die, c.module, c.core};
    key.resize(depth);
    groups[key].push_back(cpu);
  }
  std::vector<std::vector<unsigned>> out;
  for (auto& [key, cpus] : groups) out.push_back(std::move(cpus));
  return out;
}

std::vector<MapRow> map_rows(const CpuidModel& m, const std::vector<DecodedCache>& caches) {
  const Topology& t = m.topology();
  std::vector<MapRow> rows;
  rows.push_back({"package", "package", level_groups(t, 1)});
  if (t.counts().dies > 1) rows.push_back({"die", "die", level_groups(t, 2)});
  if (t.counts().modules > 1) rows.push_back({"module", "module", level_groups(t, 3)});
  rows.push_back({"core", "core", level_groups(t, 4)});
  std::vector<const DecodedCache*> order;
  for (const auto& c : caches) order.push_back(&c);
  std::stable_sort(order.begin(), order.end(), [](auto* a, auto* b) { return a->level > b->level; });
  for (const DecodedCache* c : order)
    rows.push_back({fmt::format("{} {}", cache_name(*c), human_bytes(c->size)), cache_name(*c), c->groups});
  rows.push_back({"scheduler LLC", "LLC group", linux_llc(m, caches).groups});
  return rows;
}

// Boxes over the runs of consecutive CPUs of each instance (an instance of
// CPUs that are not neighbours is drawn in pieces, with one name).
void append_row(fmt::memory_buffer& out, const MapRow& row, unsigned y, double col, unsigned shown) {
  appendf(out, "<text x=\"4\" y=\"{}\" font-size=\"12\">{}</text>\n", y + 17, html_escape(row.label));
  for (size_t g = 0; g < row.groups.size(); ++g) {
    const auto& cpus = row.groups[g];
    std::string list;
    for (unsigned cpu : cpus) list += fmt::format("{}{}", list.empty() ? "" : " ", cpu);
    for (size_t i = 0; i < cpus.size() && cpus[i] < shown;) {
      size_t j = i;
      while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1 && cpus[j + 1] < shown) ++j;
      const double x = kLabelWidth + cpus[i] * col, w = (cpus[j] - cpus[i] + 1) * col;
      appendf(out,
              "<rect class=\"cache-group\" data-cpus=\"{}\" x=\"{:.1f}\" y=\"{}\" width=\"{:.1f}\" height=\"{}\" "
              "fill=\"{}\" stroke=\"#667\" rx=\"3\"><title>{} #{}: CPUs {}</title></rect>\n",
              list, x + 1, y, w - 2, kRowHeight, kFills[g % std::size(kFills)], html_escape(row.name), g,
              format_cpu_list(cpus));
      if (w >= 34)
        appendf(out, "<text x=\"{:.1f}\" y=\"{}\" font-size=\"11\" text-anchor=\"middle\" pointer-events=\"none\">{} #{}</text>\n",
                x + w / 2, y + 17, html_escape(w >= 64 ? row.name : ""), g);
      i = j + 1;
    }
  }
}

void append_cache_map(fmt::memory_buffer& out, const CpuidModel& m, const std::vector<DecodedCache>& caches,
                      std::string_view prefix) {
  const Topology& t = m.topology();
  const unsigned shown = std::min(t.cpus(), kMapCpuLimit);
  const double col = std::clamp(960.0 / shown, 16.0, 56.0);
  const std::vector<MapRow> rows = map_rows(m, caches);
  const unsigned cpu_y = static_cast<unsigned>(rows.size()) * (kRowHeight + kRowGap) + 8;
  const unsigned width = kLabelWidth + static_cast<unsigned>(shown * col) + 10, height = cpu_y + 44;
  appendf(out, "<div class=\"scroll\"><svg id=\"{}cache-map\" class=\"cache-map\" xmlns=\"http://www.w3.org/2000/svg\" "
               "width=\"{}\" height=\"{}\" font-family=\"sans-serif\">\n",
          prefix, width, height);
  for (size_t r = 0; r < rows.size(); ++r)
    append_row(out, rows[r], static_cast<unsigned>(r) * (kRowHeight + kRowGap) + 4, col, shown);
  appendf(out, "<text x=\"4\" y=\"{}\" font-size=\"12\">CPU</text><text x=\"4\" y=\"{}\" font-size=\"12\">APIC ID</text>\n",
          cpu_y + 15, cpu_y + 33);
  for (unsigned cpu = 0; cpu < shown; ++cpu) {
    const double x = kLabelWidth + cpu * col;
    const std::string type = cpu_core_type(m, cpu);
    appendf(out,
            "<rect class=\"cpu\" data-cpu=\"{0}\" x=\"{1:.1f}\" y=\"{2}\" width=\"{3:.1f}\" height=\"38\" fill=\"#eefbe9\" "
            "stroke=\"#6a6\"><title>CPU {0}, APIC ID {4:#x}{5}</title></rect>"
            "<text x=\"{6:.1f}\" y=\"{7}\" font-size=\"11\" text-anchor=\"middle\" pointer-events=\"none\">{0}</text>"
            "<text x=\"{6:.1f}\" y=\"{8}\" font-size=\"10\" text-anchor=\"middle\" pointer-events=\"none\">{4:x}</text>\n",
            cpu, x + 1, cpu_y, col - 2, t.apic_id(cpu), type.empty() ? "" : ", " + html_escape(type), x + col / 2,
            cpu_y + 15, cpu_y + 33);
  }
  appendf(out, "</svg></div>\n");
  if (shown < t.cpus())
    appendf(out, "<p class=\"note\">The drawing shows the first {} of {} CPUs; the words below cover all.</p>\n", shown,
            t.cpus());
}

// The level whose APIC-ID field starts at bit `shift`: the cache is shared
// by everything below it ("one per core").
std::string scope_words(const Topology& t, unsigned shift, const std::string& name) {
  if (shift == 0) return fmt::format("each CPU has its own {}", name);
  if (shift > t.package_offset())
    return "it is wider than a package: CPUs of different packages share it, which no real machine does";
  const std::pair<unsigned, const char*> levels[] = {
      {t.package_offset(), "package"}, {t.die_offset(), "die"}, {t.module_offset(), "module"}, {t.core_offset(), "core"}};
  for (const auto& [offset, level] : levels)
    if (offset == shift) return fmt::format("there is one {} per {}, shared by all its CPUs", name, level);
  return fmt::format("the shift does not line up with a topology level (the thread field is bits below {}, the core "
                     "field below {}): the cache is shared by part of a level",
                     t.core_offset(), t.module_offset());
}

std::string apic_words(const Topology& t, unsigned cpu, unsigned width) {
  return fmt::format("CPU {} (APIC ID {:#x} = <code>0b{:0{}b}</code>)", cpu, t.apic_id(cpu), t.apic_id(cpu), width);
}

std::string instance_list(const DecodedCache& c) {
  std::string out;
  for (size_t g = 0; g < c.groups.size() && g < kInstancesListed; ++g)
    out += fmt::format("{}CPUs {}", g ? " | " : "", format_cpu_list(c.groups[g]));
  if (c.groups.size() > kInstancesListed) out += fmt::format(" | … and {} more", c.groups.size() - kInstancesListed);
  return out;
}

// Why these CPUs share this cache, from leaf 4 (or 0x8000001D) subleaf `sub`.
std::string explain_cache(const CpuidModel& m, const DecodedCache& c, uint32_t leaf, uint32_t sub) {
  const Topology& t = m.topology();
  const unsigned field = c.sharing_ids - 1, shift = bit_width_for_count(c.sharing_ids);
  const unsigned width = apic_id_width(t);
  const std::string name = cache_name(c);
  std::string s = fmt::format(
      "<b>{}</b> ({}, {}{}): CPUID leaf {:#x}, subleaf {}: <code>EAX[25:14] = {}</code> → up to {} logical "
      "processor{} share this cache. ",
      name, c.kind == "d" ? "data" : c.kind == "i" ? "instruction" : "unified", human_bytes(c.size),
      c.ways ? fmt::format(", {}-way", c.ways) : "", leaf, sub, field, c.sharing_ids, c.sharing_ids == 1 ? "" : "s");
  if (shift == 0) return s + fmt::format("So {}. {} instances.", scope_words(t, 0, name), c.groups.size());
  const std::string power = (1u << shift) == c.sharing_ids
                                ? fmt::format("That is 2<sup>{}</sup>, so Linux", shift)
                                : fmt::format("Linux rounds {} up to a power of two ({}) and", c.sharing_ids, 1u << shift);
  s += fmt::format("{} drops the low {} bit{} of each APIC ID (<code>apicid &gt;&gt; {}</code>): CPUs whose APIC IDs "
                   "agree in all other bits share one {}. So {}. ",
                   power, shift, shift == 1 ? "" : "s", shift, name, scope_words(t, shift, name));
  const auto pair = std::find_if(c.groups.begin(), c.groups.end(), [](const auto& g) { return g.size() > 1; });
  if (pair != c.groups.end()) {
    const unsigned a = (*pair)[0], b = (*pair)[1], diff = t.apic_id(a) ^ t.apic_id(b);
    std::string bits;
    for (unsigned bit = 0; bit < 32; ++bit)
      if (diff >> bit & 1) bits += fmt::format("{}{}", bits.empty() ? "" : ", ", bit);
    s += fmt::format("For example {} and {} differ only in bit{} {}, below bit {}: both are in {} #{}. ",
                     apic_words(t, a, width), apic_words(t, b, width), bits.find(',') == std::string::npos ? "" : "s",
                     bits, shift, name, pair - c.groups.begin());
    if (pair + 1 != c.groups.end())
      s += fmt::format("{} differs at or above bit {}, so it has another {} (#{}). ",
                       apic_words(t, (*(pair + 1))[0], width), shift, name, pair + 1 - c.groups.begin());
  }
  return s + fmt::format("{} instance{}: {}.", c.groups.size(), c.groups.size() == 1 ? "" : "s", instance_list(c));
}

void append_reasons(fmt::memory_buffer& out, const CpuidModel& m, const std::vector<DecodedCache>& caches,
                    std::string_view prefix) {
  const bool amd = m.cpu().vendor() == Vendor::Amd;
  appendf(out, "<h3>Why these CPUs share a cache</h3>\n<ul class=\"why\" id=\"{}cache-why\">\n", prefix);
  if (caches.empty()) appendf(out, "<li>No cache is described: the cache leaf is beyond the maximum CPUID leaf.</li>\n");
  if (amd && !m.has_topoext() && !caches.empty()) {
    appendf(out, "<li>This AMD model has no TOPOEXT (CPUID 0x80000001:ECX[22] = 0), so there is no leaf 0x8000001D to "
                 "say which CPUs share a cache: leaves 0x80000005 and 0x80000006 give only sizes. Linux then takes L1 "
                 "and L2 as private to each core and the L3 as shared by the whole package.</li>\n");
    for (const auto& c : caches)
      appendf(out, "<li class=\"cache-why\"><b>{}</b> {}: {}.</li>\n", cache_name(c), human_bytes(c.size), instance_list(c));
  } else {
    const uint32_t leaf = amd ? 0x8000001D : 0x4;
    for (size_t i = 0; i < caches.size(); ++i)
      appendf(out, "<li class=\"cache-why\">{}</li>\n", explain_cache(m, caches[i], leaf, static_cast<uint32_t>(i)));
  }
  const LlcView llc = linux_llc(m, caches);
  size_t widest = 0;
  for (const auto& g : llc.groups) widest = std::max(widest, g.size());
  appendf(out, "<li><b>Scheduler LLC</b>: Linux's scheduler takes as sharing a last-level cache (cpus_share_cache) {}; "
               "{} group{} of up to {} CPU{}. {}</li>\n",
          html_escape(llc.rule), llc.groups.size(), llc.groups.size() == 1 ? "" : "s", widest, widest == 1 ? "" : "s",
          widest > 1 ? "CPUs in one group wake each other's tasks by writing the runqueue directly, without a "
                       "reschedule IPI, and wakeups spread to idle CPUs of the group."
                     : "Every cross-CPU wakeup goes through the wake list and a reschedule IPI.");
  appendf(out, "</ul>\n");
}

// Whether some CPU reads other cache leaves than CPU 0 (a hybrid part's
// core types each have their own caches): the drawing decodes CPU 0's.
bool cache_leaves_differ(const CpuidModel& m) {
  const bool amd = m.cpu().vendor() == Vendor::Amd;
  const uint32_t leaf = amd ? 0x8000001D : 0x4;
  if (amd ? !m.has_topoext() || m.max_extended_leaf() < leaf : m.max_basic_leaf() < leaf) return false;
  for (unsigned cpu = 1; cpu < m.topology().cpus(); ++cpu)
    for (uint32_t sub = 0; sub < 8; ++sub)
      if (!(m.query(cpu, leaf, sub) == m.query(0, leaf, sub))) return true;
  return false;
}

}  // namespace

HtmlSection html_caches_section(const CpuidModel& model, std::string_view prefix) {
  const std::vector<DecodedCache> caches = decode_caches_as_linux(model);
  fmt::memory_buffer out;
  appendf(out, "<p class=\"note\">One column per CPU. Each box is one instance of a level or a cache, over the CPUs "
               "that share it, as Linux decodes CPUID; point at a box to outline its CPUs, or at a CPU to outline "
               "everything it shares.</p>\n");
  if (cache_leaves_differ(model))
    appendf(out, "<p class=\"note\" id=\"{}cache-per-cpu\">Not every CPU reads the same cache leaves (each core type "
                 "of a hybrid part has its own caches): what follows decodes CPU 0's; the raw leaves show every "
                 "CPU's.</p>\n",
            prefix);
  append_cache_map(out, model, caches, prefix);
  append_reasons(out, model, caches, prefix);
  return {fmt::format("{}caches", prefix), "Who shares each cache", fmt::to_string(out)};
}

}  // namespace topolab
