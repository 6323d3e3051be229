// "Tell it what next" on an idle or done card: a compact preview of the pane's screen
// and a follow-up box, in the card (docs/answers.md, "A follow-up from the card").
//
// The preview is the pane page's screen subscription (screenwatch.js), started only
// when the reader opens it and stopped when they close it (or leave the board): a
// board nobody opened a preview on captures nothing. The send is the page's own request
// (`POST /api/panes/ID/answer` {fingerprint, text}) with the fingerprint of the screen
// the preview drew, so text typed at the terminal after it was drawn makes it come back
// `changed`, nothing typed; the preview then shows the screen as it is now, and the
// text stays in the box to send again. One preview is open at a time.
//
// The screen is pane output: drawn by renderLines (text nodes, colours as style
// properties), never as markup.

import { clean } from "./sanitize.js";
import { renderLines, trimBlank } from "./screen.js";
import { ScreenWatch, sendToPane } from "./screenwatch.js";

/** Rows of the screen the preview shows: the input box and the end of the last answer. */
export const PREVIEW_ROWS = 8;

/** Why a card takes no follow-up, one sentence each. */
export const NEXT_WHY = {
  disabled: "This host's collector does not type (it runs without --allow-input): tell the agent what next at the terminal.",
  operator: "Sending a follow-up from the board needs the operator role: sign in as an operator, or type at the terminal.",
  readonly: "This link is read-only: sign in as an operator to send a follow-up, or type at the terminal.",
  "no-follow-up": "paneboard reads no input prompt on this screen, so it sends no follow-up: open its screen, or type at the terminal.",
};

const CHANGED = "not typed: its screen changed since the preview was drawn — read it again, then send";

function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = clean(text, 300);
  return e;
}

export class CardNext {
  /** `visible()`: the board is the current view; `changed()`: redraw the cards. */
  constructor({ visible = () => true, changed = () => {} } = {}) {
    this.visible = visible;
    this.changed = changed;
    this.openId = null;
    this.panel = null; // the open preview's elements, kept across the board's redraws
    this.drawn = new WeakMap(); // closed box -> what it shows
    this.watch = new ScreenWatch({
      onShot: () => this.draw(),
      onError: (sentence) => { this.error = sentence; this.draw(); },
    });
  }

  /** A card that may take a follow-up: an agent (not a shell) at rest, seen by its collector. */
  eligible(p) {
    return (p.state === "idle" || p.state === "done") && Boolean(p.agent) && p.observable;
  }

  /** Why this viewer cannot send this card a follow-up, known without its screen. */
  why(p, viewer) {
    if (!p.input) return NEXT_WHY.disabled;
    if (!viewer?.operator) return viewer?.readonly ? NEXT_WHY.readonly : NEXT_WHY.operator;
    return null;
  }

  fill(card, p, viewer) {
    const box = card.querySelector(".card-send");
    if (!box) return;
    if (this.openId === p.id) {
      if (!this.visible()) this.close();
      else {
        if (this.panel.root.parentElement !== box) box.replaceChildren(this.panel.root);
        box.hidden = false;
        return;
      }
    }
    const offer = viewer && this.eligible(p);
    const why = offer ? this.why(p, viewer) : null;
    const key = offer ? (why || "open") : "";
    if (this.drawn.get(box) === key && !box.querySelector(".card-next-panel")) return;
    this.drawn.set(box, key);
    box.hidden = !offer;
    box.replaceChildren();
    if (!offer) return;
    if (why) {
      box.append(el("p", "card-why", why));
      return;
    }
    const b = el("button", "card-next-open", "✎ Tell it what next");
    b.type = "button";
    b.addEventListener("click", (ev) => {
      ev.stopPropagation();
      this.open(p.id, box);
    });
    box.append(b);
  }

