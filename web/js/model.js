// The board's view of the world: panes by id and the listeners that redraw when one
// changes. Pane objects from the server are normalised once here (PANE_FIELDS by name,
// the rest copied), so the rest of the page reads one shape.

export const STATES = {
  blocked: { icon: "⚠", word: "blocked", rank: 0 },
  error: { icon: "✖", word: "error", rank: 1 },
  done: { icon: "✔", word: "done", rank: 2 },
  working: { icon: "⟳", word: "working", rank: 3 },
  idle: { icon: "○", word: "idle", rank: 4 },
  none: { icon: "–", word: "no agent", rank: 5 },
};

export function stateInfo(state) {
  return STATES[state] || STATES.none;
}

/** The fields of a pane the page reads by name, to give them the shape it uses. Every
 * other field the server sends (`GET /api/panes` and the stream: `PaneView`, in
 * protocol/src/paneboard_protocol/views.py, held to pane.py's definition) is copied as it
 * is, under its camelCase name, so a field added to the pane definition reaches the page
 * with no change here. Tests hold both to the server's: every name read is a field of
 * `PaneView` (tests/server/test_pane_definition.py), nothing read that it does not send,
 * nothing it sends dropped (tests/web/test_board_people.py). */
export const PANE_FIELDS = [
  "id", "host", "collector", "tmux", "pane", "session", "window", "agent", "state", "kind", "msg", "title",
  "progress", "source", "observable", "process", "since", "last_seen", "reachable", "stale",
  "unreachable_since", "records", "last_known",
];
const NAMED = new Set(PANE_FIELDS);
const FIELD_NAME = /^[a-z][a-z0-9_]*$/; // what a definition's field is called (never __proto__)

/** `last_seen` -> `lastSeen`: the page's spelling of a server field's name. */
export const camel = (name) => name.replace(/_([a-z0-9])/g, (_, c) => c.toUpperCase());

const str = (v) => (v === null || v === undefined ? "" : String(v));
const time = (v) => (typeof v === "number" && Number.isFinite(v) ? v : null);

/** Leading spinner glyphs of a window title (braille dots, stars, half circles…):
 * they change every frame and say nothing a state badge does not. */
const SPINNER = /^[\u2800-\u28FF\u25D0-\u25D3\u25D4-\u25D7\u2722-\u273D\u2731\u00B7\u2219\u22C5\u25CF\u25CB\u25C9\u23FA]+\s*/u;

export function stripSpinner(title) {
  return str(title).replace(SPINNER, "").trim();
}

/** One pane from the API (or the stream) in the shape the page uses. */
export function normalise(p) {
  const rest = {};
  for (const name of Object.keys(p)) {
    if (!NAMED.has(name) && FIELD_NAME.test(name)) rest[camel(name)] = p[name];
  }
  const state = p.state && STATES[p.state] ? p.state : null;
  const lk = p.last_known && typeof p.last_known === "object" ? p.last_known : null;
  return {
    ...rest,
    id: String(p.id),
    host: str(p.host),
    collector: p.collector ?? null,
    tmux: str(p.tmux),
    pane: str(p.pane),
    session: str(p.session),
    window: str(p.window),
    agent: p.agent ?? null,
    state,
    kind: state === "blocked" ? (p.kind ?? null) : null,
    msg: p.msg ?? null,
    title: stripSpinner(p.title) || null,
    progress: typeof p.progress === "number" ? p.progress : null,
    source: p.source ?? null,
    observable: p.observable !== false,
    process: p.process ?? null,
    since: time(p.since),
    lastSeen: time(p.last_seen),
    reachable: p.reachable !== false,
    unreachableSince: time(p.unreachable_since), // null while the host is reachable
    stale: Boolean(p.stale),
    input: Boolean(p.input),
    records: Array.isArray(p.records) ? p.records : [],
    lastKnown: lk && lk.state && STATES[lk.state]
      ? {
          state: lk.state, kind: lk.kind ?? null, agent: lk.agent ?? null, msg: lk.msg ?? null,
          at: time(lk.at), reason: typeof lk.reason === "string" ? lk.reason : null,
        }
      : null,
  };
}

/** A pane that was waiting on you when its report went stale (TA-12), behind something
 * that hides it (ssh), and of which nothing newer is known: it may well still be waiting,
 * so it stays among the waits, told apart ("possibly still waiting"). The server clears
 * `last_known` as soon as the pane says anything again. */
export function possiblyWaiting(p) {
  const lk = !p.state && !p.observable ? p.lastKnown : null;
  return Boolean(lk && lk.state === "blocked" && lk.reason === "stale");
}

export class Model extends EventTarget {
  constructor() {
    super();
    this.panes = new Map();
  }

  /** Replace everything (a snapshot). Returns nothing: listeners redraw. */
  reset(panes) {
    this.panes.clear();
    for (const raw of panes) {
      const p = normalise(raw);
      this.panes.set(p.id, p);
    }
    this.dispatchEvent(new CustomEvent("reset"));
  }

  /** One pane changed. Emits "change" with {pane, prev} so notifications can compare. */
  upsert(raw) {
    const p = normalise(raw);
    const prev = this.panes.get(p.id) || null;
    this.panes.set(p.id, p);
    this.dispatchEvent(new CustomEvent("change", { detail: { pane: p, prev } }));
  }

  remove(id) {
    const prev = this.panes.get(id) || null;
    this.panes.delete(id);
    this.dispatchEvent(new CustomEvent("change", { detail: { pane: null, prev } }));
  }

