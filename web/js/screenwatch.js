// A pane's screen, kept live while someone looks at it, and what is sent to the pane:
// shared by the pane's page (screen.js) and a card's preview (cardnext.js), so both
// watch and send alike (docs/answers.md).
//
// Live: a long poll (`GET /api/panes/ID/screen?since=REV&wait=20`) that the server
// answers as soon as the collector sends a newer screen. A pane is captured only while
// some page asks (the server's watch runs out `WATCH_FOR` after the last ask), so
// `stop()` also aborts the request in flight: nothing keeps asking for a screen that
// nobody shows.

import { get, post } from "./api.js";

export const NO_SCREENS = "Screens are not shown to this viewer link. Ask the board's owner for a link that shows screens, or sign in.";

export const OUTCOME_WORDS = {
  typed: "typed ✓",
  changed: "not typed: the screen changed since you saw it",
  "not-blocked": "not typed: the pane is no longer in the state you saw (waiting, or idle for a follow-up)",
  disabled: "not typed: this host's collector does not type answers (--allow-input)",
  expired: "not typed: the answer expired before it could be typed",
  offline: "not typed: the pane's collector is not connected",
  used: "not typed: this prompt was answered already",
  refused: "not typed: the prompt does not take that answer",
  "not-in-front": "not typed: the program that asked is no longer in front of its pane (or a shell is, which would run the text)",
  forbidden: "not typed: answering needs the operator role",
};

/** Outcomes that mean the answer went in: shown in the success colour, not the warning one. */
export const TYPED = new Set(["typed"]);

/** Send pane `id` an answer, a text or a key (`body`), under the `fingerprint` of the
 * screen the reader was shown: the server and the collector check it again on a fresh
 * capture. Never throws: {outcome (null when the request failed), words, ok}. */
export async function sendToPane(id, fingerprint, body) {
  try {
    const r = await post(`/api/panes/${encodeURIComponent(id)}/answer`, { fingerprint, ...body });
    return { outcome: r.outcome, words: OUTCOME_WORDS[r.outcome] || String(r.outcome), ok: TYPED.has(r.outcome) };
  } catch (e) {
    return { outcome: null, words: String(e.message || e), ok: false };
  }
}

/** One pane's screen while it is looked at. `onShot(shot)` when a newer screen (or the
 * first) arrives; `onError(sentence, denied)` when a request fails (`denied`: 403, this
 * viewer sees no screens, and the watch stops asking). */
export class ScreenWatch {
  constructor({ onShot = () => {}, onError = () => {} } = {}) {
    this.onShot = onShot;
    this.onError = onError;
    this.id = null;
    this.shot = null;
    this.scrollback = 0;
    this.gen = 0;
    this.abort = null;
  }

  /** Watch pane `id`, with `scrollback` lines of history. */
  start(id, scrollback = 0) {
    this.stop();
    this.id = id;
    this.shot = null;
    this.scrollback = scrollback;
    this.run();
  }

  /** Ask again with another scroll-back (the screen is redrawn when it comes). */
  setScrollback(lines) {
    if (this.id === null) return;
    this.scrollback = lines;
    if (this.shot) this.shot = { ...this.shot, rev: undefined };
    this.run();
  }

  stop() {
    this.gen++;
    if (this.abort) this.abort.abort();
    this.abort = null;
    this.id = null;
  }

  run() {
    if (this.abort) this.abort.abort();
    const gen = ++this.gen;
    this.abort = new AbortController();
    this.loop(gen, this.abort.signal);
  }

  async loop(gen, signal) {
    let failures = 0;
    while (gen === this.gen) {
      const since = this.shot?.rev;
      const sb = this.scrollback ? `&scrollback=${this.scrollback}` : "";
      const q = (typeof since === "number" ? `?wait=20&since=${since}` : "?wait=5") + sb;
      try {
        const shot = await get(`/api/panes/${encodeURIComponent(this.id)}/screen${q}`, { signal });
        if (gen !== this.gen) return;
        failures = 0;
        const changed = !this.shot || shot.rev !== this.shot.rev || shot.fingerprint !== this.shot.fingerprint;
        this.shot = shot;
        if (changed) this.onShot(shot);
        if (!shot.online || shot.error) await new Promise((r) => setTimeout(r, 3000));
      } catch (e) {
        if (gen !== this.gen) return;
        // Not allowed to see screens: say why in a person's words and stop asking.
        const denied = e.status === 403;
        this.onError(denied ? NO_SCREENS : String(e.message || e), denied);
        if (denied) return;
        failures++;
        await new Promise((r) => setTimeout(r, Math.min(30000, 1000 * 2 ** failures)));
      }
    }
  }
}
