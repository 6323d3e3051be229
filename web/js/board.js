// The board: one card per pane; every blocked one on top, longest wait first, the rest
// grouped by host and tmux session.
// Cards are kept by pane id and updated in place so focus, scroll position and the
// IntersectionObserver (which tells notifications what is on screen) survive a redraw.

import { CardAnswers } from "./cardanswers.js";
import { CardNext } from "./cardnext.js";
import { clean, setText } from "./sanitize.js";
import {
  attachCommand, clock, clockTime, comparePanes, formatDuration, formatWait, hostProblem, possiblyWaiting, stateInfo,
} from "./model.js";
import { muteReason } from "./quiet.js";

/** The key of the section that holds every blocked pane (no host/session key is a bare word). */
const WAITING = "waiting";
/** The key of the section that holds a card per host the collector cannot watch. */
const HOSTS_DOWN = "hosts-down";

export class Board {
  constructor(model, { root, empty, tpl, filters, onOpen, getQuiet = () => null, localHost = () => "", viewer = () => null }) {
    this.model = model;
    this.root = root;
    this.empty = empty;
    this.tpl = tpl;
    this.filters = filters; // {host, agent, state} <select>s
    this.onOpen = onOpen;
    this.getQuiet = getQuiet;
    this.localHost = localHost;
    this.viewer = viewer; // GET /api/me: what this viewer may do (screens, operator)
    this.cards = new Map(); // id -> element
    this.hostHealth = new Map(); // hostKey -> a host of `/api/hosts`
    this.groups = new Map(); // group key -> {el, cards}
    this.onScreen = new Set(); // pane ids whose card is at least half visible
    // A blocked card's answers (two taps) or why it has none: cardanswers.js.
    this.answers = new CardAnswers({ visible: () => !this.root.hidden, changed: () => this.render() });
    // An idle or done card's "Tell it what next": a preview and a follow-up (cardnext.js).
    this.next = new CardNext({ visible: () => !this.root.hidden, changed: () => this.render() });
    this.observer = new IntersectionObserver((entries) => {
      for (const e of entries) {
        const id = e.target.dataset.id;
        if (e.isIntersecting && e.intersectionRatio >= 0.5) this.onScreen.add(id);
        else this.onScreen.delete(id);
      }
    }, { threshold: [0, 0.5, 1] });
    for (const sel of Object.values(filters)) sel.addEventListener("change", () => this.render());
    // Keys work from anywhere on the board, also before any card has focus: no card is
    // focused on load, so none wears a focus ring as if it were selected.
    document.addEventListener("keydown", (ev) => { if (!this.root.hidden) this.onKey(ev); });
    root.addEventListener("click", (ev) => {
      if (ev.target.closest(".card-answers")) return; // its buttons act; a near miss opens nothing
      // (an open preview and "Tell it what next" keep their clicks: cardnext.js)
      const copy = ev.target.closest(".copy-attach");
      if (copy) { ev.stopPropagation(); copyText(copy.dataset.cmd, copy); return; }
      const show = ev.target.closest(".show-screen");
      if (show) { ev.stopPropagation(); location.hash = `#/pane/${encodeURIComponent(show.dataset.id)}/screen`; return; }
      const card = ev.target.closest(".card");
      if (card) this.onOpen(card.dataset.id);
    });
    model.addEventListener("reset", () => this.render());
    model.addEventListener("change", () => this.render());
    setInterval(() => this.tick(), 1000);
  }

  /** Is this pane's card on screen right now (and the board the current view)? */
  isOnScreen(id) {
    return !this.root.hidden && this.onScreen.has(id);
  }

  passes(p) {
    const { host, agent, state } = this.filters;
    if (host.value && p.host !== host.value) return false;
    if (agent.value && (p.agent ?? "") !== agent.value) return false;
    if (state.value) {
      if (state.value === "none" ? p.state !== null : p.state !== state.value) return false;
    }
    return true;
  }

  refreshFilterOptions() {
    const hosts = new Set(), agents = new Set();
    for (const p of this.model.panes.values()) {
      hosts.add(p.host);
      if (p.agent) agents.add(p.agent);
    }
    fillSelect(this.filters.host, [...hosts].sort());
    fillSelect(this.filters.agent, [...agents].sort());
  }

