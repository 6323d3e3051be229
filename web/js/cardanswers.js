// A blocked card's answers on the board itself: the common approval in two taps
// (docs/answers.md, "From the board's card").
//
// What a card offers is what the Web Push offers, by the same rule on the server
// (`GET /api/offers`, answers/offer.py: the first two answers that change no standing
// permission, "1. Yes" as the prompt numbers it), and it is answered by the same
// request as the pane page's buttons and the push's (`POST /api/panes/ID/answer` with
// the fingerprint of the prompt the card showed): the server and the collector check
// it all again on a fresh capture. The first tap only asks; the second types. The
// question takes the place of the buttons and the confirmation sits below it, so the
// second tap of a double-tap lands on the question, never on the confirmation; and a
// click the browser counts as the second of a double-click (`detail` > 1) is ignored.
// Where a card offers nothing, it says why in one sentence.

import { get } from "./api.js";
import { possiblyWaiting } from "./model.js";
import { clean } from "./sanitize.js";
import { sendToPane } from "./screenwatch.js";

/** Seconds between two reads of the blocked cards' offers while the board is shown. */
const POLL = 2;
/** Panes one read asks about (the server's limit). */
const ASK_MAX = 64;

/** Why a blocked card offers no answer, one sentence each. */
export const WHY = {
  disabled: "This host's collector does not type answers (it runs without --allow-input): answer at the terminal.",
  operator: "Answering from the board needs the operator role: sign in as an operator, or answer at the terminal.",
  readonly: "This link is read-only: sign in as an operator to answer, or answer at the terminal.",
  "not-recognised": "paneboard does not recognise this prompt, so it offers no answer: open its screen, or answer at the terminal.",
  offline: "Its collector is not connected to the board: answer at the terminal.",
  "no-screen": "Its collector shows no screen of it (screens are off for that host): answer at the terminal.",
  hidden: "The program in front of it (ssh, a container…) hides the agent from its collector: answer at the terminal.",
  pending: "Reading its screen…",
};

/** A prompt that takes only typed text: the card sends the reader to the screen's text box. */
const TEXT_ONLY = "This prompt takes a typed answer: open its screen to type it.";

function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = clean(text, 300);
  return e;
}

export class CardAnswers {
  /** `visible()`: the board is the current view (no reads while a pane page is open);
   * `changed()`: redraw the cards (an offer came or went). */
  constructor({ visible = () => true, changed = () => {} } = {}) {
    this.visible = visible;
    this.changed = changed;
    this.offers = new Map(); // pane id -> the server's offer for its card
    this.armed = new Map(); // pane id -> {id, label, fingerprint}: first tap made
    this.notes = new Map(); // pane id -> {text, ok}: the last answer's outcome
    this.sending = new Set();
    this.drawn = new WeakMap(); // box -> what it shows (redrawn only when that changes)
    this.wanted = [];
    this.denied = false;
    this.timer = null;
  }

  /** Which panes deserve an offer: blocked, seen, on a host that types answers, for an
   * operator allowed to see screens. Reads start (or stop) accordingly. */
  want(panes, viewer) {
    const ok = viewer?.operator && viewer?.screens && !this.denied;
    const ids = ok ? panes.filter((p) => p.state === "blocked" && p.observable && p.input).map((p) => p.id) : [];
    const had = this.wanted.join(",");
    this.wanted = ids.slice(0, ASK_MAX);
    for (const id of [...this.offers.keys()]) if (!this.wanted.includes(id)) this.forget(id);
    if (this.wanted.length && this.wanted.join(",") !== had) this.schedule(0);
  }

  forget(id) {
    this.offers.delete(id);
    this.armed.delete(id);
    this.notes.delete(id);
  }

