// SPDX-License-Identifier: GPL-2.0-or-later
// The HTML page's style sheet and script, inline in every page: a page
// requests nothing, from the network or from disk.
#include "report/html_page.h"

namespace topolab {

namespace {

constexpr std::string_view kCss = R"css(
body { font-family: sans-serif; margin: 0 auto; max-width: 1200px; padding: 0 16px 40px; color: #222; }
header { border-bottom: 2px solid #446; margin-bottom: 8px; }
header h1 { font-size: 22px; margin: 14px 0 4px; }
header code { display: block; background: #f4f4f8; padding: 6px 8px; margin: 6px 0 10px; white-space: pre-wrap; }
nav a { margin-right: 14px; font-size: 14px; }
section { margin-top: 26px; }
h2 { font-size: 18px; border-bottom: 1px solid #ccd; padding-bottom: 3px; }
h3 { font-size: 15px; margin: 14px 0 4px; }
p.note, .why li { font-size: 14px; line-height: 1.45; max-width: 980px; }
.scroll { overflow-x: auto; }
table { border-collapse: collapse; font-size: 13px; }
th, td { border: 1px solid #ccd; padding: 2px 6px; text-align: right; }
th { background: #eef; }
td.l, th.l { text-align: left; }
pre { background: #f8f8fa; padding: 8px; font-size: 12px; overflow-x: auto; }
.summary td { text-align: left; }
.apic-bits td { text-align: center; min-width: 26px; font-family: monospace; }
.lvl-package { background: #dcd3f5; } .lvl-die { background: #f5d3e4; } .lvl-module { background: #f5ecc8; }
.lvl-core { background: #cfe8ff; } .lvl-thread { background: #d9f5d0; }
.tree .node { display: inline-block; vertical-align: top; border: 1px solid #99a; border-radius: 5px;
  margin: 3px; padding: 2px 4px 4px; background: #fff; }
.tree .node > .label { font-size: 11px; color: #446; }
.tree .package { background: #f6f3ff; } .tree .die { background: #fff6fa; } .tree .module { background: #fffbea; }
.tree .core { background: #f4f9ff; }
.cpu { display: inline-block; border: 1px solid #6a6; background: #eefbe9; border-radius: 3px; margin: 1px;
  padding: 1px 4px; font-size: 11px; font-family: monospace; text-align: center; cursor: default; }
.cpu .ctype { display: block; color: #a40; }
.hl, .cpu.hl { outline: 3px solid #e15759; }
svg .hl { stroke: #e15759; stroke-width: 3; }
.why li { margin-bottom: 6px; }
.why code, p.note code { background: #f1f1f5; padding: 0 3px; }
.leaves td { font-family: monospace; }
.reg { position: relative; cursor: help; }
.reg:hover, .reg:focus { background: #fff3c4; }
.reg .fields { display: none; position: absolute; z-index: 5; left: 0; top: 100%; background: #fffef5;
  border: 1px solid #aa8; box-shadow: 2px 2px 6px #0003; padding: 4px; white-space: nowrap; }
.reg:hover .fields, .reg:focus .fields { display: block; }
.fields table td { font-family: sans-serif; text-align: left; }
#field-panel, .field-panel { position: sticky; top: 0; background: #fffef5; border: 1px solid #aa8; padding: 6px 8px;
  margin: 8px 0; font-size: 13px; z-index: 4; }
.field-panel .fields table td { font-family: sans-serif; text-align: left; }
.legend span { display: inline-block; margin-right: 14px; font-size: 13px; }
.legend i { display: inline-block; width: 12px; height: 12px; margin-right: 4px; vertical-align: middle; }
.act-running { fill: #59a14f; background: #59a14f; } .act-spinning { fill: #f28e2b; background: #f28e2b; }
.act-halted { fill: #bab0ac; background: #bab0ac; } .act-mwait { fill: #4e79a7; background: #4e79a7; }
.act-wait-for-sipi { fill: #d4c4ef; background: #d4c4ef; }
figure.chart { display: inline-block; vertical-align: top; margin: 10px 30px 10px 50px; }
figure.chart svg { overflow: visible; }
figure.chart figcaption { font-size: 12px; color: #667; }
details > summary { cursor: pointer; font-weight: bold; margin: 8px 0; }
)css";

// Hovering a cache instance (or any element with data-cpus) outlines its
// CPUs; hovering a CPU outlines every cache instance it belongs to. The raw
// leaves follow the CPU chosen in their selector; the field panel shows the
// register last pointed at. A #cpu=N address does both for CPU N at load.
constexpr std::string_view kJs = R"js(
(function () {
  function machineOf(el) { return el.closest('.machine') || document; }
  function clear() { document.querySelectorAll('.hl').forEach(function (e) { e.classList.remove('hl'); }); }
  function outlineCpus(root, cpus) {
    cpus.forEach(function (c) {
      root.querySelectorAll('.cpu[data-cpu="' + c + '"]').forEach(function (e) { e.classList.add('hl'); });
    });
  }
  function outlineCpu(root, cpu) {
    root.querySelectorAll('[data-cpus]').forEach(function (g) {
      if ((' ' + g.getAttribute('data-cpus') + ' ').indexOf(' ' + cpu + ' ') >= 0) g.classList.add('hl');
    });
    outlineCpus(root, [cpu]);
  }
  document.addEventListener('mouseover', function (ev) {
    var el = ev.target.closest ? ev.target.closest('[data-cpus],[data-cpu]') : null;
    clear();
    if (!el || el.closest('.leaves')) return;
    if (el.hasAttribute('data-cpus')) {
      el.classList.add('hl');
      outlineCpus(machineOf(el), el.getAttribute('data-cpus').split(' '));
    } else {
      outlineCpu(machineOf(el), el.getAttribute('data-cpu'));
    }
  });
  function showFields(cell) {
    var panel = machineOf(cell).querySelector('.field-panel');
    var box = cell.querySelector('.fields');
    if (!panel || !box) return;
    panel.querySelector('.what').textContent = cell.getAttribute('data-what');
    panel.querySelector('.fields').innerHTML = box.innerHTML;
  }
  document.addEventListener('mouseover', function (ev) {
    var cell = ev.target.closest ? ev.target.closest('.reg') : null;
    if (cell) showFields(cell);
  });
  document.addEventListener('focusin', function (ev) {
    if (ev.target.classList && ev.target.classList.contains('reg')) showFields(ev.target);
  });
  function showLeavesOf(sel) {
    var table = document.getElementById(sel.getAttribute('data-table'));
    table.querySelectorAll('tr[data-cpu]').forEach(function (row) {
      row.hidden = row.getAttribute('data-cpu') !== sel.value;
    });
  }
  document.querySelectorAll('select.leaf-cpu').forEach(function (sel) {
    sel.addEventListener('change', function () { showLeavesOf(sel); });
  });
  // page.html#cpu=N opens on CPU N: its leaves, and everything it shares outlined.
  var wanted = /^#cpu=([0-9]+)$/.exec(location.hash);
  if (wanted) {
    document.querySelectorAll('select.leaf-cpu').forEach(function (sel) {
      if (sel.querySelector('option[value="' + wanted[1] + '"]')) { sel.value = wanted[1]; showLeavesOf(sel); }
    });
    outlineCpu(document, wanted[1]);
  }
  // Reached only if nothing above threw: the browser test looks for it.
  document.documentElement.setAttribute('data-script', 'ready');
})();
)js";

}  // namespace

std::string_view html_page_css() { return kCss; }
std::string_view html_page_js() { return kJs; }

}  // namespace topolab