  render() {
    this.refreshFilterOptions();
    const panes = [...this.model.panes.values()].filter((p) => this.passes(p)).sort(comparePanes);
    this.answers.want(panes, this.viewer());
    // Every blocked pane, whichever host, in one section on top, longest wait first:
    // "which agent waits, and for how long" must not depend on where it runs. The rest
    // is grouped by host, then tmux session; a group's rank is its most urgent pane's.
    const waiting = [];
    const byGroup = new Map();
    for (const p of panes) {
      if (p.state === "blocked" || possiblyWaiting(p)) { waiting.push(p); continue; }
      const key = JSON.stringify([p.host, p.tmux, p.session]);
      if (!byGroup.has(key)) byGroup.set(key, []);
      byGroup.get(key).push(p);
    }
    const order = [...byGroup.entries()].sort((a, b) => {
      const c = comparePanes(a[1][0], b[1][0]);
      if (c) return c;
      return a[0] < b[0] ? -1 : 1;
    });
    // A host its collector cannot watch is a card of its own, after the waiting panes:
    // without it a host with no pane known would be missing from the board unseen.
    const down = [...this.hostHealth.values()]
      .filter((h) => !h.reachable && (!this.filters.host.value || h.name === this.filters.host.value));
    if (down.length) order.unshift([HOSTS_DOWN, down]);
    if (waiting.length) order.unshift([WAITING, waiting]);
    // One host on the board: its name on every waiting card would say nothing new.
    const manyHosts = new Set(panes.map((p) => hostKey(p))).size > 1;
    const seenCards = new Set(), seenGroups = new Set();
    let prevGroup = null;
    for (const [key, list] of order) {
      seenGroups.add(key);
      let g = this.groups.get(key);
      if (!g) {
        g = this.makeGroup(key, list[0]);
        this.groups.set(key, g);
      }
      if (key === WAITING) this.updateWaitingHeader(g, list);
      else if (key === HOSTS_DOWN) this.updateHostsDown(g, list);
      else this.updateGroupHeader(g, list[0]);
      const where = prevGroup ? prevGroup.el.nextSibling : this.root.firstChild;
      if (g.el !== where) this.root.insertBefore(g.el, where);
      prevGroup = g;
      if (key === HOSTS_DOWN) continue;
      let prevCard = null;
      for (const p of list) {
        seenCards.add(p.id);
        let card = this.cards.get(p.id);
        if (!card) {
          card = this.tpl.content.firstElementChild.cloneNode(true);
          card.dataset.id = p.id;
          this.cards.set(p.id, card);
          this.observer.observe(card);
        }
        fillCard(card, p, {
          quiet: this.getQuiet(), localHost: this.localHost(), viewer: this.viewer(),
          withHost: key === WAITING && manyHosts, takes: this.answers.takes(p),
        });
        this.answers.fill(card, p, this.viewer());
        this.next.fill(card, p, this.viewer());
        const at = prevCard ? prevCard.nextSibling : g.cards.firstChild;
        if (card !== at) g.cards.insertBefore(card, at);
        prevCard = card;
      }
    }
    this.next.keep(seenCards);
    for (const [id, card] of this.cards) {
      if (!seenCards.has(id)) {
        this.observer.unobserve(card);
        this.onScreen.delete(id);
        card.remove();
        this.cards.delete(id);
      }
    }
    for (const [key, g] of this.groups) {
      if (!seenGroups.has(key)) {
        g.el.remove();
        this.groups.delete(key);
      }
    }
    this.empty.hidden = this.model.panes.size !== 0 || down.length !== 0;
  }

  /** The hosts-down section: a card per host, its reason (the collector's words,
   * untrusted: as text, bounded) and what to do (ours). Rebuilt whole: few, small. */
  updateHostsDown(g, hosts) {
    g.name.textContent = `Hosts not watched · ${hosts.length}`;
    g.status.textContent = "";
    const many = new Set(hosts.map((h) => h.collector ?? "")).size > 1;
    g.cards.replaceChildren(...hosts.map((h) => hostCard(h, many)));
  }

  makeGroup(key) {
    const el = document.createElement("section");
    el.className = "group";
    const h = document.createElement("h2");
    const name = document.createElement("span");
    name.className = "group-name";
    const status = document.createElement("span");
    status.className = "host-status";
    h.append(name, status);
    const cards = document.createElement("div");
    cards.className = "cards";
    el.append(h, cards);
    el.dataset.key = key;
    if (key === WAITING) el.classList.add("waiting");
    if (key === HOSTS_DOWN) el.classList.add("hosts-down");
    return { el, h, name, status, cards };
  }

