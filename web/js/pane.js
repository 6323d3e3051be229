// A pane's page: its state now, its live screen with the answers its prompt takes
// (first, under the thumb), the attach command, a "seen" action (done -> idle,
// P7501-8) and mute/snooze buttons, the 7501 records behind it and its timeline (when
// it worked, when it waited on you and for how long).

import { get, post } from "./api.js";
import { copyText } from "./board.js";
import { clean, setText } from "./sanitize.js";
import { ScreenPanel } from "./screen.js";
import { attachCommand, clock, clockTime, formatDuration, formatWait, stateInfo } from "./model.js";

// The timeline's table shows the newest rows only, more on "show more": a pane that
// changes state every few seconds would otherwise push everything else off a phone.
const TIMELINE_ROWS = 10;

const SNOOZES = [["15 min", 15], ["1 hour", 60], ["8 hours", 480], ["until lifted", null]];

function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = clean(text);
  return e;
}

function num(v) {
  if (typeof v === "number") return v;
  const n = Number(v);
  if (!Number.isNaN(n)) return n;
  const t = Date.parse(v);
  return Number.isNaN(t) ? null : t / 1000;
}

/** History rows (any order, various field names) into spans with durations. */
export function timeline(events, now) {
  const rows = events
    .map((e) => ({ ...e, at: num(e.t ?? e.at ?? e.ts ?? e.since ?? e.time ?? e.created_at) }))
    .filter((e) => e.at !== null)
    .sort((a, b) => a.at - b.at);
  return rows.map((r, i) => ({ ...r, until: i + 1 < rows.length ? rows[i + 1].at : now, current: i + 1 === rows.length }))
    .map((r) => ({ ...r, duration: Math.max(0, r.until - r.at) }));
}

function waitLine(since, now) {
  return `waiting since ${clockTime(since)} (${formatWait(now - since)})`;
}

/** "14:03:21" today, "2 Dec 14:03" before: short enough for a phone row. */
function when(at) {
  const d = new Date(at * 1000);
  const today = new Date().toDateString() === d.toDateString();
  return today ? d.toLocaleTimeString() : d.toLocaleString(undefined, { day: "numeric", month: "short", hour: "2-digit", minute: "2-digit" });
}

/** What decided the pane's state, as one sentence: the server's words (`why.text`,
 * GET /api/panes/ID), then when the report came on this device's clock. Untrusted
 * names inside it reach the page through textContent only. */
export function whyText(why) {
  if (!why || typeof why.text !== "string" || !why.text) return "";
  const at = why.source === "report" && typeof why.at === "number" ? `, at ${when(why.at)}` : "";
  return `Why: ${clean(why.text, 400)}${at}`;
}

export class PaneView {
  constructor(model, root, { onBack, onQuietChanged, status, localHost = () => "", viewer = () => null }) {
    this.model = model;
    this.viewer = viewer; // GET /api/me: an operator may also mute for everyone
    this.localHost = localHost;
    this.root = root;
    this.onBack = onBack;
    this.onQuietChanged = onQuietChanged;
    this.status = status;
    this.id = null;
    this.events = [];
    this.why = null; // GET /api/panes/ID's `why`, asked again on each change of the pane
    this.rows = TIMELINE_ROWS;
    // The live screen and its answers: one element kept across redraws (screen.js).
    this.screenRoot = document.createElement("section");
    this.screenRoot.className = "screen-panel";
    this.screen = new ScreenPanel(this.screenRoot, {
      status,
      question: () => this.model.panes.get(this.id)?.msg ?? null,
    });
    model.addEventListener("change", (ev) => {
      const id = ev.detail.pane?.id ?? ev.detail.prev?.id;
      if (this.id && id === this.id) this.load();
    });
    setInterval(() => this.tick(), 1000);
  }

  /** Live timers: "waiting since … (3m)" and the current row's "(now)" grow each second. */
  tick() {
    if (!this.id) return;
    const now = clock.now();
    const wait = this.root.querySelector(".wait[data-since]");
    if (wait) wait.textContent = waitLine(Number(wait.dataset.since), now);
    const cur = this.root.querySelector("td.now[data-at]");
    if (cur) cur.textContent = `${formatDuration(Math.max(0, now - Number(cur.dataset.at)))} (now)`;
  }

  async open(id, { screen = false } = {}) {
    if (id !== this.id) {
      this.rows = TIMELINE_ROWS;
      this.why = null;
    }
    this.id = id;
    this.root.hidden = false;
    this.render();
    // A blocked pane opens on its prompt and buttons, a done one at the end of the
    // agent's last reply (screen.js lands there once the screen arrives). The screen
    // starts once the page around it is drawn (its why line, its history), so nothing
    // drawn after the landing moves the prompt out of view.
    const state = this.model.panes.get(id)?.state;
    const mode = state === "blocked" || state === "done" ? state : null;
    await this.load();
    if (id !== this.id) return;
    // Opened at its screen's address (a notification's) on a done pane: what comes next
    // is the follow-up, so its box takes the focus (docs/answers.md, the taps to it).
    this.screen.start(id, { mode, focus: screen && mode === "done" });
    if (screen && !mode) this.screenRoot.scrollIntoView({ block: "start" });
  }