  /** Blocked/error/done counts, the panes possibly still waiting (counted apart: their
   * report went stale) and the longest wait (the earliest `since` of a blocked pane). */
  counts() {
    let blocked = 0, error = 0, done = 0, possibly = 0, waitSince = null;
    for (const p of this.panes.values()) {
      if (p.state === "blocked") {
        blocked++;
        if (p.since !== null && (waitSince === null || p.since < waitSince)) waitSince = p.since;
      } else if (p.state === "error") error++;
      else if (p.state === "done") done++;
      else if (possiblyWaiting(p)) possibly++;
    }
    return { blocked, error, done, possibly, waitSince };
  }
}

/** Blocked first, then error, done, working, idle, no agent; longest-waiting first within. */
export function comparePanes(a, b) {
  const r = stateInfo(a.state).rank - stateInfo(b.state).rank;
  if (r) return r;
  const sa = a.since ?? Infinity, sb = b.since ?? Infinity;
  if (sa !== sb) return sa - sb;
  return a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
}

/** "3s", "4m 05s", "2h 10m", "3d 4h": compact enough for a phone card. */
export function formatDuration(seconds) {
  if (seconds === null || seconds === undefined || !Number.isFinite(seconds)) return "";
  let s = Math.max(0, Math.floor(seconds));
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60); s %= 60;
  if (m < 60) return `${m}m ${String(s).padStart(2, "0")}s`;
  const h = Math.floor(m / 60);
  if (h < 24) return `${h}h ${String(m % 60).padStart(2, "0")}m`;
  return `${Math.floor(h / 24)}d ${h % 24}h`;
}

/** "3 min", "45 s", "2 h 05 min": the wait in words for "waiting since 4:57 PM (3 min)". */
export function formatWait(seconds) {
  if (!Number.isFinite(seconds)) return "";
  const s = Math.max(0, Math.floor(seconds));
  if (s < 60) return `${s} s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m} min`;
  return `${Math.floor(m / 60)} h ${String(m % 60).padStart(2, "0")} min`;
}

/** Wall-clock time in the viewer's locale, "4:57 PM" (or "16:57"). */
export function clockTime(at) {
  return new Date(at * 1000).toLocaleTimeString([], { hour: "numeric", minute: "2-digit" });
}

/** The shell command that attaches a terminal to this pane (`tmux attach -t
 * session:window.pane`, through `ssh host -t` unless the pane is on `localHost`), with
 * `-L`/`-S` when the collector watches a named tmux socket. Every part is quoted for a
 * POSIX shell: session and host names are untrusted text. */
export function attachCommand(p, localHost) {
  const index = /^(\d+)(?::|$)/.exec(p.window || "");
  const target = `${p.session}:${index ? index[1] + "." : ""}${p.pane}`;
  const sock = !p.tmux || p.tmux === "default" ? [] : p.tmux.startsWith("/") ? ["-S", p.tmux] : ["-L", p.tmux];
  const tmux = ["tmux", ...sock, "attach", "-t", target].map(shq).join(" ");
  if (localHost && p.host === localHost) return tmux;
  return `ssh ${shq(p.host)} -t ${shq(tmux)}`;
}

/** POSIX shell quoting: bare when safe, otherwise in single quotes. */
export function shq(s) {
  s = String(s);
  return /^[A-Za-z0-9_@%+=:,./-]+$/.test(s) ? s : `'${s.replace(/'/g, "'\\''")}'`;
}

/** The server's clock may differ from ours; the stream tells us by how much. */
export const clock = {
  offset: 0, // server time minus local time, seconds
  now() { return Date.now() / 1000 + this.offset; },
};

// Why a host cannot be watched, read from its collector's error line (the words
// transport/ssh.py and watcher.py write), and what to do about it. The advice is
// ours, never the collector's text: that is shown apart, as untrusted text.
const HOST_PROBLEMS = [
  [/host key verification failed/i, "host key refused",
    "The host's key is not one its known_hosts trusts. If the key changed, verify the new one out of band " +
    "(its fingerprint from the machine's console or its administrator) before you trust it: a changed key " +
    "can also mean someone in between. Once known_hosts is right the collector reconnects by itself."],
  [/authentication refused/i, "our key refused",
    "Add the collector's public key to the host's authorized_keys, or name the right key (--identity); " +
    "the collector tries again by itself."],
  [/no tmux server to watch/i, "no tmux server",
    "Start tmux on the host (or check --tmux-socket), then restart the collector, or run it with --wait-for-tmux."],
  [/tmux not runnable/i, "tmux missing",
    "Install tmux on the host (on the PATH of a login shell); the collector tries again by itself."],
  [/cannot resolve host name/i, "unknown host name",
    "Check the host's name (or its Host entry in the ssh config); the collector tries again by itself."],
  [/^not connected yet$/, "connecting", "The collector is connecting to it."],
  [/^collector disconnected$/, "collector gone",
    "Its collector is not connected to this server: check that `paneboard agent` still runs; " +
    "its panes keep their last known state."],
];

/** A host of `/api/hosts` that is not reachable: {what, advice} for its card. */
export function hostProblem(h) {
  const error = String(h?.error ?? "");
  for (const [re, what, advice] of HOST_PROBLEMS) if (re.test(error)) return { what, advice };
  return {
    what: "unreachable",
    advice: "Check that the host is up and its sshd answers on that port; the collector keeps trying with back-off.",
  };
}