  /** The hosts of `/api/hosts` (their links' health): group headers follow. */
  setHostHealth(hosts) {
    this.hostHealth = new Map(hosts.map((h) => [hostKey({ collector: h.collector, host: h.name }), h]));
    this.render();
  }

  updateWaitingHeader(g, list) {
    // Those possibly still waiting (a stale report) are counted apart from the sure ones.
    const maybe = list.filter(possiblyWaiting).length;
    const sure = list.length - maybe;
    const parts = [...(sure ? [sure] : []), ...(maybe ? [`${maybe} possibly`] : [])];
    g.name.textContent = ["Waiting on you", ...parts].join(" · ");
    g.status.textContent = "";
  }

  updateGroupHeader(g, p) {
    g.name.textContent = `${hostLabel(p)} · ${clean(p.session) || "?"}`;
    const down = !p.reachable;
    g.status.textContent = down ? unreachableText(p) : healthText(this.hostHealth.get(hostKey(p)));
    g.status.classList.toggle("down", down);
  }

  tick() {
    const now = clock.now();
    for (const card of this.cards.values()) {
      const since = Number(card.dataset.since);
      if (card.dataset.since) {
        card.querySelector(".elapsed").textContent = card.dataset.waiting ? "" : formatDuration(now - since);
        if (card.dataset.waiting) card.querySelector(".wait").textContent = waitText(since, now);
      }
      for (const ageEl of card.querySelectorAll("[data-at]")) ageEl.textContent = ageText(ageEl, now);
    }
  }

  onKey(ev) {
    if (["SELECT", "INPUT", "TEXTAREA", "BUTTON"].includes(ev.target.tagName)) return;
    if (ev.ctrlKey || ev.metaKey || ev.altKey) return;
    const cards = [...this.root.querySelectorAll(".card")];
    if (!cards.length) return;
    const i = cards.indexOf(document.activeElement);
    let next = null;
    switch (ev.key) {
      case "ArrowDown": case "ArrowRight": case "j": next = cards[Math.min(cards.length - 1, i + 1)]; break;
      case "ArrowUp": case "ArrowLeft": case "k": next = cards[Math.max(0, i - 1)]; break;
      case "Home": next = cards[0]; break;
      case "End": next = cards[cards.length - 1]; break;
      case "Enter": case " ":
        if (i >= 0) { ev.preventDefault(); this.onOpen(cards[i].dataset.id); }
        return;
      default: return;
    }
    if (next) { ev.preventDefault(); next.focus(); }
  }

  /** The board gives way to a pane's page: a card's preview stops watching its pane. */
  leave() {
    this.next.close();
  }

  /** Back from a pane's page: focus its card again (only when keys brought us there). */
  focusCard(id) {
    const c = id && this.cards.get(id);
    if (c) c.focus({ preventScroll: false });
  }
}

/** A host the collector cannot watch, as a card: name, what is wrong, since when,
 * the collector's own line and the advice. `withCollector`: two collectors may name
 * one host alike. */
function hostCard(h, withCollector) {
  const { what, advice } = hostProblem(h);
  const el = document.createElement("article");
  el.className = "host-card";
  el.dataset.host = clean(h.name, 200);
  const head = document.createElement("div");
  head.className = "host-card-head";
  const who = withCollector && h.collector ? ` (${clean(h.collector, 80)})` : "";
  const since = h.unreachable_since ? ` since ${clockTime(h.unreachable_since)}` : "";
  head.textContent = `↯ ${clean(h.name, 200)}${who}: ${what}${since}`;
  const reason = document.createElement("div");
  reason.className = "host-reason";
  setText(reason, h.error || "no reason given", 600);
  const tip = document.createElement("div");
  tip.className = "host-advice";
  tip.textContent = advice;
  el.append(head, reason, tip);
  el.setAttribute("aria-label", `host ${clean(h.name, 200)}: ${what}`);
  return el;
}

/** "↯ unreachable since 4:57:10 PM": since when the collector says the link is lost. */
function unreachableText(p) {
  return p.unreachableSince ? `↯ unreachable since ${clockTime(p.unreachableSince)}` : "↯ unreachable";
}

/** A host's link as `/api/hosts` tells it: "rtt 41 ms · 2 reconnects". */
export function healthText(h) {
  if (!h || !h.reachable) return "";
  const parts = [];
  if (typeof h.rtt === "number") parts.push(`rtt ${Math.round(h.rtt * 1000)} ms`);
  if (h.reconnects > 0) parts.push(`${h.reconnects} reconnect${h.reconnects === 1 ? "" : "s"}`);
  return parts.join(" · ");
}

