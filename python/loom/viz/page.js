"use strict";
// The viewer's page: the trace (or replay snapshots) is embedded as JSON in
// #data; everything is drawn here, nothing is fetched.
const D = JSON.parse(document.getElementById("data").textContent);
const $ = (id) => document.getElementById(id);

function el(tag, attrs, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "class") e.className = v;
    else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v);
  }
  for (const k of kids) e.append(k);
  return e;
}
const SVGNS = "http://www.w3.org/2000/svg";
function svgText(x, y, str) {
  const t = document.createElementNS(SVGNS, "text");
  t.setAttribute("x", x);
  t.setAttribute("y", y);
  t.textContent = str;
  return t;
}
function svg(tag, attrs, title) {
  const e = document.createElementNS(SVGNS, tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  if (title) { const t = document.createElementNS(SVGNS, "title"); t.textContent = title; e.append(t); }
  return e;
}
const ms = (v) => (v >= 100 ? v.toFixed(0) : v >= 1 ? v.toFixed(2) : v.toFixed(3)) + " ms";
function bytes(b) {
  const u = ["B", "KB", "MB", "GB"];
  let i = 0;
  while (b >= 1024 && i < u.length - 1) { b /= 1024; i++; }
  return b.toFixed(i ? 1 : 0) + " " + u[i];
}
function hue(s) { let h = 0; for (const c of s) h = (h * 31 + c.charCodeAt(0)) % 360; return h; }

// Lines of `text` as spans; lines whose index is in `marked` get `cls`.
function lines(pre, text, marked, cls) {
  pre.textContent = "";
  const set = new Set(marked), all = text.split("\n");
  if (all.length && all[all.length - 1] === "") all.pop();
  all.forEach((line, i) => pre.append(el("span", set.has(i) ? { class: cls } : {}, line + "\n")));
}

// ---- trace ----
const T = D.mode === "trace" ? D.trace : null;
const S = { realize: 0, kernel: -1, pass: 0, zoom: 1 };

// Launches by realize, grouped once: the kernel list and the counter table
// read them per realize (a long run has hundreds of thousands).
const byRealize = new Map();
for (const l of T ? T.launches : []) {
  if (!byRealize.has(l[0])) byRealize.set(l[0], []);
  byRealize.get(l[0]).push(l);
}
function launchesOf(r) { return byRealize.get(r) || []; }

function summary() {
  const R = T.realizes, hits = R.filter((r) => r.cached).length;
  const kernelMs = T.launches.reduce((a, l) => a + l[3], 0), wall = R.reduce((a, r) => a + r.end - r.start, 0);
  const compiled = R.reduce((a, r) => a + r.compiled, 0);
  const parts = [`device ${T.device}`, `${R.length} realizes`, `schedule cache ${hits} of ${R.length} hit`,
    `${T.launches.length} kernel launches of ${T.kernels.length} kernels`, `${compiled} compiled`,
    `kernels ${ms(kernelMs)} of ${ms(wall)} in realize`, `peak memory ${bytes(T.peak_bytes)}`];
  if (T.dropped.launches || T.dropped.realizes)
    parts.push(`not kept: ${T.dropped.realizes} realizes, ${T.dropped.launches} launches`);
  for (const p of parts) $("summary").append(el("span", {}, p));
}

function realizeList() {
  const t = $("realize-list");
  t.append(el("tr", {}, ...["#", "kernels", "cache", "compiled", "ms"].map((h) => el("th", {}, h))));
  T.realizes.forEach((r, i) => {
    const tr = el("tr", { class: "clickable", id: "realize-" + i, onclick: () => selectRealize(i) },
      el("td", {}, String(i)), el("td", {}, String(r.kernels)),
      el("td", { class: r.cached ? "hit" : "miss" }, r.cached ? "hit" : "miss"),
      el("td", {}, String(r.compiled)), el("td", {}, ms(r.end - r.start)));
    t.append(tr);
  });
}

function selectRealize(i) {
  S.realize = i;
  document.querySelectorAll("#realize-list tr.selected").forEach((e) => e.classList.remove("selected"));
  if ($("realize-" + i)) $("realize-" + i).classList.add("selected");
  const r = T.realizes[i];
  showGraph(r ? r.graph : -1, i);
  kernelList(i);
}

function showGraph(g, i) {
  const box = $("graph");
  box.textContent = "";
  $("sched-passes").textContent = "";
  if (g < 0) { $("graph-title").textContent = "Graph (not recorded)"; return; }
  const G = T.graphs[g];
  $("graph-title").textContent = `Graph ${g} of realize ${i}: ${G.nodes.length} nodes, ${G.groups.length} realized`;
  let prev = null;
  for (const p of G.passes) {
    const changed = prev && p.kernels.join() !== prev.join();
    $("sched-passes").append(el("span", { class: changed ? "changed" : "", title: p.kernels.join(" ") },
      `${p.pass}: ${p.kernels.length}  `));
    prev = p.kernels;
  }
  if (!D.svgs[g]) { box.append(el("p", {}, "This graph is too large to lay out (see --max-nodes).")); return; }
  box.innerHTML = D.svgs[g];
  const sv = box.querySelector("svg");
  S.natural = parseFloat(sv.getAttribute("width")) || 1000;
  // Fit the width, but no smaller than labels stay legible at ("fit" shows the whole graph).
  S.zoom = Math.max(0.6, Math.min(1, (box.clientWidth - 20) / S.natural));
  zoom(1);
  sv.querySelectorAll("g.node").forEach((n) => n.addEventListener("click", () => pickNode(G, n)));
}

function zoom(f) {
  const sv = $("graph").querySelector("svg");
  if (!sv) return;
  S.zoom = f === 0 ? Math.max(0.05, ($("graph").clientWidth - 20) / S.natural) : S.zoom * f;
  sv.style.width = S.natural * S.zoom + "pt";
  sv.style.height = "auto";
}

function pickNode(G, gnode) {
  document.querySelectorAll("#graph g.node.picked").forEach((e) => e.classList.remove("picked"));
  gnode.classList.add("picked");
  const n = G.nodes[parseInt(gnode.id.slice(1), 10)];
  const kernels = n.groups.map((g) => G.groups[g].kernels.join(", ") || "(none)").join("; ");
  const info = $("node-info");
  info.textContent = "";
  info.append(el("b", {}, `${n.op} ${n.dtype} (${n.shape.join(", ")})`), ` ${n.arg}`, el("br"),
    n.why ? `Own buffer: ${n.why}.` : "No buffer of its own (inlined).", el("br"),
    `Kernel: ${kernels || "(none: a leaf)"}`);
}

function kernelList(i) {
  const ol = $("kernel-list");
  ol.textContent = "";
  const L = launchesOf(i);
  L.forEach((l) => {
    const k = T.kernels[l[1]];
    ol.append(el("li", { "data-kernel": l[1], onclick: (e) => selectKernel(l[1], e.currentTarget) },
      k.name + "  ", el("span", { class: "dim" }, ms(l[3])), k.library ? el("span", { class: "lib" }, "  " + k.library) : ""));
  });
  if (L.length) selectKernel(L[0][1], ol.firstChild);
  else { S.kernel = -1; $("kernel-title").textContent = "(no launches recorded)"; }
}

// The graph's cluster (kernel group) whose kernels include `name`.
function highlightGroup(name) {
  document.querySelectorAll("#graph g.cluster.hl").forEach((e) => e.classList.remove("hl"));
  const r = T.realizes[S.realize];
  if (!r || r.graph < 0) return;
  const g = T.graphs[r.graph].groups.findIndex((gr) => gr.kernels.includes(name));
  const c = g >= 0 && document.getElementById("k" + g);
  if (c) { c.classList.add("hl"); c.scrollIntoView({ block: "nearest", inline: "nearest" }); }
}

function selectKernel(k, li) {
  S.kernel = k;
  document.querySelectorAll("#kernel-list li.selected").forEach((e) => e.classList.remove("selected"));
  if (li) li.classList.add("selected");
  const K = T.kernels[k];
  $("kernel-title").textContent = K.name + (K.library ? ` (runs ${K.library})` : "");
  const bar = $("pass-list");
  bar.textContent = "";
  K.passes.forEach((p, i) => bar.append(el("button", { onclick: () => selectPass(i) }, p.pass)));
  // Open "lower" (views become index arithmetic), else the first pass that changed something.
  const lower = K.passes.findIndex((p) => p.pass === "lower");
  const first = K.passes.findIndex((p) => p.changed.length > 0);
  selectPass(lower >= 0 ? lower : first >= 0 ? first : 0);
  $("source").textContent = K.source || (K.library ? `the library kernel ${K.library} runs in its place` : "");
  highlightGroup(K.name);
}

function selectPass(i) {
  const K = T.kernels[S.kernel];
  S.pass = i;
  [...$("pass-list").children].forEach((b, j) => b.classList.toggle("selected", j === i));
  const p = K.passes[i];
  if (!p) { $("pass-view").textContent = ""; $("rules").textContent = ""; return; }
  lines($("pass-view"), p.text, p.changed, "changed");
  const rules = p.rules.map(([where, n]) => `${where} x${n}`).join(", ");
  $("rules").textContent = `${p.changed.length} new node(s) after "${p.pass}"` + (rules ? `; rules that fired: ${rules}` : "");
}

function timeline(from, to) {
  const R = T.realizes, box = $("timeline");
  box.textContent = "";
  if (!R.length) return;
  from = Math.max(0, Math.min(from, R.length - 1));
  to = Math.max(from, Math.min(to, R.length - 1));
  const t0 = R[from].start, t1 = Math.max(R[to].end, t0 + 1e-3), W = 1200, x = (t) => ((t - t0) / (t1 - t0)) * W;
  const s = svg("svg", { viewBox: `0 0 ${W} 170`, preserveAspectRatio: "none" });
  [["realize", 12], ["kernels", 36], ["compile", 60], ["memory", 100]].forEach(([n, y]) => s.append(svgText(2, y - 2, n)));
  for (let i = from; i <= to; i++)
    s.append(svg("rect", { class: "realize", x: x(R[i].start), y: 14, width: Math.max(0.5, x(R[i].end) - x(R[i].start)),
      height: 10 }, `realize ${i}: ${ms(R[i].end - R[i].start)}, ${R[i].kernels} kernels`));
  const L = T.launches.filter((l) => l[0] >= from && l[0] <= to);
  for (const l of L) {
    const name = T.kernels[l[1]].name;
    s.append(svg("rect", { class: "launch", x: x(l[2]), y: 38, width: Math.max(0.4, x(l[2] + l[3]) - x(l[2])), height: 14,
      fill: `hsl(${hue(name)},55%,55%)` }, `${name}: ${ms(l[3])}`));
  }
  for (const c of T.compiles.filter((c) => c[0] + c[1] >= t0 && c[0] <= t1))
    s.append(svg("rect", { class: "compile", x: x(c[0]), y: 62, width: Math.max(0.5, x(c[0] + c[1]) - x(c[0])), height: 10 },
      `compiled ${c[2]} of ${c[3]} kernels: ${ms(c[1])}`));
  const peak = Math.max(1, ...L.map((l) => l[4]));
  const y = (b) => 165 - (b / peak) * 60;
  if (L.length) {
    s.append(svg("polyline", { class: "mem", points: L.map((l) => `${x(l[2]).toFixed(1)},${y(l[4]).toFixed(1)}`).join(" ") }));
    const top = L.reduce((a, l) => (l[4] > a[4] ? l : a));
    s.append(svg("circle", { class: "peak", cx: x(top[2]), cy: y(top[4]), r: 3 }, `peak in view: ${bytes(top[4])}`));
  }
  s.append(svgText(W - 150, 10, `${ms(t1 - t0)} shown`));
  box.append(s);
  counters(from, to);
}

function counters(from, to) {
  const t = $("counters");
  t.textContent = "";
  t.append(el("tr", {}, ...["realize", "kernels", "schedule", "compiled", "work / needed", "wall", "kernels", "host"]
    .map((h) => el("th", {}, h))));
  for (let i = from; i <= to; i++) {
    const r = T.realizes[i], k = launchesOf(i).reduce((a, l) => a + l[3], 0), wall = r.end - r.start;
    t.append(el("tr", {}, ...[String(i), String(r.kernels), r.cached ? "hit" : "miss", String(r.compiled),
      `${r.work} / ${r.work_needed}`, ms(wall), ms(k), ms(Math.max(0, wall - k))].map((v) => el("td", {}, v))));
  }
}

function timelineControls(from, to) {
  const n = T.realizes.length, c = $("timeline-controls");
  const a = el("input", { type: "number", min: 0, max: Math.max(0, n - 1), value: from, size: 4 });
  const b = el("input", { type: "number", min: 0, max: Math.max(0, n - 1), value: to, size: 4 });
  c.append("realizes ", a, " to ", b, el("button", { onclick: () => timeline(+a.value, +b.value) }, "show"),
    el("button", { onclick: () => timeline(0, n - 1) }, "whole run"),
    el("span", { class: "dim" }, " grey: realize (host and kernels); coloured: kernels; red: compiles; blue: memory in use"));
  timeline(+a.value, +b.value);
}

function initTrace() {
  $("trace-view").hidden = false;
  summary();
  realizeList();
  $("zoom-in").onclick = () => zoom(1.25);
  $("zoom-out").onclick = () => zoom(0.8);
  $("zoom-fit").onclick = () => zoom(0);
  // Open a training step: the latest realize with the most kernels, preferring
  // schedule-cache hits (the steady state); where its graph ran before, the
  // earlier run, and the timeline shows one cycle from it to the next.
  let pick = 0, best = [-1, -1];
  T.realizes.forEach((r, i) => {
    const score = [r.graph >= 0 && r.cached ? 1 : 0, r.kernels];
    if (r.graph >= 0 && (score[0] > best[0] || (score[0] === best[0] && score[1] >= best[1]))) { best = score; pick = i; }
  });
  let end = pick;
  const prev = T.realizes.slice(0, pick).map((r) => r.graph).lastIndexOf(T.realizes.length ? T.realizes[pick].graph : -2);
  if (prev >= 0) { end = pick - 1; pick = prev; }
  selectRealize(pick);
  timelineControls(pick, end);
}

// ---- replay snapshots ----
// Longest common subsequence of lines: [only in a, only in b] as index lists.
function diffLines(a, b) {
  if (a.length * b.length > 4e6) {
    const sa = new Set(a), sb = new Set(b);
    return [a.map((l, i) => (sb.has(l) ? -1 : i)).filter((i) => i >= 0), b.map((l, i) => (sa.has(l) ? -1 : i)).filter((i) => i >= 0)];
  }
  const m = a.length, n = b.length, L = Array.from({ length: m + 1 }, () => new Int32Array(n + 1));
  for (let i = m - 1; i >= 0; i--) for (let j = n - 1; j >= 0; j--)
    L[i][j] = a[i] === b[j] ? L[i + 1][j + 1] + 1 : Math.max(L[i + 1][j], L[i][j + 1]);
  const onlyA = [], onlyB = [];
  let i = 0, j = 0;
  while (i < m && j < n) {
    if (a[i] === b[j]) { i++; j++; } else if (L[i + 1][j] >= L[i][j + 1]) onlyA.push(i++); else onlyB.push(j++);
  }
  while (i < m) onlyA.push(i++);
  while (j < n) onlyB.push(j++);
  return [onlyA, onlyB];
}

function initReplay() {
  const snaps = D.snapshots, view = $("replay-view");
  view.hidden = false;
  const two = snaps.length === 2;
  $("summary").append(el("span", {}, two ? `${snaps[0].name} (left) against ${snaps[1].name} (right)` : snaps[0].name));
  const count = Math.max(...snaps.map((s) => s.kernels.length));
  let differing = 0;
  for (let k = 0; k < count; k++) {
    const ks = snaps.map((s) => s.kernels[k]);
    const box = el("div", { class: "kernel" });
    const names = [...new Set(ks.map((x) => (x ? x.sections.map((s) => s[0]) : [])).flat())];
    let changed = false;
    const cols = el("div", { class: two ? "cols" : "cols one" });
    for (const sec of names) {
      const texts = ks.map((x) => { const s = x && x.sections.find((y) => y[0] === sec); return s ? s[1] : ""; });
      const pres = texts.map(() => el("pre", { class: "section" }));
      if (two) {
        const [a, b] = diffLines(texts[0].split("\n"), texts[1].split("\n"));
        changed = changed || a.length > 0 || b.length > 0;
        lines(pres[0], texts[0] + "\n", a, "removed");
        lines(pres[1], texts[1] + "\n", b, "added");
      } else lines(pres[0], texts[0] + "\n", [], "");
      pres.forEach((p, i) => cols.append(el("div", {}, el("h3", {}, `${sec}${two ? (i ? " (right)" : " (left)") : ""}`), p)));
    }
    differing += changed;
    const title = ks.map((x) => (x ? x.title : "(none)")).join("  |  ");
    box.append(el("h2", { class: changed ? "miss" : "" }, `kernel ${title}${two ? (changed ? "  (differs)" : "  (same)") : ""}`), cols);
    view.append(box);
  }
  if (two) $("summary").append(el("span", { id: "replay-differing" }, `${differing} of ${count} kernels differ`));
}

if (D.mode === "trace") initTrace();
else initReplay();
