// The stats page: how much of the agents' time is spent waiting on you, and on what.
// Every figure comes from one `GET /api/stats` request (the filters are its query,
// kept in the address bar so a view can be shared); the plots are drawn by plots.js.

import { Unauthorized, get } from "./api.js";
import { clean } from "./sanitize.js";
import { formatWait } from "./model.js";
import { NEUTRAL, answerRanges, colours, rankList, stackedBars } from "./plots.js";

const $ = (id) => document.getElementById(id);
const SELECTS = { range: "s-range", state: "s-state", host: "s-host", agent: "s-agent", by: "s-by", tta: "s-tta" };
let data = null;

function readUrl() {
  const q = new URLSearchParams(location.search);
  for (const [k, id] of Object.entries(SELECTS)) {
    const v = q.get(k);
    if (v === null) continue;
    const sel = $(id);
    if (![...sel.options].some((o) => o.value === v)) {
      const o = document.createElement("option"); // a host or agent before the options arrive
      o.value = v;
      o.textContent = clean(v, 80);
      sel.append(o);
    }
    sel.value = v;
  }
}

function writeUrl() {
  const q = new URLSearchParams();
  for (const [k, id] of Object.entries(SELECTS)) if ($(id).value) q.set(k, $(id).value);
  history.replaceState(null, "", `${location.pathname}?${q}${location.hash}`);
}

function apiQuery() {
  const days = Number($("s-range").value) || 7;
  const to = Date.now() / 1000;
  const q = new URLSearchParams({
    from: String(Math.floor(to - days * 86400)),
    to: String(Math.ceil(to)),
    state: $("s-state").value,
    by: $("s-by").value,
    tz: String(-new Date().getTimezoneOffset()),
  });
  for (const k of ["host", "agent"]) if ($(`s-${k}`).value) q.set(k, $(`s-${k}`).value);
  return q;
}

function fill(sel, values) {
  const cur = sel.value;
  const want = [...new Set([...values, ...(cur ? [cur] : [])])].sort();
  const have = [...sel.options].slice(1).map((o) => o.value);
  if (have.length === want.length && have.every((v, i) => v === want[i])) return;
  while (sel.options.length > 1) sel.remove(1);
  for (const v of want) {
    const o = document.createElement("option");
    o.value = v;
    o.textContent = clean(v, 80);
    sel.append(o);
  }
  sel.value = cur;
}

function emptyNote(box, text) {
  const p = document.createElement("p");
  p.className = "empty-plot";
  p.textContent = text;
  box.replaceChildren(p);
}

// How a wait ended, in plain words (ledger/intervals.py ENDINGS).
const ENDED = {
  answered: "answered", cancelled: "cancelled", exited: "ended with the program", gone: "pane closed",
  stale: "report went stale", seen: "seen", resumed: "went back to work",
};

/** The headline: the total and the parts it is made of, which add up to it. */
function totals(t, waitWord) {
  const box = $("s-totals");
  if (!t.count) { box.textContent = "No waits in this range."; return; }
  const first = data.state === "done" ? "seen" : "answered";
  const ended = { [first]: 0, ...(t.ended || {}) };
  const parts = [...Object.entries(ended).map(([k, n]) => [k, n, ENDED[k] || clean(k, 20)]), ["open", t.open, "still waiting"]];
  const head = document.createElement("span");
  head.className = "total";
  head.textContent = `${t.count} waits, ${formatWait(t.waited)} ${waitWord}: `;
  const sum = parts.flatMap(([k, n, word], i) => {
    const b = document.createElement("span");
    b.className = "part";
    b.dataset.part = k;
    b.dataset.n = String(n);
    b.textContent = `${n} ${word}`;
    return i ? [" + ", b] : [b];
  });
  box.replaceChildren(head, ...sum, ` = ${t.count}.`);
  box.dataset.total = String(t.count);
}