/** One host of one collector (two collectors may both name a host "build1"). */
export function hostKey(p) {
  return `${p.collector ?? ""}\u0000${p.host ?? ""}`;
}

/** "build-3", or "build-3 (NAME)" for a pane of a named tmux server. */
function hostLabel(p) {
  const tmux = p.tmux && p.tmux !== "default" ? ` (${clean(p.tmux)})` : "";
  return `${clean(p.host)}${tmux}`;
}

function fillSelect(sel, values) {
  const current = sel.value;
  const have = [...sel.options].slice(1).map((o) => o.value);
  if (have.length === values.length && have.every((v, i) => v === values[i])) return;
  while (sel.options.length > 1) sel.remove(1);
  for (const v of values) {
    const o = document.createElement("option");
    o.value = v;
    o.textContent = clean(v, 80);
    sel.append(o);
  }
  sel.value = values.includes(current) ? current : "";
}

/** "waiting since 4:57 PM (3 min)" */
function waitText(since, now) {
  return `waiting since ${clockTime(since)} (${formatWait(now - since)})`;
}

/** The text of an element that tells an age: its data-prefix, then "N ago". */
function ageText(el, now) {
  return `${el.dataset.prefix || ""}${formatWait(now - Number(el.dataset.at))} ago`;
}

/** Copy to the clipboard (Clipboard API where the page is a secure context, the old
 * execCommand path elsewhere); the button says whether it worked. */
export async function copyText(text, button) {
  let ok = false;
  try {
    await navigator.clipboard.writeText(text);
    ok = true;
  } catch {
    const ta = document.createElement("textarea");
    ta.value = text;
    ta.setAttribute("readonly", "");
    ta.className = "offscreen";
    document.body.append(ta);
    ta.select();
    try { ok = document.execCommand("copy"); } catch { ok = false; }
    ta.remove();
  }
  if (button) {
    const was = button.dataset.label || button.textContent;
    button.dataset.label = was;
    button.textContent = ok ? "✓ copied" : "copy failed";
    setTimeout(() => { button.textContent = was; }, 2000);
  }
  return ok;
}

// Where a state came from, in plain words (protocol: the program's own report, said by none).
const SOURCE_WORDS = { native: "from the terminal's progress signal", screen: "read from the screen" };

