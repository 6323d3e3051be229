// Start-up and wiring: auth (viewer token in the URL, login form on 401), the live
// stream, the board, the pane page, notifications and settings. Routing is by hash
// (#/pane/<id>) so the static server needs no rewrite rules; /pane/<id> also works
// when the server serves index.html there.

import { Unauthorized, get, post } from "./api.js";
import { Board } from "./board.js";
import { showCounts } from "./favicon.js";
import { Model, clock } from "./model.js";
import { Notifier, doneSwitch, sound } from "./notify.js";
import { clean } from "./sanitize.js";
import { PaneView } from "./pane.js";
import { registerWorker } from "./push.js";
import { Settings } from "./settings.js";
import { Stream } from "./stream.js";

const $ = (id) => document.getElementById(id);
const params = new URLSearchParams(location.search);
const wall = params.get("view") === "wall";

// A viewer token in the address bar has done its job once the server has turned it
// into a cookie (on this very page load): take it out of the history and the bar.
if (params.has("token")) {
  params.delete("token");
  const q = params.toString();
  history.replaceState(null, "", location.pathname + (q ? `?${q}` : "") + location.hash);
}
if (wall) document.body.classList.add("wall");

const model = new Model();
const banner = $("banner");
let bannerTimer = null;
// `ok`: a success ("typed ✓") gets its own colour, not the yellow of "reconnecting".
function setBanner(text, { sticky = true, ok = false } = {}) {
  clearTimeout(bannerTimer);
  banner.textContent = text;
  banner.hidden = !text;
  banner.dataset.kind = text ? (ok ? "ok" : sticky ? "sticky" : "info") : "";
  if (text && !sticky) bannerTimer = setTimeout(() => { banner.hidden = true; }, 3000);
}

let view = null;
let me = null;
let settings = null;
const board = new Board(model, {
  root: $("board"), empty: $("empty"), tpl: $("card-tpl"),
  filters: { host: $("f-host"), agent: $("f-agent"), state: $("f-state") },
  onOpen: (id) => { if (!wall) location.hash = `#/pane/${encodeURIComponent(id)}`; },
  getQuiet: () => settings?.quiet ?? null,
  localHost: () => me?.host ?? "",
  viewer: () => me,
});
settings = new Settings({
  onStatus: (t) => setBanner(t, { sticky: false }),
  onLoaded: () => board.render(), // mutes changed: the cards' markers follow
});
const paneView = new PaneView(model, $("pane-view"), {
  localHost: () => me?.host ?? "",
  viewer: () => me,
  onBack: () => { location.hash = "#/"; },
  onQuietChanged: () => settings.load(),
  status: (t, { ok = false } = {}) => setBanner(t, { sticky: false, ok }),
});
new Notifier(model, {
  isPaneOnScreen: (id) => board.isOnScreen(id),
  currentPane: () => view,
  getQuiet: () => settings.quiet,
});

const redrawCounts = () => showCounts(model.counts(), $("counts"), clock.now());
model.addEventListener("reset", redrawCounts);
model.addEventListener("change", redrawCounts);
setInterval(redrawCounts, 1000); // the longest wait in the title grows

// The links' health (round trip, reconnects) changes without any pane changing: read
// every few seconds for the group headers; a failure leaves the last figures.
async function loadHostHealth() {
  try {
    const hosts = await get("/api/hosts");
    if (Array.isArray(hosts)) board.setHostHealth(hosts);
  } catch { /* signed out or away: the stream's own handling says so */ }
}
setInterval(loadHostHealth, 5000);
loadHostHealth();

// On a phone the filters and buttons fold away behind one button (CSS decides when).
$("tools-btn").addEventListener("click", () => {
  const open = $("tools").classList.toggle("open");
  $("tools-btn").setAttribute("aria-expanded", String(open));
});

function showSound() {
  const b = $("sound-btn");
  b.textContent = sound.on ? "♪ Sound on" : "♪ Sound off";
  b.setAttribute("aria-pressed", String(sound.on));
}
$("sound-btn").addEventListener("click", () => { sound.set(!sound.on); showSound(); });
$("notify-done").checked = doneSwitch.on;
$("notify-done").addEventListener("change", () => doneSwitch.set($("notify-done").checked));
showSound();

/** Who is looking: an account (with Sign out) or a viewer token (with Sign in). */
function showWho(who) {
  $("who").hidden = false;
  const account = who.kind === "viewer" && !who.readonly;
  $("who-name").textContent = account ? `signed in as ${clean(who.name, 80)}` : `viewer link “${clean(who.name, 80)}” (read-only)`;
  $("sign-in").hidden = account;
  $("sign-out").hidden = !account;
}
$("sign-out").addEventListener("click", async () => {
  try { await post("/api/logout", {}); } catch (e) { if (!(e instanceof Unauthorized)) return setBanner(`Signing out failed. ${e.message}`); }
  stream?.stop();
  location.href = "/login";
});

function route() {
  const m = /^#\/pane\/([^/]+)(\/screen)?$/.exec(location.hash) || /^\/pane\/([^/]+)$/.exec(location.pathname);
  const id = m ? decodeURIComponent(m[1]) : null;
  const screen = !!(m && m[2]);
  view = wall ? null : id;
  $("board").hidden = !!view;
  $("empty").hidden = !!view || model.panes.size !== 0;
  if (view) {
    lastView = view;
    board.leave();
    paneView.open(view, { screen });
  } else {
    paneView.close();
    // Back from a pane's page: its card gets focus again (keys go on from there). On
    // load nothing is focused, so no card looks selected.
    if (!wall && lastView) board.focusCard(lastView);
    lastView = null;
  }
}
let lastView = null;
window.addEventListener("hashchange", route);
document.addEventListener("keydown", (ev) => {
  if (ev.key === "Escape" && view) location.hash = "#/";
});

// No (or an expired) session: the server's sign-in page, then back here.
function showLogin() {
  stream?.stop();
  location.href = "/login";
}

let stream = null;
async function start() {
  try {
    me = await get("/api/me");
    if (me.readonly) document.body.classList.add("readonly");
    showWho(me);
    const d = await get("/api/panes");
    model.reset(Array.isArray(d) ? d : d.panes || []);
  } catch (e) {
    if (e instanceof Unauthorized) return showLogin();
    setBanner(`The panes did not load. ${e.message}`);
  }
  document.documentElement.dataset.ready = "1";
  route();
  settings.load();
  if (!wall) registerWorker();
  stream = new Stream("/api/stream", {
    onSnapshot: (list) => model.reset(list),
    onPane: (p) => model.upsert(p),
    onGone: (id) => model.remove(String(id)),
    onState: (s) => {
      document.documentElement.dataset.stream = s;
      if (s === "live") setBanner("");
      else setBanner("⟳ reconnecting to the server…");
    },
    onUnauthorized: async (st) => {
      try {
        await get("/api/panes");
        setTimeout(() => st.restart(), 2000); // not an auth problem: try again
      } catch (e) {
        if (e instanceof Unauthorized) showLogin();
        else setTimeout(() => st.restart(), 2000);
      }
    },
  });
  stream.start();
}

start();