function draw() {
  if (!data) return;
  const waitWord = data.state === "done" ? "waited to be seen" : "waited for an answer";
  totals(data.totals, waitWord);
  // One colour per agent and per host on every plot (plots.js `colours`).
  const agentColour = colours([...data.options.agents, "unknown"]);
  const hostColour = colours(data.options.hosts);
  const colourOf = { agent: agentColour, host: hostColour, kind: () => NEUTRAL };
  const days = data.per_day;
  if (days.series.length) stackedBars($("p-days"), days, `Time ${waitWord} per day, stacked by ${data.by}`, colourOf[data.by]);
  else emptyNote($("p-days"), "Nothing waited in this range.");
  const per = $("s-tta").value;
  const groups = data.time_to_answer[per] || [];
  if (groups.length) answerRanges($("p-tta"), groups, `Time to answer per ${per}: median, 90th percentile and longest`, colourOf[per]);
  else emptyNote($("p-tta"), "No answered waits in this range.");
  const panes = data.panes.map((p) => ({
    label: `${p.host} ${p.pane}${p.agent ? ` · ${p.agent}` : ""}${p.session ? ` · ${p.session}` : ""}`,
    value: p.waited,
    note: `${p.count}×`,
    detail: `Waited ${p.count} times, ${formatWait(p.waited)} in all.`,
  }));
  if (panes.length) rankList($("p-panes"), panes, "Panes that waited most", formatWait);
  else emptyNote($("p-panes"), "No panes waited in this range.");
  const prompts = data.prompts.map((p) => ({
    label: `${p.kind ? `[${p.kind}] ` : ""}${p.example || p.text || "(no text)"}`,
    full: p.example || p.text || "(no text)",
    value: p.count,
    note: formatWait(p.waited),
    detail: `${p.kind ? `Kind: ${p.kind}. ` : ""}Asked ${p.count} times, ${formatWait(p.waited)} waited in all.`,
  }));
  if (prompts.length) rankList($("p-prompts"), prompts, "Prompts that recur most", (n) => `${n}×`);
  else emptyNote($("p-prompts"), "No prompts in this range.");
}

const REASONS = { block: "first block", grouped: "grouped burst", escalation: "escalation", done: "done", error: "error", test: "test" };

/** The notification log: what was sent where, and why. */
async function loadSent() {
  let entries = [];
  try {
    entries = (await get("/api/notify/log?limit=50")).entries || [];
  } catch {
    return; // notifications off on this server: the section stays empty
  }
  const list = $("sent-list");
  list.replaceChildren(...entries.map((e) => {
    const li = document.createElement("li");
    const when = new Date(e.t * 1000).toLocaleString([], { month: "short", day: "numeric", hour: "numeric", minute: "2-digit" });
    const reason = document.createElement("span");
    reason.className = "reason";
    reason.textContent = REASONS[e.reason] || clean(e.reason || "—", 20);
    li.append(`${when} · `, reason, ` · ${clean(e.channel, 80)}${e.state ? ` · ${clean(e.state, 16)}` : ""}`);
    if (!e.ok) {
      const f = document.createElement("span");
      f.className = "failed";
      f.textContent = " · failed";
      li.append(f);
    }
    if (e.detail) li.append(` · ${clean(e.detail, 200)}`);
    li.dataset.reason = e.reason || "";
    return li;
  }));
  if (!entries.length) {
    const li = document.createElement("li");
    li.className = "muted";
    li.textContent = "Nothing sent yet.";
    list.append(li);
  }
}

async function load() {
  writeUrl();
  const q = apiQuery();
  const csv = new URLSearchParams(q);
  csv.delete("by");
  csv.delete("tz");
  csv.set("format", "csv");
  $("s-csv").href = `/api/blocks?${csv}`;
  try {
    data = await get(`/api/stats?${q}`);
    $("s-banner").hidden = true;
  } catch (e) {
    if (e instanceof Unauthorized) { location.href = "/login"; return; }
    $("s-banner").textContent = `The stats did not load. ${e.message}`;
    $("s-banner").hidden = false;
    return;
  }
  fill($("s-host"), data.options.hosts);
  fill($("s-agent"), data.options.agents);
  draw();
  document.documentElement.dataset.ready = "1";
  document.documentElement.dataset.loaded = String(Number(document.documentElement.dataset.loaded || 0) + 1);
}

readUrl();
loadSent();
for (const [k, id] of Object.entries(SELECTS)) {
  $(id).addEventListener("change", () => (k === "tta" ? (writeUrl(), draw()) : load()));
}
// The plots are drawn at their container's width: redraw when the width changes, and
// only then. A phone fires "resize" when its address bar slides away on a scroll, which
// redrew the page under the reader and closed the row they had just opened.
let resizeTimer = null;
let drawnWidth = window.innerWidth;
window.addEventListener("resize", () => {
  if (window.innerWidth === drawnWidth) return;
  clearTimeout(resizeTimer);
  resizeTimer = setTimeout(() => {
    drawnWidth = window.innerWidth;
    draw();
  }, 150);
});
load();