export function fillCard(card, p, { quiet = null, localHost = "", viewer = null, withHost = false, takes = false } = {}) {
  const info = stateInfo(p.state);
  const maybe = possiblyWaiting(p);
  card.className = `card st-${p.state || "none"}`;
  card.classList.toggle("maybe-waiting", maybe);
  const unreachable = !p.reachable;
  card.classList.toggle("stale", p.stale);
  card.classList.toggle("unreachable", unreachable);
  card.querySelector(".icon").textContent = info.icon;
  card.querySelector(".word").textContent = maybe ? "possibly waiting" : info.word;
  const agentEl = card.querySelector(".agent");
  const agent = p.agent || (maybe && p.lastKnown.agent) || null;
  setText(agentEl, agent || "shell", 120);
  agentEl.classList.toggle("none", !agent);
  setText(card.querySelector(".kind"), p.kind ? `(${p.kind})` : "", 40);
  // The msg is what the program (or the prompt on its screen) says; for a blocked pane
  // that is the question it waits on. The window title is something else: labelled.
  const lk = !p.state && !p.observable ? p.lastKnown : null;
  const msgEl = card.querySelector(".msg");
  setText(msgEl, p.msg || (lk && lk.msg) || "", 2048);
  msgEl.classList.toggle("question", (p.state === "blocked" && !!p.msg) || (maybe && !!lk.msg));
  msgEl.classList.toggle("was", !p.msg && !!(lk && lk.msg));
  const titleLine = card.querySelector(".title-line");
  titleLine.hidden = !p.title;
  setText(titleLine.querySelector(".title-text"), p.title || "", 300);
  const lkEl = card.querySelector(".last-known");
  lkEl.hidden = !lk || maybe; // a possible wait says it on its wait line
  if (lk && !maybe) {
    const who = lk.agent ? `${clean(lk.agent, 80)} ` : "";
    const what = `${who}${stateInfo(lk.state).word}${lk.kind ? ` (${clean(lk.kind, 40)})` : ""}`;
    lkEl.dataset.prefix = `last known: ${what}, `;
    if (lk.at) {
      lkEl.dataset.at = String(lk.at);
      lkEl.textContent = ageText(lkEl, clock.now());
    } else {
      delete lkEl.dataset.at;
      lkEl.textContent = `last known: ${what}`;
    }
  } else {
    delete lkEl.dataset.at;
  }
  const prog = card.querySelector(".progress");
  prog.hidden = p.progress === null;
  if (p.progress !== null) prog.firstElementChild.style.width = `${Math.max(0, Math.min(100, p.progress))}%`;
  const waiting = p.state === "blocked" && p.since;
  if (p.since) card.dataset.since = String(p.since);
  else delete card.dataset.since;
  if (waiting) card.dataset.waiting = "1";
  else delete card.dataset.waiting;
  const wait = card.querySelector(".wait");
  wait.hidden = !waiting && !maybe;
  wait.textContent = waiting ? waitText(p.since, clock.now()) : "";
  if (maybe && lk.at) {
    wait.dataset.prefix = `possibly still waiting — last seen ${clockTime(lk.at)}, `;
    wait.dataset.at = String(lk.at);
    wait.textContent = ageText(wait, clock.now());
  } else {
    delete wait.dataset.at;
    if (maybe) wait.textContent = "possibly still waiting";
  }
  card.querySelector(".elapsed").textContent = p.since && !waiting ? formatDuration(clock.now() - p.since) : "";
  // Outside its host's group (the waiting section) a card names its host itself, when
  // the board has more than one. The tmux pane id ("%6") is a detail: a tooltip.
  const host = withHost ? `${hostLabel(p)} · ` : "";
  const where = `${host}${clean(p.session)}:${clean(p.window)}`;
  const whereEl = card.querySelector(".where");
  whereEl.textContent = where;
  whereEl.title = `tmux session:window, pane ${clean(p.pane)}`;
  const markers = card.querySelector(".markers");
  markers.replaceChildren();
  const add = (text, cls, title) => {
    const s = document.createElement("span");
    s.textContent = text;
    if (cls) s.className = cls;
    if (title) s.title = title;
    markers.append(s);
    return s;
  };
  const muted = muteReason(quiet, p);
  if (muted) add("⊘ muted", "marker-muted", `${muted}: no notifications`);
  if (!p.observable) {
    add("◌ not observable", "marker-info", `the program in front (${clean(p.process, 80) || "?"}) hides what runs behind it`);
  }
  if (unreachable) add(`↯ host ${unreachableText(p).slice(2)}`, "marker-warn");
  if (p.stale || unreachable) {
    const s = add("", "age");
    s.dataset.prefix = "last known ";
    if (p.lastSeen) {
      s.dataset.at = String(p.lastSeen);
      s.textContent = ageText(s, clock.now());
    } else {
      s.textContent = "last known";
    }
  }
  if (p.source && p.source !== "protocol") {
    add(SOURCE_WORDS[p.source] || `from ${clean(p.source, 20)}`, "marker-source", `source: ${clean(p.source, 20)}`);
  }
  // Offer only what works for this viewer and this pane: "takes answers" only where
  // this very prompt offers answers or text to this viewer (`takes`, cardanswers.js;
  // the card says why not otherwise); a screen, a blocked pane the collector can see
  // and a viewer allowed to see screens (an unknown viewer is offered neither).
  if (takes) {
    add("⌨ takes answers", "marker-input", "this prompt can be answered from the board (its collector runs with --allow-input)");
  }
  const show = card.querySelector(".show-screen");
  if (show) {
    // a blocked pane the collector can see, or one possibly still waiting (its screen
    // may still ask), for a viewer allowed to see screens
    show.hidden = !(((p.state === "blocked" && p.observable) || maybe) && viewer?.screens);
    show.dataset.id = p.id;
  }
  const copy = card.querySelector(".copy-attach");
  copy.dataset.cmd = attachCommand(p, localHost);
  copy.title = `copy: ${copy.dataset.cmd}`;
  copy.setAttribute("aria-label", `copy the attach command: ${copy.dataset.cmd}`);
  const word = maybe ? "possibly waiting" : info.word;
  const label = `${word}${p.kind ? " " + p.kind : ""}: ${clean(agent) || "shell"} in ${clean(p.host)} ${where}`;
  card.setAttribute("aria-label", label);
}
