// The stats page's plots, drawn as SVG by the page itself: no chart library, no CDN.
// Each plot is drawn at the width of its container (one SVG unit is one CSS pixel),
// so its text is as large on a phone as on a desktop; the page redraws on resize.
// Every text comes through textContent (names are untrusted), every mark has a
// <title> so a pointer or a screen reader can read the figure behind it.

import { clean } from "./sanitize.js";
import { formatWait } from "./model.js";

const NS = "http://www.w3.org/2000/svg";
// Eight colours told apart in light and dark, each also named in the legend and titles.
// A colour means one agent (or one host) on every plot of the page: see `colours`.
export const PALETTE = ["#2563eb", "#ea580c", "#16a34a", "#9333ea", "#0891b2", "#ca8a04", "#db2777", "#92400e"];
// What is not an agent or a host (ranks, kinds, "other") is drawn in one neutral grey.
export const NEUTRAL = "#8b949e";

function hash(s) {
  let h = 2166136261; // FNV-1a: the same name gets the same slot on every load
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 16777619);
  return h >>> 0;
}

/** The one place names get colours: each name its hash's slot of PALETTE, or, when an
 * earlier name (in sorted order) took that slot, the next free one, so up to eight
 * names never share a colour and a name keeps its colour whatever the filters show.
 * Returns name -> colour; names not given (and "other") are NEUTRAL. */
export function colours(names) {
  const taken = new Map();
  const out = new Map();
  for (const n of [...new Set(names)].sort()) {
    let k = hash(n) % PALETTE.length;
    for (let i = 0; i < PALETTE.length && taken.has(k); i++) k = (k + 1) % PALETTE.length;
    taken.set(k, n);
    out.set(n, PALETTE[k]);
  }
  return (name) => (name === "other" ? NEUTRAL : out.get(name) ?? NEUTRAL);
}

function svg(tag, attrs = {}, text) {
  const el = document.createElementNS(NS, tag);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, String(v));
  if (text !== undefined) el.textContent = text;
  return el;
}

function titled(el, text) {
  el.append(svg("title", {}, text));
  return el;
}

function frame(width, height, label) {
  const s = svg("svg", { width, height, viewBox: `0 0 ${width} ${height}`, role: "img", "aria-label": label, class: "plot" });
  s.append(svg("title", {}, label));
  return s;
}

/** A round axis step in seconds for a maximum of `max` seconds and about `n` lines. */
export function niceStep(max, n = 4) {
  const steps = [1, 5, 10, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400];
  const want = Math.max(1, max / n);
  return steps.find((s) => s >= want) ?? Math.ceil(want / 86400) * 86400;
}

/** Seconds as a short axis label: "45 s", "12 min", "3 h". */
export function shortDuration(s) {
  if (s < 60) return `${Math.round(s)} s`;
  if (s < 3600) return `${Math.round(s / 60)} min`;
  const h = s / 3600;
  return `${Number.isInteger(h) ? h : h.toFixed(1)} h`;
}

/** Time waited per day, stacked by series: {days: ["2030-03-17", …], series: [{name, values}]}. */
export function stackedBars(box, { days, series }, label, colour) {
  const width = Math.max(260, box.clientWidth);
  const height = 220;
  const left = 52, right = 8, top = 10, bottom = 34;
  const totals = days.map((_, i) => series.reduce((a, s) => a + s.values[i], 0));
  const max = Math.max(60, ...totals);
  const step = niceStep(max);
  const top_ = Math.ceil(max / step) * step;
  const plotW = width - left - right, plotH = height - top - bottom;
  const y = (v) => top + plotH - (v / top_) * plotH;
  const s = frame(width, height, label);
  for (let v = 0; v <= top_ + 1e-9; v += step) {
    s.append(svg("line", { x1: left, x2: width - right, y1: y(v), y2: y(v), class: "grid" }));
    s.append(svg("text", { x: left - 6, y: y(v) + 4, "text-anchor": "end", class: "axis" }, shortDuration(v)));
  }
  const slot = plotW / Math.max(1, days.length);
  const barW = Math.max(2, Math.min(48, slot * 0.7));
  const every = Math.max(1, Math.ceil(days.length / Math.floor(plotW / 56)));
  days.forEach((day, i) => {
    const x = left + i * slot + (slot - barW) / 2;
    let base = 0;
    series.forEach((ser) => {
      const v = ser.values[i];
      if (v <= 0) return;
      const r = svg("rect", { x, y: y(base + v), width: barW, height: Math.max(1, y(base) - y(base + v)), fill: colour(ser.name), class: "bar", "data-name": ser.name });
      s.append(titled(r, `${day} · ${clean(ser.name, 80)}: ${formatWait(v)}`));
      base += v;
    });
    if (i % every === 0) {
      s.append(svg("text", { x: left + i * slot + slot / 2, y: height - bottom + 16, "text-anchor": "middle", class: "axis" }, day.slice(5)));
    }
  });
  s.append(svg("line", { x1: left, x2: width - right, y1: y(0), y2: y(0), class: "axis-line" }));
  box.replaceChildren(s, legend(series.map((x) => x.name), colour));
  return s;
}