  /** Open pane `id`'s preview in `box` (closing any other): its watch starts now. */
  open(id, box) {
    const prev = this.panel?.root.parentElement;
    this.close();
    if (prev) this.reset(prev);
    this.openId = id;
    this.error = null;
    this.note = null;
    const root = el("div", "card-next-panel");
    const screen = el("div", "card-preview");
    screen.setAttribute("aria-label", "the pane's screen, its last rows");
    const why = el("p", "card-why");
    const form = el("form", "card-follow-up");
    const text = el("textarea");
    text.maxLength = 1024;
    text.rows = 2;
    text.placeholder = "What next (typed only if its prompt is still the one shown)";
    text.setAttribute("aria-label", "follow-up");
    const send = el("button", "primary", "Send");
    send.type = "submit";
    const shut = el("button", "card-next-close", "Close");
    shut.type = "button";
    const row = el("div", "card-next-row");
    row.append(send, shut);
    form.append(text, row);
    const note = el("p", "card-answer-outcome");
    note.hidden = true;
    root.append(screen, why, form, note);
    root.addEventListener("click", (ev) => ev.stopPropagation()); // nothing in it opens the pane
    form.addEventListener("submit", (ev) => {
      ev.preventDefault();
      this.send();
    });
    shut.addEventListener("click", () => {
      const at = root.parentElement;
      this.close();
      if (at) this.reset(at);
      this.changed(); // the card offers its button again
    });
    this.panel = { root, screen, why, form, text, send, shut, note, fingerprint: null };
    box.replaceChildren(root);
    box.hidden = false;
    this.watch.start(id);
    this.draw();
    text.focus({ preventScroll: true });
  }

  /** The closed card's box shows its button again at the next fill. */
  reset(box) {
    this.drawn.delete(box);
    box.replaceChildren();
  }

  /** Stop the preview's watch; the server stops capturing once no page asks. */
  close() {
    this.watch.stop();
    this.openId = null;
    this.panel = null;
  }

  /** Where the open card went (the pane is gone, or the board redrew without it). */
  keep(ids) {
    if (this.openId !== null && !ids.has(this.openId)) this.close();
  }

  /** The preview as the newest screen shows it, and whether it takes a follow-up. */
  draw() {
    const pn = this.panel;
    if (!pn) return;
    const shot = this.watch.shot;
    pn.screen.replaceChildren();
    if (!shot || shot.pending) {
      pn.screen.append(el("p", "card-why", this.error || "Reading its screen…"));
    } else if (shot.error) {
      pn.screen.append(el("p", "card-why", shot.error));
    } else {
      const lines = trimBlank(shot.lines || []);
      const pre = renderLines(lines, Math.max(0, lines.length - PREVIEW_ROWS));
      pre.classList.add("card-preview-screen");
      // A rule across the pane (an input box's edges) is clipped, not wrapped: wrapped,
      // each would take the card's few rows twice over.
      for (const r of pre.children) if (/^[\s─━═—_-]{4,}$/.test(r.textContent)) r.classList.add("rule-row");
      pn.screen.append(pre);
      pre.scrollTop = pre.scrollHeight;
    }
    // The fingerprint of the screen just drawn: the one a send names.
    pn.fingerprint = shot && !shot.pending && !shot.error ? shot.fingerprint : null;
    let why = null;
    if (shot && !shot.pending && !shot.error) {
      if (!shot.follow_up) why = NEXT_WHY["no-follow-up"];
      else if (!shot.input) why = NEXT_WHY.disabled;
      else if (!shot.operator) why = NEXT_WHY.operator;
    }
    pn.why.textContent = why || "";
    pn.why.hidden = !why;
    pn.text.disabled = Boolean(why);
    pn.send.disabled = Boolean(why) || !pn.fingerprint || this.sending;
  }

  async send() {
    const pn = this.panel;
    const id = this.openId;
    if (!pn || !pn.fingerprint || this.sending || !pn.text.value.trim()) return;
    this.sending = true;
    pn.send.disabled = true;
    const r = await sendToPane(id, pn.fingerprint, { text: pn.text.value });
    this.sending = false;
    if (this.panel !== pn) return; // closed meanwhile
    if (r.ok) pn.text.value = "";
    pn.note.textContent = r.outcome === "changed" ? CHANGED : r.words;
    pn.note.className = `card-answer-outcome ${r.ok ? "ok" : "failed"}`;
    pn.note.hidden = false;
    this.draw();
  }
}
