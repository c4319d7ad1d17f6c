// SPDX-License-Identifier: GPL-2.0-or-later
#include "report/cpuid_diff.h"

#include <algorithm>
#include <map>
#include <tuple>

#include <fmt/format.h>

#include "base/text_buffer.h"
#include "report/cpuid_fields.h"
#include "report/numa_report.h"
#include "report/cpuid_report.h"

namespace topolab {

namespace {

constexpr size_t kValuePairsShown = 4;  // per register; APIC-ID fields differ per CPU

using LeafKey = std::pair<uint32_t, uint32_t>;
using LeafMap = std::map<LeafKey, CpuidRegs>;

LeafMap leaves_of(const CpuidModel& m, unsigned cpu) {
  LeafMap out;
  for (const auto& e : m.enumerate(cpu)) out[{e.leaf, e.subleaf}] = e.regs;
  return out;
}

// One register's change, with the CPUs it holds on: CPUs whose fields
// change alike are one change, although their APIC-ID fields (which did not
// change) make the register values differ. The values shown are the first CPU's.
struct Change {
  std::string fields;
  uint32_t a, b;
  std::vector<unsigned> cpus;
};

// Every field of `reg` whose value differs between `a` and `b`, named as
// report/cpuid_fields names it (the one table of SDM field names). A
// feature bit set on one side only is decoded on that side and reads 0 on
// the other.
void append_fields(fmt::memory_buffer& out, uint32_t leaf, char reg, uint32_t a, uint32_t b) {
  const std::vector<DecodedField> fa = decode_register(leaf, reg, a), fb = decode_register(leaf, reg, b);
  std::vector<DecodedField> fields = fa;
  for (const DecodedField& f : fb)
    if (std::none_of(fields.begin(), fields.end(), [&](const DecodedField& g) { return g.hi == f.hi && g.lo == f.lo; }))
      fields.push_back(f);
  std::stable_sort(fields.begin(), fields.end(), [](const DecodedField& x, const DecodedField& y) { return x.hi > y.hi; });
  uint32_t named = 0;
  for (const DecodedField& f : fields) {
    const uint32_t width_mask = f.hi - f.lo == 31 ? 0xffffffffu : ((1u << (f.hi - f.lo + 1)) - 1);
    const uint32_t va = (a >> f.lo) & width_mask, vb = (b >> f.lo) & width_mask;
    named |= width_mask << f.lo;
    if (va == vb) continue;
    const std::string bits = f.hi == f.lo ? fmt::format("[{}]", f.lo) : fmt::format("[{}:{}]", f.hi, f.lo);
    // Whole-register fields (vendor words, IDs, set counts) read best in hex.
    if (f.hi - f.lo == 31)
      appendf(out, "      {:<8} {:<82} {:>6} -> {:#x}\n", bits, f.name, fmt::format("{:#x}", va), vb);
    else appendf(out, "      {:<8} {:<82} {:>6} -> {}\n", bits, f.name, va, vb);
  }
  if (uint32_t rest = (a ^ b) & ~named) appendf(out, "      {:<8} {:<82} {:>6}\n", "other", "bits with no field name here (xor)", fmt::format("{:#x}", rest));
}

void append_leaf_diffs(fmt::memory_buffer& out, const DiffSide& a, const DiffSide& b) {
  unsigned common = std::min(a.model->topology().cpus(), b.model->topology().cpus());
  // (leaf, subleaf, register) -> the distinct (A, B) value pairs and their CPUs
  std::map<std::tuple<uint32_t, uint32_t, char>, std::vector<Change>> changes;
  std::map<LeafKey, std::string> only;
  for (unsigned cpu = 0; cpu < common; ++cpu) {
    LeafMap la = leaves_of(*a.model, cpu), lb = leaves_of(*b.model, cpu);
    for (const auto& [key, ra] : la)
      if (!lb.count(key)) only.try_emplace(key, "A");
    for (const auto& [key, rb] : lb) {
      auto it = la.find(key);
      if (it == la.end()) {
        only.try_emplace(key, "B");
        continue;
      }
      for (char reg : {'a', 'b', 'c', 'd'}) {
        uint32_t va = register_value(it->second, reg), vb = register_value(rb, reg);
        if (va == vb) continue;
        fmt::memory_buffer fields;
        append_fields(fields, key.first, reg, va, vb);
        auto& list = changes[{key.first, key.second, reg}];
        std::string text = fmt::to_string(fields);
        auto same = std::find_if(list.begin(), list.end(), [&](const Change& c) { return c.fields == text; });
        if (same == list.end()) list.push_back({std::move(text), va, vb, {cpu}});
        else same->cpus.push_back(cpu);
      }
    }
  }
  if (changes.empty() && only.empty()) appendf(out, "  no leaf differs on CPUs 0-{}\n", common - 1);
  // Runs of leaves on one side only (an extended range that reaches
  // further) are one line.
  for (auto it = only.begin(); it != only.end();) {
    auto last = it;
    for (auto next = std::next(it); next != only.end() && next->second == it->second && next->first.second == 0 &&
                                    it->first.second == 0 && next->first.first == last->first.first + 1;
         ++next)
      last = next;
    if (last == it) appendf(out, "  leaf {:#010x}.{:02x}  only in {}\n", it->first.first, it->first.second, it->second);
    else appendf(out, "  leaves {:#010x}-{:#010x}  only in {}\n", it->first.first, last->first.first, it->second);
    it = std::next(last);
  }
  for (const auto& [key, list] : changes) {
    auto [leaf, sub, reg] = key;
    for (size_t i = 0; i < list.size() && i < kValuePairsShown; ++i) {
      const Change& c = list[i];
      appendf(out, "  leaf {:#010x}.{:02x}  E{}X  {:#010x} -> {:#010x}   CPUs {}\n", leaf, sub, char(reg - 'a' + 'A'), c.a, c.b,
              format_cpu_list(c.cpus));
      out.append(c.fields.data(), c.fields.data() + c.fields.size());
    }
    if (list.size() > kValuePairsShown)
      appendf(out, "  leaf {:#010x}.{:02x}  E{}X  ... and {} more per-CPU changes\n", leaf, sub, char(reg - 'a' + 'A'),
              list.size() - kValuePairsShown);
  }
  if (a.model->topology().cpus() != b.model->topology().cpus())
    appendf(out, "  (CPUs {} and up exist on one side only; their leaves are not compared)\n", common);
}

std::string groups_text(const std::vector<std::vector<unsigned>>& groups) {
  std::string text = fmt::format("{} x{}:", groups.size() == 1 ? "1 instance" : fmt::format("{} instances", groups.size()),
                                 groups.empty() ? 0 : groups.front().size());
  for (size_t i = 0; i < groups.size() && i < 8; ++i) text += fmt::format(" {}{}", i ? "| " : "", format_cpu_list(groups[i]));
  if (groups.size() > 8) text += fmt::format(" | ... ({} more)", groups.size() - 8);
  return text;
}

void append_decoded(fmt::memory_buffer& out, const DiffSide& a, const DiffSide& b) {
  auto ca = decode_caches_as_linux(*a.model), cb = decode_caches_as_linux(*b.model);
  std::map<std::string, std::pair<std::string, std::string>> rows;  // "L1d" -> (A, B)
  std::vector<std::string> order;
  auto add = [&](const std::vector<DecodedCache>& caches, bool side_b) {
    for (const auto& c : caches) {
      std::string name = fmt::format("L{}{}", c.level, c.kind);
      if (!rows.count(name)) order.push_back(name);
      (side_b ? rows[name].second : rows[name].first) = groups_text(c.groups);
    }
  };
  add(ca, false);
  add(cb, true);
  appendf(out, "\ncaches as Linux decodes them (which CPUs share each):\n");
  for (const auto& name : order) {
    auto& [ta, tb] = rows[name];
    if (ta == tb) {
      appendf(out, "  {:<4} same: {}\n", name, ta);
      continue;
    }
    appendf(out, "  {:<4} A: {}\n", name, ta.empty() ? "none" : ta);
    appendf(out, "  {:<4} B: {}\n", "", tb.empty() ? "none" : tb);
  }
  LlcView la = linux_llc(*a.model, ca), lb = linux_llc(*b.model, cb);
  appendf(out, "\nscheduler LLC groups (cpus_share_cache):\n");
  if (la.groups == lb.groups && la.rule == lb.rule) {
    appendf(out, "  same: {}; {}\n", la.rule, groups_text(la.groups));
    return;
  }
  appendf(out, "  A: {}; {}\n  B: {}; {}\n", la.rule, groups_text(la.groups), lb.rule, groups_text(lb.groups));
  auto widest = [](const LlcView& v) {
    size_t w = 0;
    for (const auto& g : v.groups) w = std::max(w, g.size());
    return w;
  };
  if (widest(la) != widest(lb))
    appendf(out, "  {} wakes a task on another CPU of its group by writing that CPU's runqueue (no reschedule IPI), "
                 "groups of up to {} CPUs against {} in {}\n",
            widest(lb) > widest(la) ? "B" : "A", std::max(widest(la), widest(lb)), std::min(widest(la), widest(lb)),
            widest(lb) > widest(la) ? "A" : "B");
}

// The -numa nodes of each side, when either has them (SRAT is not CPUID,
// but a topology's nodes are part of what a guest sees).
void append_numa(fmt::memory_buffer& out, const DiffSide& a, const DiffSide& b) {
  const NumaConfig none;
  const NumaConfig& na = a.numa ? *a.numa : none;
  const NumaConfig& nb = b.numa ? *b.numa : none;
  if (!na.enabled() && !nb.enabled()) return;
  const std::string ta = format_numa_table(na, a.model->topology()), tb = format_numa_table(nb, b.model->topology());
  appendf(out, "\nNUMA nodes (SRAT/SLIT): {}\n", ta == tb ? "the same" : "they differ");
  const auto indent = [](const std::string& text) {
    std::string lines;
    for (size_t at = 0; at < text.size();) {
      const size_t nl = text.find('\n', at);
      lines += "     " + text.substr(at, nl - at) + "\n";
      at = nl == std::string::npos ? text.size() : nl + 1;
    }
    return lines;
  };
  appendf(out, "  A: {}", ta.empty() ? "no -numa: one node, no SRAT\n" : "\n" + indent(ta));
  if (ta != tb) appendf(out, "  B: {}", tb.empty() ? "no -numa: one node, no SRAT\n" : "\n" + indent(tb));
}

}  // namespace

std::string format_cpuid_diff(const DiffSide& a, const DiffSide& b) {
  fmt::memory_buffer out;
  appendf(out, "A: {}\n   {} = {} CPUs, {}, l3-cache={}\n", a.label, a.model->topology().describe(), a.model->topology().cpus(),
          a.model->cpu().model.name, a.model->cpu().l3_cache ? "on" : "off");
  appendf(out, "B: {}\n   {} = {} CPUs, {}, l3-cache={}\n", b.label, b.model->topology().describe(), b.model->topology().cpus(),
          b.model->cpu().model.name, b.model->cpu().l3_cache ? "on" : "off");
  appendf(out, "\nleaves that differ (A -> B), with the CPUs each change holds on:\n");
  append_leaf_diffs(out, a, b);
  append_decoded(out, a, b);
  append_numa(out, a, b);
  return fmt::to_string(out);
}

}  // namespace topolab
