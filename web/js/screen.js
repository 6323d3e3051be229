// A pane's screen in its page, kept live while the page is open, and the answers its
// prompt takes (docs/answers.md).
//
// The screen is untrusted terminal output. It is rendered as text: every run of
// characters goes in through textContent, and its SGR colour escapes become inline
// colour properties set one by one (never a style string, never markup). Nothing else
// of a terminal's escapes is interpreted (the collector already dropped them).
//
// Live: a long poll (`GET /api/panes/ID/screen?after=FINGERPRINT&wait=20`) that the
// server answers as soon as the collector sends a newer screen.

import { get, post } from "./api.js";
import { clean } from "./sanitize.js";

const PALETTE = [
  "#000000", "#cd3131", "#0dbc79", "#e5e510", "#2472c8", "#bc3fbc", "#11a8cd", "#e5e5e5",
  "#666666", "#f14c4c", "#23d18b", "#f5f543", "#3b8eea", "#d670d6", "#29b8db", "#ffffff",
];

function color256(n) {
  if (n < 16) return PALETTE[n];
  if (n < 232) {
    const v = [0, 95, 135, 175, 215, 255];
    const i = n - 16;
    return `rgb(${v[Math.floor(i / 36)]}, ${v[Math.floor(i / 6) % 6]}, ${v[i % 6]})`;
  }
  const g = 8 + (n - 232) * 10;
  return `rgb(${g}, ${g}, ${g})`;
}

const byte = (v) => Math.max(0, Math.min(255, Number(v) || 0));

/** Apply one SGR parameter list to a style state (pure: returns the new state). */
export function applySgr(state, params) {
  const s = { ...state };
  const p = params.length ? params : [0];
  for (let i = 0; i < p.length; i++) {
    const n = p[i];
    if (n === 0) Object.assign(s, { fg: null, bg: null, bold: false, dim: false, italic: false, underline: false, inverse: false });
    else if (n === 1) s.bold = true;
    else if (n === 2) s.dim = true;
    else if (n === 3) s.italic = true;
    else if (n === 4) s.underline = true;
    else if (n === 7) s.inverse = true;
    else if (n === 22) { s.bold = false; s.dim = false; }
    else if (n === 23) s.italic = false;
    else if (n === 24) s.underline = false;
    else if (n === 27) s.inverse = false;
    else if (n >= 30 && n <= 37) s.fg = PALETTE[n - 30];
    else if (n >= 90 && n <= 97) s.fg = PALETTE[n - 90 + 8];
    else if (n >= 40 && n <= 47) s.bg = PALETTE[n - 40];
    else if (n >= 100 && n <= 107) s.bg = PALETTE[n - 100 + 8];
    else if (n === 39) s.fg = null;
    else if (n === 49) s.bg = null;
    else if (n === 38 || n === 48) {
      let c = null;
      if (p[i + 1] === 5) { c = color256(byte(p[i + 2])); i += 2; }
      else if (p[i + 1] === 2) { c = `rgb(${byte(p[i + 2])}, ${byte(p[i + 3])}, ${byte(p[i + 4])})`; i += 4; }
      if (n === 38) s.fg = c; else s.bg = c;
    }
  }
  return s;
}

/** One screen line as [text, style] runs: the only escapes read are SGR. */
export function runs(line, start = {}) {
  const out = [];
  let state = { ...start };
  const re = /\x1b\[([0-9;:]*)m/g;
  let pos = 0;
  let m;
  while ((m = re.exec(line)) !== null) {
    if (m.index > pos) out.push([line.slice(pos, m.index), state]);
    state = applySgr(state, m[1].split(/[;:]/).filter((x) => x !== "").map(Number));
    pos = re.lastIndex;
  }
  if (pos < line.length) out.push([line.slice(pos), state]);
  return { runs: out.map(([t, st]) => [t.replace(/\x1b/g, ""), st]), end: state };
}

function span(text, st) {
  const s = document.createElement("span");
  s.textContent = clean(text);
  let fg = st.fg, bg = st.bg;
  if (st.inverse) [fg, bg] = [bg || "#e5e5e5", fg || "#111111"];
  if (fg) s.style.color = fg;
  if (bg) s.style.backgroundColor = bg;
  if (st.bold) s.style.fontWeight = "bold";
  if (st.dim) s.style.opacity = "0.7";
  if (st.italic) s.style.fontStyle = "italic";
  if (st.underline) s.style.textDecoration = "underline";
  return s;
}

/** The screen's lines as a <pre> of coloured text (no markup from the pane, ever). */
export function renderLines(lines) {
  const pre = document.createElement("pre");
  pre.className = "screen";
  let state = {};
  for (const line of lines) {
    const row = document.createElement("div");
    row.className = "screen-row";
    const r = runs(String(line), state);
    state = r.end;
    for (const [t, st] of r.runs) row.append(span(t, st));
    if (!r.runs.length) row.append(document.createTextNode(" "));
    pre.append(row);
  }
  return pre;
}

function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = clean(text);
  return e;
}

