// The board: one card per pane, grouped by host and tmux session, blocked first.
// Cards are kept by pane id and updated in place so focus, scroll position and the
// IntersectionObserver (which tells notifications what is on screen) survive a redraw.

import { clean, setText } from "./sanitize.js";
import { clock, comparePanes, formatDuration, stateInfo } from "./model.js";

export class Board {
  constructor(model, { root, empty, tpl, filters, onOpen }) {
    this.model = model;
    this.root = root;
    this.empty = empty;
    this.tpl = tpl;
    this.filters = filters; // {host, agent, state} <select>s
    this.onOpen = onOpen;
    this.cards = new Map(); // id -> element
    this.groups = new Map(); // group key -> {el, cards}
    this.onScreen = new Set(); // pane ids whose card is at least half visible
    this.observer = new IntersectionObserver((entries) => {
      for (const e of entries) {
        const id = e.target.dataset.id;
        if (e.isIntersecting && e.intersectionRatio >= 0.5) this.onScreen.add(id);
        else this.onScreen.delete(id);
      }
    }, { threshold: [0, 0.5, 1] });
    for (const sel of Object.values(filters)) sel.addEventListener("change", () => this.render());
    root.addEventListener("keydown", (ev) => this.onKey(ev));
    root.addEventListener("click", (ev) => {
      const card = ev.target.closest(".card");
      if (card) this.onOpen(card.dataset.id);
    });
    model.addEventListener("reset", () => this.render());
    model.addEventListener("change", () => this.render());
    model.addEventListener("hosts", () => this.render());
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
    // Groups: host, then tmux session; a group's rank is its most urgent pane's.
    const byGroup = new Map();
    for (const p of panes) {
      const key = JSON.stringify([p.host, p.tmux, p.session]);
      if (!byGroup.has(key)) byGroup.set(key, []);
      byGroup.get(key).push(p);
    }
    const order = [...byGroup.entries()].sort((a, b) => {
      const c = comparePanes(a[1][0], b[1][0]);
      if (c) return c;
      return a[0] < b[0] ? -1 : 1;
    });
    const seenCards = new Set(), seenGroups = new Set();
    let prevGroup = null;
    for (const [key, list] of order) {
      seenGroups.add(key);
      let g = this.groups.get(key);
      if (!g) {
        g = this.makeGroup(key, list[0]);
        this.groups.set(key, g);
      }
      this.updateGroupHeader(g, list[0]);
      const where = prevGroup ? prevGroup.el.nextSibling : this.root.firstChild;
      if (g.el !== where) this.root.insertBefore(g.el, where);
      prevGroup = g;
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
        fillCard(card, p, this.model.hosts.get(p.host));
        const at = prevCard ? prevCard.nextSibling : g.cards.firstChild;
        if (card !== at) g.cards.insertBefore(card, at);
        prevCard = card;
      }
    }
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
    this.empty.hidden = this.model.panes.size !== 0;
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
    return { el, h, name, status, cards };
  }

  updateGroupHeader(g, p) {
    const tmux = p.tmux && p.tmux !== "default" ? ` (${clean(p.tmux)})` : "";
    g.name.textContent = `${clean(p.host)}${tmux} · ${clean(p.session) || "?"}`;
    const host = this.model.hosts.get(p.host);
    const down = (host && !host.reachable) || !p.reachable;
    g.status.textContent = down ? "↯ unreachable" : "";
    g.status.classList.toggle("down", down);
  }

  tick() {
    const now = clock.now();
    for (const card of this.cards.values()) {
      const since = Number(card.dataset.since);
      if (card.dataset.since) card.querySelector(".elapsed").textContent = formatDuration(now - since);
      const ageEl = card.querySelector(".age");
      if (ageEl && ageEl.dataset.at) ageEl.textContent = `last known ${formatDuration(now - Number(ageEl.dataset.at))} ago`;
    }
  }

  onKey(ev) {
    if (ev.target.tagName === "SELECT" || ev.target.tagName === "INPUT") return;
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

  focusFirst() {
    const c = this.root.querySelector(".card");
    if (c) c.focus();
  }
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

export function fillCard(card, p, host) {
  const info = stateInfo(p.state);
  card.className = `card st-${p.state || "none"}`;
  const unreachable = (host && !host.reachable) || !p.reachable;
  card.classList.toggle("stale", p.stale);
  card.classList.toggle("unreachable", unreachable);
  card.querySelector(".icon").textContent = info.icon;
  card.querySelector(".word").textContent = info.word;
  const agentEl = card.querySelector(".agent");
  setText(agentEl, p.agent || "shell", 120);
  agentEl.classList.toggle("none", !p.agent);
  setText(card.querySelector(".kind"), p.kind ? `(${p.kind})` : "", 40);
  setText(card.querySelector(".msg"), p.msg || p.title || "", 2048);
  const prog = card.querySelector(".progress");
  prog.hidden = p.progress === null;
  if (p.progress !== null) prog.firstElementChild.style.width = `${Math.max(0, Math.min(100, p.progress))}%`;
  if (p.since) card.dataset.since = String(p.since);
  else delete card.dataset.since;
  card.querySelector(".elapsed").textContent = p.since ? formatDuration(clock.now() - p.since) : "";
  const where = `${clean(p.session)}:${clean(p.window)} ${clean(p.pane)}`;
  card.querySelector(".where").textContent = where;
  const markers = card.querySelector(".markers");
  markers.replaceChildren();
  const add = (text, cls) => {
    const s = document.createElement("span");
    s.textContent = text;
    if (cls) s.className = cls;
    markers.append(s);
    return s;
  };
  if (!p.observable) add("◌ not observable", "marker-warn");
  if (unreachable) add("↯ host unreachable", "marker-warn");
  if (p.stale || unreachable) {
    const s = add("", "age");
    if (p.lastSeen) {
      s.dataset.at = String(p.lastSeen);
      s.textContent = `last known ${formatDuration(clock.now() - p.lastSeen)} ago`;
    } else {
      s.textContent = "last known";
    }
  }
  if (p.source && p.source !== "protocol") add(`via ${p.source}`);
  const label = `${info.word}${p.kind ? " " + p.kind : ""}: ${clean(p.agent) || "shell"} in ${clean(p.host)} ${where}`;
  card.setAttribute("aria-label", label);
}