function legend(names, colour) {
  const ul = document.createElement("ul");
  ul.className = "legend";
  names.forEach((n) => {
    const li = document.createElement("li");
    li.dataset.name = n;
    const sw = document.createElement("span");
    sw.className = "swatch";
    sw.style.background = colour(n);
    li.append(sw, document.createTextNode(clean(n, 80)));
    ul.append(li);
  });
  return ul;
}

/** Time-to-answer per group: a bar to p90, a tick at p50, a dot at the maximum; the
 * figures are written on each row too. Groups: [{name, count, p50, p90, max}]. */
export function answerRanges(box, groups, label, colour) {
  const width = Math.max(260, box.clientWidth);
  const row = 56, top = 4;
  const height = top + row * groups.length + 18;
  const left = 8, right = 12;
  const max = Math.max(60, ...groups.map((g) => g.max));
  const x = (v) => left + (v / max) * (width - left - right);
  const s = frame(width, height, label);
  groups.forEach((g, i) => {
    const y0 = top + i * row;
    const name = clean(g.name, 60);
    const figures = `p50 ${formatWait(g.p50)} · p90 ${formatWait(g.p90)} · max ${formatWait(g.max)}`;
    s.append(titled(svg("text", { x: left, y: y0 + 13, class: "row-label", "data-maxw": width - left - right }, `${name} · ${g.count} answered`), `${name}: ${g.count} answered; ${figures}`));
    s.append(svg("text", { x: left, y: y0 + 28, class: "row-figures", "data-maxw": width - left - right }, figures));
    s.append(svg("line", { x1: x(0), x2: x(g.max), y1: y0 + 42, y2: y0 + 42, class: "whisker" }));
    s.append(titled(svg("rect", { x: x(0), y: y0 + 36, width: Math.max(1, x(g.p90) - x(0)), height: 12, fill: colour(g.name), class: "bar", "data-name": g.name, opacity: 0.85 }), `${name}: 90% answered within ${formatWait(g.p90)}`));
    s.append(titled(svg("rect", { x: x(g.p50) - 1.5, y: y0 + 33, width: 3, height: 18, class: "median" }), `${name}: median ${formatWait(g.p50)}`));
    s.append(titled(svg("circle", { cx: x(g.max), cy: y0 + 42, r: 4, class: "maxdot" }), `${name}: longest ${formatWait(g.max)}`));
  });
  const step = niceStep(max, 3);
  for (let v = 0; v <= max; v += step) {
    s.append(svg("text", { x: Math.min(x(v), width - right - 20), y: height - 4, class: "axis" }, shortDuration(v)));
  }
  box.replaceChildren(s);
  fitTexts(s);
  return s;
}

/** Cut each text with a `data-maxw` to that many pixels, with an ellipsis (measured:
 * the plot is in the page by then); its <title>, when it has one, keeps the whole. */
export function fitTexts(root) {
  for (const t of root.querySelectorAll("text[data-maxw]")) {
    const max = Number(t.dataset.maxw);
    const title = t.querySelector("title");
    const node = [...t.childNodes].find((n) => n.nodeType === Node.TEXT_NODE);
    if (!node || t.getComputedTextLength() <= max) continue;
    const full = node.data;
    let lo = 0, hi = full.length;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      node.data = full.slice(0, mid) + "…";
      if (t.getComputedTextLength() <= max) lo = mid;
      else hi = mid - 1;
    }
    node.data = full.slice(0, lo) + "…";
    if (title) t.append(title);
  }
}

/** A ranked list: one row per item, its label on one line (cut with an ellipsis when
 * the screen is narrow), its figure at the right and a neutral bar under it; a tap (or
 * Enter) on the row opens it and shows the whole label, hover not needed. Items
 * [{label, value, note, detail}], value in the units `fmt` shows; every text goes in
 * through textContent (prompts come from untrusted panes). */
export function rankList(box, items, label, fmt) {
  const max = Math.max(1, ...items.map((it) => it.value));
  // A redraw (new data, another width) keeps open the rows the reader opened.
  const opened = new Set([...box.querySelectorAll("details[open] .rank-full")].map((e) => e.textContent));
  const ol = document.createElement("ol");
  ol.className = "rank";
  ol.setAttribute("aria-label", label);
  for (const it of items) {
    const li = document.createElement("li");
    const det = document.createElement("details");
    const sum = document.createElement("summary");
    const name = document.createElement("span");
    name.className = "rank-label";
    name.textContent = clean(it.label, 300);
    const val = document.createElement("span");
    val.className = "rank-value";
    val.textContent = `${fmt(it.value)}${it.note ? ` · ${it.note}` : ""}`;
    const bar = document.createElement("span");
    bar.className = "rank-bar";
    const fillEl = document.createElement("span");
    fillEl.style.width = `${Math.max(0.5, (100 * it.value) / max)}%`;
    bar.append(fillEl);
    sum.append(name, val, bar);
    const full = document.createElement("div");
    full.className = "rank-full";
    full.textContent = clean(it.full ?? it.label, 5000);
    det.append(sum, full);
    det.open = opened.has(full.textContent);
    if (it.detail) {
      const d = document.createElement("div");
      d.className = "rank-detail muted";
      d.textContent = clean(it.detail, 400);
      det.append(d);
    }
    li.append(det);
    ol.append(li);
  }
  box.replaceChildren(ol);
  return ol;
}
