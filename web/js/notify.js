// Desktop notifications from the page. When a pane goes blocked, error or done and
// nobody is looking at it (this tab hidden or unfocused, its card scrolled away, or
// another pane's page open), one tab -- the leader, elected with the Web Locks API --
// beeps (blocked/error, when the sound switch is on) and shows a Notification tagged with the pane id, so each pane has at most one on
// screen and a newer one replaces it. Tabs tell each other what they are watching over
// a BroadcastChannel, and tell the server over POST /api/watch so it only sends Web
// Push when no tab of this viewer is watching. No debounce of one pane's states (the
// classifier debounces screen-inferred ones); but changes that come within GROUP_MS of
// each other are one notification ("5 agents waiting: …"), and a change older than
// REPLAY_S (what happened while the page was closed or away, delivered when the stream
// catches up) is not notified at all: the board and the title show it. Each
// notification shown is reported to the server's log (POST /api/notify/shown).

import { post } from "./api.js";
import { clean } from "./sanitize.js";
import { clock, stateInfo } from "./model.js";
import { quietReason } from "./quiet.js";

const TAB = Math.random().toString(36).slice(2) + Date.now().toString(36);
const PEER_TTL_MS = 12000;
const HEARTBEAT_MS = 5000;
const SERVER_HEARTBEAT_MS = 20000;
const NOTIFY_STATES = new Set(["blocked", "error", "done"]);
// The beep is for a pane that now needs you: waiting on a question, or failed.
const SOUND_STATES = new Set(["blocked", "error"]);
const SOUND_KEY = "paneboard.sound";
const DONE_KEY = "paneboard.notifyDone";
export const GROUP_MS = 1000;
export const REPLAY_S = 30;

/** This browser's switch for "done" notifications (on until switched off). */
export const doneSwitch = {
  get on() {
    try { return localStorage.getItem(DONE_KEY) !== "off"; } catch { return true; }
  },
  set(on) {
    try { localStorage.setItem(DONE_KEY, on ? "on" : "off"); } catch { /* private mode */ }
  },
};

/** The sound switch, remembered in this browser; off until someone turns it on. */
export const sound = {
  get on() {
    try { return localStorage.getItem(SOUND_KEY) === "on"; } catch { return false; }
  },
  set(on) {
    try { localStorage.setItem(SOUND_KEY, on ? "on" : "off"); } catch { /* private mode */ }
  },
};

export class Notifier {
  constructor(model, { isPaneOnScreen, currentPane, getQuiet }) {
    this.model = model;
    this.isPaneOnScreen = isPaneOnScreen;
    this.currentPane = currentPane;
    this.getQuiet = getQuiet;
    this.leader = false;
    this.peers = new Map(); // tab -> {watching, panes:Set, pane, at}
    this.audio = null;
    this.lastServerBeat = 0;
    this.pending = [];
    this.pendingTimer = null;
    this.channel = "BroadcastChannel" in window ? new BroadcastChannel("paneboard") : null;
    if (this.channel) this.channel.onmessage = (ev) => this.onPeer(ev.data);
    this.elect();
    model.addEventListener("change", (ev) => this.onChange(ev.detail));
    const beat = () => this.heartbeat();
    document.addEventListener("visibilitychange", beat);
    window.addEventListener("focus", beat);
    window.addEventListener("blur", beat);
    window.addEventListener("pagehide", () => this.bye());
    window.addEventListener("pageshow", (ev) => { if (ev.persisted) beat(); }); // back from the cache
    setInterval(beat, HEARTBEAT_MS);
    // Audio must be unlocked by a user gesture; the first click or key does it.
    const unlock = () => { this.ensureAudio(); };
    window.addEventListener("pointerdown", unlock, { once: true });
    window.addEventListener("keydown", unlock, { once: true });
    beat();
  }

  /** The tab goes away: its peers and the server stop counting it as watching at once,
   * so a push is not held back for the server's watch TTL by a tab that is closed. */
  bye() {
    this.say({ type: "bye", tab: TAB });
    this.lastWatching = false;
    post("/api/watch", { tab: TAB, watching: false, pane: null }, { keepalive: true }).catch(() => {});
  }

  elect() {
    if (navigator.locks) {
      navigator.locks.request("paneboard-notifier", () => {
        this.leader = true;
        document.documentElement.dataset.notifyLeader = "1";
        return new Promise(() => {}); // held until the tab goes away
      });
    } else {
      this.leader = true; // no Web Locks: every tab is its own leader
    }
  }

  watching() {
    return document.visibilityState === "visible" && document.hasFocus();
  }

  myView() {
    return { watching: this.watching(), pane: this.currentPane() };
  }

  say(msg) {
    if (this.channel) this.channel.postMessage(msg);
  }

  onPeer(msg) {
    if (!msg || typeof msg !== "object") return;
    if (msg.type === "bye") { this.peers.delete(msg.tab); return; }
    if (msg.type === "watch") {
      this.peers.set(msg.tab, { watching: !!msg.watching, panes: new Set(msg.panes || []), pane: msg.pane || null, at: Date.now() });
    }
  }

  visiblePanes() {
    const out = [];
    for (const id of this.model.panes.keys()) if (this.isPaneOnScreen(id)) out.push(id);
    return out;
  }

  heartbeat() {
    const v = this.myView();
    this.say({ type: "watch", tab: TAB, watching: v.watching, pane: v.pane, panes: v.watching ? this.visiblePanes() : [] });
    const now = Date.now();
    const changed = this.lastWatching !== v.watching;
    if (changed || now - this.lastServerBeat > SERVER_HEARTBEAT_MS) {
      this.lastWatching = v.watching;
      this.lastServerBeat = now;
      post("/api/watch", { tab: TAB, watching: v.watching, pane: v.pane }).catch(() => {});
    }
  }