const OUTCOME_WORDS = {
  typed: "typed ✓",
  changed: "not typed: the screen changed since you saw it",
  "not-blocked": "not typed: the pane is no longer waiting",
  disabled: "not typed: this host's collector does not type answers (--allow-input)",
  expired: "not typed: the answer expired before it could be typed",
  offline: "not typed: the pane's collector is not connected",
  used: "not typed: this prompt was answered already",
  refused: "not typed: the prompt does not take that answer",
  forbidden: "not typed: answering needs the operator role",
};

const NO_SCREENS = "Screens are not shown to this viewer link. Ask the board's owner for a link that shows screens, or sign in.";

/** Outcomes that mean the answer went in: shown in the success colour, not the warning one. */
const TYPED = new Set(["typed"]);

/** An answer that changes the agent's policy for later prompts, not just this one:
 * it asks for a confirmation before it is sent. */
export function changesPolicy(label) {
  return /don['’]t ask again|\balways\b/i.test(String(label || ""));
}

export class ScreenPanel {
  constructor(root, { status = () => {} } = {}) {
    this.root = root;
    this.status = status;
    this.id = null;
    this.shot = null;
    this.gen = 0;
    this.audit = [];
    this.note = "";
    this.scrollback = 0; // lines of history asked for ("Show scroll-back")
  }

  start(id) {
    if (this.id === id) return;
    this.stop();
    this.id = id;
    this.shot = null;
    this.audit = [];
    const gen = ++this.gen;
    this.render();
    this.loop(gen);
    this.loadAudit();
  }

  stop() {
    this.gen++;
    this.id = null;
    this.root.replaceChildren();
  }

  async loop(gen) {
    let failures = 0;
    while (gen === this.gen) {
      const since = this.shot?.rev;
      const sb = this.scrollback ? `&scrollback=${this.scrollback}` : "";
      const q = (typeof since === "number" ? `?wait=20&since=${since}` : "?wait=5") + sb;
      try {
        const shot = await get(`/api/panes/${encodeURIComponent(this.id)}/screen${q}`);
        if (gen !== this.gen) return;
        failures = 0;
        const changed = !this.shot || shot.rev !== this.shot.rev || shot.fingerprint !== this.shot.fingerprint;
        this.shot = shot;
        if (changed) this.render();
        if (!shot.online || shot.error) await new Promise((r) => setTimeout(r, 3000));
      } catch (e) {
        if (gen !== this.gen) return;
        // Not allowed to see screens: say why in a person's words and stop asking.
        const denied = e.status === 403;
        this.error = denied ? NO_SCREENS : String(e.message || e);
        this.render();
        if (denied) return;
        failures++;
        await new Promise((r) => setTimeout(r, Math.min(30000, 1000 * 2 ** failures)));
      }
    }
  }

  async loadAudit() {
    const id = this.id;
    try {
      const d = await get(`/api/panes/${encodeURIComponent(id)}/answers?limit=20`);
      if (id !== this.id) return;
      this.audit = d.answers || [];
      this.render();
    } catch { /* the audit is extra */ }
  }

  async answer(body, button, label = "") {
    const shot = this.shot;
    if (!shot?.fingerprint) return;
    if (changesPolicy(label) && !window.confirm(`Answer “${clean(label, 200)}”?\n\nThis changes what the agent asks from now on, not just this once.`)) return;
    for (const b of this.root.querySelectorAll(".answers button")) b.disabled = true;
    if (button) button.classList.add("sending");
    try {
      const r = await post(`/api/panes/${encodeURIComponent(this.id)}/answer`, { fingerprint: shot.fingerprint, ...body });
      this.note = OUTCOME_WORDS[r.outcome] || r.outcome;
      this.noteOk = TYPED.has(r.outcome);
      this.status(this.note, { ok: this.noteOk });
    } catch (e) {
      this.noteOk = false;
      this.note = String(e.message || e);
      this.status(this.note);
    }
    this.render();
    this.loadAudit();
  }

  /** The prompt's answers: the first (the prompt's default) primary, a policy-changing
   * one marked and confirmed before it is sent. */
  renderAnswers(box, shot) {
    (shot.answers || []).forEach((a, i) => {
      const policy = changesPolicy(a.label);
      const b = el("button", `answer${i === 0 ? " primary" : ""}${policy ? " policy" : ""}`, a.label);
      b.type = "button";
      b.dataset.answer = a.id;
      b.addEventListener("click", () => this.answer({ answer: a.id }, b, a.label));
      box.append(b);
    });
    if (shot.text) {
      const form = el("form", "answer-text");
      const input = el("input");
      input.type = "text";
      input.maxLength = 1024;
      input.placeholder = "Type an answer (sent as text, then Enter)";
      input.setAttribute("aria-label", "answer text");
      const send = el("button", "answer", "Send");
      send.type = "submit";
      form.append(input, send);
      form.addEventListener("submit", (ev) => {
        ev.preventDefault();
        if (input.value) this.answer({ text: input.value }, send);
      });
      box.append(form);
    }
  }

  render() {
    const root = this.root;
    root.replaceChildren();
    root.append(el("h3", "", "Screen"));
    const shot = this.shot;
    if (!shot) {
      root.append(el("p", "muted", this.error ? this.error : "Reading the screen…"));
      return;
    }
    if (shot.error) root.append(el("p", "error", shot.error));
    else if (shot.pending) root.append(el("p", "muted", "Waiting for the collector's first capture…"));
    // The context first, the buttons after it: on a phone one reads the prompt and the
    // screen before reaching anything to tap.
    if (shot.lines?.length) {
      const more = el("button", "scrollback", this.scrollback ? "Hide scroll-back" : "Show scroll-back");
      more.type = "button";
      more.addEventListener("click", () => {
        this.scrollback = this.scrollback ? 0 : 200;
        const gen = ++this.gen;
        this.shot = { ...this.shot, rev: undefined };
        this.loop(gen);
      });
      const pre = renderLines(shot.lines);
      root.append(more, pre);
      if (this.scrollback) pre.scrollTop = pre.scrollHeight;
    }
    if (shot.prompt) root.append(el("p", "msg question screen-prompt", shot.prompt));
    const box = el("div", "answers");
    if (shot.answers?.length || shot.text) {
      // Buttons and the text box only where they can work: otherwise one sentence why.
      if (!shot.input) box.append(el("p", "muted", "This host's collector does not type answers: answer at the terminal (or start its collector with --allow-input)."));
      else if (!shot.operator) box.append(el("p", "muted", "Answering needs a login with the operator role: sign in as an operator, or answer at the terminal."));
      else this.renderAnswers(box, shot);
    }
    if (this.note) box.append(el("p", `answer-outcome ${this.noteOk ? "ok" : "failed"}`, this.note));
    root.append(box);
    if (this.audit.length) {
      root.append(el("h3", "", "Answers from the board"));
      const t = el("table", "audit");
      const head = el("tr");
      for (const c of ["when", "who", "answer", "outcome"]) head.append(el("th", "", c));
      t.append(head);
      for (const a of this.audit) {
        const tr = el("tr", `outcome-${a.outcome}`);
        tr.append(
          el("td", "", new Date(a.t * 1000).toLocaleTimeString()),
          el("td", "", a.who),
          el("td", "", a.label || a.answer || (a.text != null ? `“${a.text}”` : "text")),
          // a burst of one credential's refusals is one row: how many it stands for
          el("td", "", a.count > 1 ? `${a.outcome} ×${a.count}` : a.outcome),
        );
        t.append(tr);
      }
      root.append(t);
    }
  }
}