  schedule(seconds) {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.read(), seconds * 1000);
  }

  async read() {
    if (!this.wanted.length) return;
    if (!this.visible()) return this.schedule(POLL);
    const q = this.wanted.map((id) => `pane=${encodeURIComponent(id)}`).join("&");
    let changed = false;
    try {
      const d = await get(`/api/offers?${q}`);
      for (const o of d.offers || []) {
        const id = String(o.pane_id);
        if (!this.wanted.includes(id)) continue;
        const old = this.offers.get(id);
        if (JSON.stringify(old) !== JSON.stringify(o)) changed = true;
        this.offers.set(id, o);
        // The prompt moved on under a first tap: that tap was for another prompt.
        const armed = this.armed.get(id);
        if (armed && armed.fingerprint !== o.fingerprint) this.armed.delete(id);
      }
    } catch (e) {
      if (e.status === 403) this.denied = true; // screens not shown to this viewer
    }
    if (changed) this.changed();
    if (!this.denied) this.schedule(POLL);
  }

  /** Does this card's prompt offer answers or text right now ("⌨ takes answers")? */
  takes(p) {
    const o = this.offers.get(p.id);
    return Boolean(p.state === "blocked" && o && !o.why && (o.answers.length || o.text));
  }

  /** Why a blocked card offers nothing (a sentence), or null where it offers something. */
  why(p, viewer) {
    if (!p.observable) return WHY.hidden;
    if (!p.input) return WHY.disabled;
    if (!viewer?.operator) return viewer?.readonly ? WHY.readonly : WHY.operator;
    const o = this.offers.get(p.id);
    if (!o) return this.denied ? WHY.operator : WHY.pending;
    return o.why ? WHY[o.why] || WHY["not-recognised"] : null;
  }

  /** Fill a card's answer box: the answers, the confirmation, or why not. */
  fill(card, p, viewer) {
    const box = card.querySelector(".card-answers");
    if (!box) return;
    // blocked, or possibly still waiting behind a program that hides it
    const blocked = p.state === "blocked" || possiblyWaiting(p);
    box.hidden = !blocked;
    if (!blocked) {
      this.drawn.delete(box);
      box.replaceChildren();
      return;
    }
    const why = this.why(p, viewer);
    const o = why ? null : this.offers.get(p.id);
    const view = {
      why, fp: o?.fingerprint, answers: o?.answers, text: o?.text,
      armed: this.armed.get(p.id) || null, note: this.notes.get(p.id) || null, sending: this.sending.has(p.id),
    };
    const key = JSON.stringify(view);
    if (this.drawn.get(box) === key) return;
    this.drawn.set(box, key);
    box.replaceChildren();
    if (why) {
      box.append(el("p", "card-why", why));
    } else if (view.armed) {
      this.drawConfirm(box, p, view.armed, view.sending);
    } else if (o.answers.length) {
      const row = el("div", "card-answer-row");
      o.answers.forEach((a, i) => {
        const b = el("button", `card-answer${i === 0 ? " primary" : ""}`, a.label);
        b.type = "button";
        b.dataset.answer = a.id;
        b.addEventListener("click", (ev) => {
          ev.stopPropagation();
          this.notes.delete(p.id);
          this.armed.set(p.id, { id: a.id, label: a.label, fingerprint: o.fingerprint });
          this.changed();
        });
        row.append(b);
      });
      box.append(row);
    } else {
      box.append(el("p", "card-why", TEXT_ONLY));
    }
    if (view.note) box.append(el("p", `card-answer-outcome ${view.note.ok ? "ok" : "failed"}`, view.note.text));
  }

  drawConfirm(box, p, armed, sending) {
    // The question where the tapped button was: a double-tap's second tap lands here.
    box.append(el("p", "card-confirm-q", `Type “${clean(armed.label, 80)}” into this pane?`));
    const row = el("div", "card-confirm-row");
    const yes = el("button", "card-confirm primary", `✓ Type “${clean(armed.label, 60)}”`);
    yes.type = "button";
    yes.disabled = sending;
    yes.addEventListener("click", (ev) => {
      ev.stopPropagation();
      if (ev.detail > 1) return; // the second click of a double-click: not a decision
      this.send(p.id, armed);
    });
    const cancel = el("button", "card-cancel", "Cancel");
    cancel.type = "button";
    cancel.addEventListener("click", (ev) => {
      ev.stopPropagation();
      this.armed.delete(p.id);
      this.changed();
    });
    row.append(yes, cancel);
    box.append(row);
  }

  /** The second tap: the answer, with the fingerprint of the prompt the card showed. */
  async send(id, armed) {
    if (this.sending.has(id)) return;
    this.sending.add(id);
    this.changed();
    const r = await sendToPane(id, armed.fingerprint, { answer: armed.id });
    const note = { text: r.ok ? `${armed.label}: ${r.words}` : r.words, ok: r.ok };
    this.sending.delete(id);
    this.armed.delete(id);
    this.notes.set(id, note);
    this.changed();
    this.schedule(0);
  }
}