  /** Is anyone -- this tab or another of ours -- looking at this pane right now? */
  someoneWatches(id) {
    if (this.watching() && (this.currentPane() === id || this.isPaneOnScreen(id))) return true;
    const now = Date.now();
    for (const [tab, p] of this.peers) {
      if (now - p.at > PEER_TTL_MS) { this.peers.delete(tab); continue; }
      if (p.watching && (p.pane === id || p.panes.has(id))) return true;
    }
    return false;
  }

  onChange({ pane, prev }) {
    if (!pane || !NOTIFY_STATES.has(pane.state)) return;
    if (prev && prev.state === pane.state) return;
    if (!this.leader) return;
    if (pane.since !== null && clock.now() - pane.since > REPLAY_S) return; // old news, caught up
    if (pane.state === "done" && !doneSwitch.on) return;
    if (this.someoneWatches(pane.id)) return;
    if (quietReason(this.getQuiet(), pane)) return;
    this.pending = this.pending.filter((p) => p.id !== pane.id);
    this.pending.push(pane);
    if (!this.pendingTimer) this.pendingTimer = setTimeout(() => this.flush(), GROUP_MS);
  }

  /** What gathered within GROUP_MS: one notification, of one pane or of the lot. */
  flush() {
    this.pendingTimer = null;
    const panes = this.pending.filter((p) => NOTIFY_STATES.has(this.model.panes.get(p.id)?.state ?? p.state));
    this.pending = [];
    if (!panes.length) return;
    if (sound.on && panes.some((p) => SOUND_STATES.has(p.state))) this.beep();
    if (panes.length === 1) this.show(panes[0]);
    else this.showGroup(panes);
  }

  report(panes, reason) {
    const states = new Set(panes.map((p) => p.state));
    const state = states.size === 1 ? panes[0].state : null;
    post("/api/notify/shown", { panes: panes.slice(0, 100).map((p) => p.id), state, reason }).catch(() => {});
  }

  showGroup(panes) {
    if (!("Notification" in window) || Notification.permission !== "granted") return;
    const blocked = panes.filter((p) => p.state === "blocked").length;
    const title = blocked === panes.length ? `⚠ ${panes.length} agents waiting` : `${panes.length} agents need you`;
    const lines = panes.slice(0, 6).map((p) => `${clean(p.agent, 40) || "shell"} ${stateInfo(p.state).word} · ${clean(p.host, 60)}${p.msg ? `: ${clean(p.msg, 60)}` : ""}`);
    if (panes.length > 6) lines.push(`… and ${panes.length - 6} more`);
    const opts = { body: lines.join("\n"), tag: "paneboard-burst", renotify: true, icon: "/icons/icon-192.png", data: { pane: "" } };
    this.notify(title, opts, () => { location.hash = "#/"; });
    this.report(panes, "grouped");
  }

  notify(title, opts, onClick) {
    try {
      const n = new Notification(title, opts);
      n.onclick = () => { window.focus(); onClick(); n.close(); };
    } catch {
      // Android Chrome only allows notifications from the service worker.
      navigator.serviceWorker?.ready.then((reg) => reg.showNotification(title, opts)).catch(() => {});
    }
  }

  show(pane) {
    if (!("Notification" in window) || Notification.permission !== "granted") return;
    const info = stateInfo(pane.state);
    const who = clean(pane.agent, 80) || "shell";
    const title = `${info.icon} ${who} ${info.word}${pane.kind ? ` (${pane.kind})` : ""}`;
    const body = [clean(pane.msg, 300), `${clean(pane.host, 80)} · ${clean(pane.session, 80)}:${clean(pane.window, 40)}`]
      .filter(Boolean).join("\n");
    const opts = { body, tag: pane.id, renotify: true, icon: "/icons/icon-192.png", data: { pane: pane.id } };
    const where = `#/pane/${encodeURIComponent(pane.id)}${pane.state === "blocked" ? "/screen" : ""}`;
    // A blocked pane opens with its screen (and answers) in view.
    this.notify(title, opts, () => { location.hash = where; });
    this.report([pane], pane.state === "blocked" ? "block" : pane.state);
  }

  ensureAudio() {
    if (this.audio) return this.audio;
    const Ctx = window.AudioContext || window.webkitAudioContext;
    if (!Ctx) return null;
    try { this.audio = new Ctx(); } catch { this.audio = null; }
    return this.audio;
  }

  /** A short two-tone beep made on the spot: no sound file to fetch or cache. */
  beep() {
    const ctx = this.ensureAudio();
    if (!ctx) return;
    if (ctx.state === "suspended") ctx.resume().catch(() => {});
    const t = ctx.currentTime;
    const gain = ctx.createGain();
    gain.gain.setValueAtTime(0.0001, t);
    gain.gain.exponentialRampToValueAtTime(0.2, t + 0.01);
    gain.gain.exponentialRampToValueAtTime(0.0001, t + 0.3);
    gain.connect(ctx.destination);
    for (const [freq, start] of [[880, 0], [1320, 0.12]]) {
      const osc = ctx.createOscillator();
      osc.type = "sine";
      osc.frequency.setValueAtTime(freq, t + start);
      osc.connect(gain);
      osc.start(t + start);
      osc.stop(t + start + 0.15);
    }
    document.documentElement.dataset.lastBeep = String(Date.now());
  }
}

export async function askPermission() {
  if (!("Notification" in window)) return "unsupported";
  if (Notification.permission === "granted") return "granted";
  return Notification.requestPermission();
}
