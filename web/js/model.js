// The board's view of the world: panes by id, hosts' reachability, and the listeners
// that redraw when either changes. Pane objects from the server are normalised once
// here so the rest of the page reads one shape whatever the API grows.

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

function num(v) {
  if (v === null || v === undefined || v === "") return null;
  if (typeof v === "number") return v;
  const n = Number(v);
  if (!Number.isNaN(n)) return n;
  const t = Date.parse(v);
  return Number.isNaN(t) ? null : t / 1000;
}

/** One pane from the API (or the stream) in the shape the page uses. */
export function normalise(p) {
  const host = p.host ?? p.key?.host ?? "";
  const tmux = p.tmux ?? p.key?.tmux ?? "";
  const pane = p.pane ?? p.key?.pane ?? "";
  const id = String(p.id ?? `${host}/${tmux}/${pane}`);
  const state = p.state && STATES[p.state] ? p.state : null;
  return {
    id,
    host: String(host),
    tmux: String(tmux),
    pane: String(pane),
    session: p.session ?? "",
    window: p.window ?? "",
    agent: p.agent ?? null,
    state,
    kind: state === "blocked" ? (p.kind ?? null) : null,
    msg: p.msg ?? null,
    title: p.title ?? null,
    progress: typeof p.progress === "number" ? p.progress : null,
    source: p.source ?? null,
    since: num(p.since ?? p.state_since),
    observable: p.observable !== false,
    stale: Boolean(p.stale),
    reachable: p.reachable !== false && p.host_reachable !== false,
    lastSeen: num(p.last_seen ?? p.updated ?? p.updated_at ?? p.t),
    records: Array.isArray(p.records) ? p.records : [],
    gone: Boolean(p.gone),
  };
}

export class Model extends EventTarget {
  constructor() {
    super();
    this.panes = new Map();
    this.hosts = new Map(); // host -> {reachable, error, since}
  }

  /** Replace everything (a snapshot). Returns nothing: listeners redraw. */
  reset(panes, hosts) {
    this.panes.clear();
    for (const raw of panes) {
      const p = normalise(raw);
      this.panes.set(p.id, p);
    }
    if (hosts) this.setHosts(hosts, false);
    this.dispatchEvent(new CustomEvent("reset"));
  }

  /** One pane changed. Emits "change" with {pane, prev} so notifications can compare. */
  upsert(raw) {
    const p = normalise(raw);
    const prev = this.panes.get(p.id) || null;
    if (p.gone) {
      this.panes.delete(p.id);
    } else {
      this.panes.set(p.id, p);
    }
    this.dispatchEvent(new CustomEvent("change", { detail: { pane: p, prev } }));
  }

  remove(id) {
    const prev = this.panes.get(id) || null;
    this.panes.delete(id);
    this.dispatchEvent(new CustomEvent("change", { detail: { pane: null, prev } }));
  }

  setHosts(hosts, notify = true) {
    const list = Array.isArray(hosts) ? hosts : Object.entries(hosts).map(([host, v]) => ({ host, ...v }));
    for (const h of list) {
      if (!h || h.host === undefined) continue;
      this.hosts.set(String(h.host), { reachable: h.reachable !== false, error: h.error ?? null, since: num(h.since ?? h.t) });
    }
    if (notify) this.dispatchEvent(new CustomEvent("hosts"));
  }

  counts() {
    let blocked = 0, done = 0;
    for (const p of this.panes.values()) {
      if (p.state === "blocked") blocked++;
      else if (p.state === "done") done++;
    }
    return { blocked, done };
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

/** The server's clock may differ from ours; the stream tells us by how much. */
export const clock = {
  offset: 0, // server time minus local time, seconds
  now() { return Date.now() / 1000 + this.offset; },
};
