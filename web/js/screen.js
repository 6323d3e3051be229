// A pane's screen in its page, kept live while the page is open, and the answers its
// prompt takes (docs/answers.md).
//
// The screen is untrusted terminal output. It is rendered as text: every run of
// characters goes in through textContent, and its SGR colour escapes become inline
// colour properties set one by one (never a style string, never markup). Nothing else
// of a terminal's escapes is interpreted (the collector already dropped them).
//
// Live: the long poll of screenwatch.js, which a card's preview shares (cardnext.js),
// as it shares the request that sends.

import { get } from "./api.js";
import { clean } from "./sanitize.js";
import { OUTCOME_WORDS, ScreenWatch, TYPED, sendToPane } from "./screenwatch.js";

export { OUTCOME_WORDS, TYPED };

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

/** The lines without the blank rows below the last drawn one: a terminal's empty
 * bottom half would push a phone's answer buttons a screen further down. */
export function trimBlank(lines) {
  let end = lines.length;
  while (end > 0 && !runs(String(lines[end - 1])).runs.some(([t]) => t.trim())) end--;
  return lines.slice(0, end);
}

/** The screen's lines as a <pre> of coloured text (no markup from the pane, ever);
 * `from`: the first line drawn (a card's preview), the colours of those above carried. */
export function renderLines(lines, from = 0) {
  const pre = document.createElement("pre");
  pre.className = "screen";
  let state = {};
  for (const [i, line] of lines.entries()) {
    const r = runs(String(line), state);
    state = r.end;
    if (i < from) continue;
    const row = document.createElement("div");
    row.className = "screen-row";
    row.dataset.row = String(i);
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

/** The keys an operator may press (the wire's allow-list), with what a button says. */
const QUICK_KEYS = [
  ["Escape", "Esc"], ["C-c", "Ctrl-C"], ["Enter", "Enter"], ["Tab", "Tab"],
  ["Up", "↑"], ["Down", "↓"], ["Left", "←"], ["Right", "→"], ["y", "y"], ["n", "n"],
  ...["1", "2", "3", "4", "5", "6", "7", "8", "9"].map((d) => [d, d]),
];
/** Keys that stop a turn: confirmed, and pressed only while the same program is in front. */
const INTERRUPTS = new Set(["Escape", "C-c"]);

/** Lines of history a done pane's page asks for from the start: its last reply may
 * have begun above the visible rows. */
const REPLY_SCROLLBACK = 200;

/** An answer that changes the agent's policy for later prompts, not just this one:
 * it asks for a confirmation before it is sent. */
export function changesPolicy(label) {
  return /don['’]t ask again|\balways\b/i.test(String(label || ""));
}

/** Mark the screen's rows `range` = [first, last] (1-based from the top of the visible
 * screen, as a pane's `why.lines` counts them); `top`: the rows of scroll-back above it.
 * Blank rows trimmed off the bottom are simply not there to mark. */
export function markRows(pre, top, range) {
  if (!range) return;
  const rows = pre.children;
  for (let r = Number(range[0]); r <= Number(range[1]) && r - range[0] < rows.length; r++) {
    const row = rows[top + r - 1];
    if (row) {
      row.classList.add("matched");
      row.title = "a screen rule matched this row";
    }
  }
}

export class ScreenPanel {
  constructor(root, { status = () => {}, question = () => null } = {}) {
    this.root = root;
    this.status = status;
    this.question = question; // the pane's own msg, shown above the panel
    this.id = null;
    this.error = null;
    this.watch = new ScreenWatch({
      onShot: () => { this.error = null; this.render(); },
      onError: (sentence) => { this.error = sentence; this.render(); },
    });
    this.audit = [];
    this.note = "";
    this.scrollback = 0; // lines of history asked for ("Show scroll-back")
    this.highlight = null; // [first, last] rows the pane's screen rule matched on (pane.js)
    // Where the screen opens: `bottom` (a blocked pane: its prompt, above its buttons)
    // or `reply` (a done pane: the end of the agent's last reply), held across redraws
    // until the reader scrolls the screen themselves; `land`: the window is still to
    // be brought to it, once, when the first screen arrives.
    this.pin = "bottom";
    this.land = false;
    this.pinnedTop = null;
    this.focusNext = false; // give the follow-up box the focus once it is drawn
  }

  /** The screen shown (the watch's newest). */
  get shot() {
    return this.watch.shot;
  }

  setHighlight(range) {
    const same = JSON.stringify(range) === JSON.stringify(this.highlight);
    this.highlight = range;
    if (!same && this.shot) this.render();
  }

  /** Watch pane `id`; `mode` "blocked" or "done" (its state as the page opens) says
   * where the page lands; `land` false: keep the window where it is; `focus`: the
   * follow-up box takes the focus once drawn (a done pane opened from its
   * notification: what comes next is typing). */
  start(id, { mode = null, land = true, focus = false } = {}) {
    if (this.id === id) return;
    this.stop();
    this.id = id;
    this.error = null;
    this.audit = [];
    this.pin = mode === "done" ? "reply" : "bottom";
    this.land = land && (mode === "blocked" || mode === "done");
    this.scrollback = mode === "done" ? REPLY_SCROLLBACK : 0;
    this.pinnedTop = null;
    this.focusNext = focus;
    this.watch.start(id, this.scrollback);
    this.render();
    this.loadAudit();
  }

  /** The pre's scroll, put back where it was meant to be: the page's redraws take the
   * panel out of the document and back, which resets it. */
  restore() {
    const pre = this.root.querySelector("pre.screen");
    if (!pre) return;
    if (this.pin === "reply") {
      const end = this.shot?.reply_end;
      const row = typeof end === "number" ? pre.querySelector(`[data-row="${end}"]`) : null;
      // the reply's last row at the bottom of the screen box, the input box below it
      pre.scrollTop = row ? Math.max(0, row.offsetTop + row.offsetHeight - pre.clientHeight + 8) : pre.scrollHeight;
    } else if (this.pin === "bottom") {
      pre.scrollTop = pre.scrollHeight;
    } else if (this.pinnedTop !== null) {
      pre.scrollTop = this.pinnedTop;
    }
    this.pinnedTop = pre.scrollTop;
    if (this.land && this.shot && !this.shot.pending && this.shot.lines?.length) {
      this.land = false;
      this.landWindow(pre);
    }
  }

  /** Bring the window to what matters on a phone: a blocked pane's prompt and its
   * buttons, a done pane's screen; the page's header stays in view where it fits. */
  landWindow(pre) {
    const box = this.root.querySelector(".answers");
    const last = this.pin === "bottom" && box && box.childElementCount ? box : pre;
    const bottom = last.getBoundingClientRect().bottom;
    const over = bottom + 8 - window.innerHeight;
    if (over > 0) window.scrollBy(0, Math.min(over, this.root.getBoundingClientRect().top));
  }

  stop() {
    this.watch.stop();
    this.id = null;
    this.root.replaceChildren();
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
    const r = await sendToPane(this.id, shot.fingerprint, body);
    this.note = r.words;
    this.noteOk = r.ok;
    this.status(this.note, r.outcome === null ? undefined : { ok: r.ok });
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

  /** A follow-up for an idle or done agent (several lines: one submission, pasted),
   * and the quick keys for the program in front: Esc and Ctrl-C confirmed first and
   * sent with the process the screen showed; the rest under the screen's fingerprint. */
  renderSend(box, shot) {
    if (shot.follow_up) {
      const form = el("form", "follow-up");
      const input = el("textarea");
      input.maxLength = 1024;
      input.rows = 2;
      input.placeholder = "Tell the agent what next (typed only if its prompt is still the one shown)";
      input.setAttribute("aria-label", "follow-up");
      input.value = this.draft || "";
      input.addEventListener("input", () => { this.draft = input.value; });
      const go = el("button", "answer primary", "Send");
      go.type = "submit";
      form.append(input, go);
      form.addEventListener("submit", async (ev) => {
        ev.preventDefault();
        if (!input.value.trim()) return;
        const text = input.value;
        await this.answer({ text }, go);
        if (this.noteOk) this.draft = "";
      });
      box.append(form);
    }
    if (!shot.process) return;
    const keys = el("div", "quick-keys");
    keys.setAttribute("aria-label", "keys");
    for (const [press, label] of QUICK_KEYS) {
      const b = el("button", "key", label);
      b.type = "button";
      b.dataset.press = press;
      b.addEventListener("click", () => {
        if (INTERRUPTS.has(press)) {
          if (!window.confirm(`Press ${label} in this pane? It stops what the agent is doing.`)) return;
          this.answer({ press, process: shot.process }, b);
        } else {
          this.answer({ press }, b);
        }
      });
      keys.append(b);
    }
    box.append(keys);
  }

  render() {
    const root = this.root;
    // A new screen redraws the panel: the follow-up being written keeps its focus.
    const old = root.querySelector(".follow-up textarea");
    const caret = old && document.activeElement === old ? [old.selectionStart, old.selectionEnd] : null;
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
        this.scrollback = this.scrollback ? 0 : REPLY_SCROLLBACK;
        this.watch.setScrollback(this.scrollback);
      });
      const pre = renderLines(trimBlank(shot.lines));
      // rows above the visible screen (scroll-back) are not counted in `why.lines`
      markRows(pre, Math.max(0, shot.lines.length - (Number(shot.height) || shot.lines.length)), this.highlight);
      // The reader scrolled the screen: it stays where they put it, redraws or not.
      pre.addEventListener("scroll", () => {
        if (this.pinnedTop !== null && Math.abs(pre.scrollTop - this.pinnedTop) > 2) {
          this.pin = null;
          this.pinnedTop = pre.scrollTop;
        }
      }, { passive: true });
      root.append(more, pre);
    }
    // The question once: the page's header shows the pane's own words already.
    if (shot.prompt && shot.prompt !== this.question?.()) root.append(el("p", "msg question screen-prompt", shot.prompt));
    const box = el("div", "answers");
    if (shot.answers?.length || shot.text) {
      // Buttons and the text box only where they can work: otherwise one sentence why.
      if (!shot.input) box.append(el("p", "muted", "This host's collector does not type answers: answer at the terminal (or start its collector with --allow-input)."));
      else if (!shot.operator) box.append(el("p", "muted", "Answering needs a login with the operator role: sign in as an operator, or answer at the terminal."));
      else this.renderAnswers(box, shot);
    }
    if (this.note) box.append(el("p", `answer-outcome ${this.noteOk ? "ok" : "failed"}`, this.note));
    root.append(box);
    // The follow-up text box and the quick keys, under the screen like the answers,
    // only where the collector would type them (docs/answers.md).
    const send = el("div", "send-box");
    if (shot.input && shot.operator) this.renderSend(send, shot);
    else if (shot.follow_up && !shot.input) send.append(el("p", "muted", "This host's collector does not type (it runs without --allow-input): tell the agent what next at the terminal."));
    else if (shot.follow_up) send.append(el("p", "muted", "Sending a follow-up needs a login with the operator role: sign in as an operator, or type at the terminal."));
    send.hidden = !send.childElementCount;
    root.append(send);
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
    const ta = root.querySelector(".follow-up textarea");
    if (caret && ta) {
      ta.focus();
      ta.setSelectionRange(caret[0], caret[1]);
    } else if (this.focusNext && ta) {
      this.focusNext = false;
      ta.focus({ preventScroll: true }); // the landing on the reply stays where it is
    }
    this.restore();
  }
}