  close() {
    this.screen.stop();
    this.id = null;
    this.root.hidden = true;
    this.root.replaceChildren();
  }

  async loadWhy() {
    const id = this.id;
    let why = null;
    if (!this.model.panes.get(id)) { // gone (or not known yet): nothing to ask
      this.why = null;
      return;
    }
    try {
      why = (await get(`/api/panes/${encodeURIComponent(id)}`)).why || null;
    } catch { /* the sentence is extra: the page shows the state without it */ }
    if (id !== this.id) return;
    this.why = why;
    // The rows a screen rule matched on, highlighted on the screen (to those who see it).
    this.screen.setHighlight(why?.source === "screen" && Array.isArray(why.lines) ? why.lines : null);
  }

  async load() {
    const id = this.id;
    const why = this.loadWhy();
    try {
      const d = await get(`/api/panes/${encodeURIComponent(id)}/events`);
      if (id !== this.id) return;
      this.events = Array.isArray(d) ? d : d.events || [];
    } catch (e) {
      this.events = [];
      this.error = String(e.message || e);
    }
    await why;
    if (id !== this.id) return;
    this.render();
  }

  render() {
    const p = this.model.panes.get(this.id);
    const root = this.root;
    root.replaceChildren();
    const back = el("button", "back", "← Board");
    back.type = "button";
    back.addEventListener("click", () => this.onBack());
    root.append(back);
    if (!p) {
      root.append(el("p", "muted", "This pane is gone (or not known yet)."));
      return;
    }
    const info = stateInfo(p.state);
    const h = el("h2", `st-${p.state || "none"}`);
    const badge = el("span", "state-badge");
    badge.append(el("span", "icon", info.icon), el("span", "word", info.word));
    h.append(badge, document.createTextNode(" "), el("span", "agent", p.agent || "shell"));
    if (p.kind) h.append(document.createTextNode(" "), el("span", "kind", `(${p.kind})`));
    root.append(h);
    const meta = el("p", "muted");
    meta.textContent = `${clean(p.host)} · ${clean(p.session)}:${clean(p.window)} ${clean(p.pane)}` +
      (p.since && p.state !== "blocked" ? ` · ${info.word} for ${formatDuration(clock.now() - p.since)}` : "") +
      (p.observable ? "" : ` · not observable (${clean(p.process, 80) || "?"} in front)`) +
      (p.stale ? " · last known" : "") +
      (p.collector ? ` · from collector ${clean(p.collector, 80)}` : "");
    root.append(meta);
    if (p.state === "blocked" && p.since) {
      const wait = el("p", "wait", waitLine(p.since, clock.now()));
      wait.dataset.since = String(p.since);
      root.append(wait);
    }
    if (p.msg) root.append(el("p", p.state === "blocked" ? "msg question" : "msg", p.msg));
    // Only while it speaks of the state shown: the stream may be ahead of the last ask.
    if (this.why && (this.why.state ?? null) === (p.state ?? null)) root.append(el("p", "why", whyText(this.why)));
    const lk = !p.state && !p.observable ? p.lastKnown : null;
    if (lk) {
      const what = `${lk.agent ? `${clean(lk.agent, 80)} ` : ""}${stateInfo(lk.state).word}${lk.kind ? ` (${lk.kind})` : ""}`;
      const ago = lk.at ? `, ${formatWait(clock.now() - lk.at)} ago` : "";
      root.append(el("p", "last-known", `last known: ${what}${ago}${lk.msg ? ` — ${clean(lk.msg, 300)}` : ""}`));
    }
    if (p.title) {
      const tl = el("p", "title-line");
      tl.append(el("span", "label", "title"), document.createTextNode(" "), el("span", "title-text", p.title));
      root.append(tl);
    }
    // The screen (and its answers) first, under the thumb; attach and mutes below it.
    root.append(this.screenRoot);
    const cmd = attachCommand(p, this.localHost());
    const attach = el("p", "attach");
    const code = el("code", "attach-cmd", cmd);
    const copy = el("button", "copy-attach", "Copy");
    copy.type = "button";
    copy.addEventListener("click", () => copyText(cmd, copy));
    attach.append(el("span", "label", "attach"), document.createTextNode(" "), code, document.createTextNode(" "), copy);
    root.append(attach);

    const actions = el("div", "actions");
    const seen = el("button", "seen", "Seen (done → idle)");
    seen.type = "button";
    seen.disabled = p.state !== "done";
    seen.addEventListener("click", async () => {
      try {
        await post(`/api/panes/${encodeURIComponent(p.id)}/seen`, {});
        this.status("marked seen");
      } catch (e) { this.status(String(e.message || e)); }
    });
    actions.append(seen);
    // A mute is this account's own; an operator may also mute for everyone (every
    // device, page and channel), which the server allows no one else.
    const operator = Boolean(this.viewer()?.operator);
    for (const [scope, value, label] of [["pane", p.id, "pane"], ["host", p.host, "host"], ["agent", p.agent || "", "agent"]]) {
      if (scope === "agent" && !p.agent) continue;
      const sel = el("select", "snooze");
      sel.setAttribute("aria-label", operator ? `Mute this ${label}` : `Mute this ${label} for you`);
      sel.append(el("option", "", operator ? `Mute this ${label}…` : `Mute this ${label} for you…`));
      const groups = operator ? [["me", "for you", ""], ["everyone", "for everyone", ", for everyone"]] : [["me", "", ""]];
      for (const [audience, title, suffix] of groups) {
        const parent = title ? el("optgroup") : sel;
        if (title) parent.label = title;
        SNOOZES.forEach(([text], i) => {
          const o = el("option", "", text + suffix);
          o.value = `${audience}:${i}`;
          parent.append(o);
        });
        if (parent !== sel) sel.append(parent);
      }
      sel.addEventListener("change", async () => {
        const [audience, i] = sel.value.split(":");
        const pick = SNOOZES[Number(i)];
        sel.selectedIndex = 0;
        if (!pick) return;
        try {
          await post("/api/notify/mutes", { scope, value, minutes: pick[1], audience });
          this.status(`muted ${label} ${pick[0]}${audience === "everyone" ? " for everyone" : " for you"}`);
          this.onQuietChanged();
        } catch (e) { this.status(String(e.message || e)); }
      });
      actions.append(sel);
    }
    root.append(actions);

    this.screen.restore(); // the panel went out of the document and back
    if (p.records.length) {
      // What the programs in the pane reported (OSC 7501 records, one per id): plain words first.
      const h = el("h3", "", "Reported by the programs in this pane");
      h.title = "OSC 7501 records, one per id";
      root.append(h);
      const t = el("table", "records");
      const head = el("tr");
      for (const c of ["id", "state", "kind", "app", "msg", "title"]) head.append(el("th", "", c));
      t.append(head);
      for (const r of p.records) {
        const tr = el("tr");
        for (const c of ["id", "state", "kind", "app", "msg", "title"]) tr.append(el("td", "", r[c] ?? ""));
        t.append(tr);
      }
      root.append(t);
    }

    root.append(el("h3", "", "Timeline"));
    if (this.error && !this.events.length) root.append(el("p", "error", this.error));
    const spans = timeline(this.events, clock.now());
    if (!spans.length) {
      root.append(el("p", "muted", "No history yet."));
      return;
    }
    const total = spans.reduce((s, r) => s + r.duration, 0) || 1;
    const bar = el("div", "timeline-bar");
    bar.setAttribute("aria-hidden", "true");
    for (const r of spans) {
      const s = el("span", `st-${r.state || "none"}`);
      s.style.flexGrow = String(Math.max(r.duration / total, 0.002));
      bar.append(s);
    }
    root.append(bar);
    const t = el("table", "timeline");
    const head = el("tr");
    for (const c of ["from", "state", "for", "agent", "msg"]) head.append(el("th", "", c));
    t.append(head);
    const newest = [...spans].reverse();
    for (const r of newest.slice(0, this.rows)) {
      const tr = el("tr", `st-${r.state || "none"}`);
      tr.append(el("td", "when", when(r.at)));
      const st = el("td", "state-badge");
      const i = stateInfo(r.state);
      setText(st, `${i.icon} ${i.word}${r.kind ? ` (${r.kind})` : ""}`);
      // The msg is clamped inside a div: a cell itself must stay display: table-cell, or
      // the row's cells drift out of their columns.
      const msg = el("td", "t-msg");
      if (r.msg) msg.append(el("div", "clamp", r.msg));
      const dur = el("td", r.current ? "now" : "", formatDuration(r.duration) + (r.current ? " (now)" : ""));
      if (r.current) dur.dataset.at = String(r.at);
      tr.append(st, dur, el("td", "", r.agent ?? ""), msg);
      t.append(tr);
    }
    root.append(t);
    if (newest.length > this.rows) {
      const more = el("button", "timeline-more", `Show more (${newest.length - this.rows} older)`);
      more.type = "button";
      more.addEventListener("click", () => {
        this.rows += 20;
        this.render();
      });
      root.append(more);
    }
  }
}
