// paneboard's service worker: shows Web Push notifications (one per pane: the tag is
// the pane id, so a newer push replaces an older one) and opens the pane on click.
// A burst's first push comes at once; what followed it within the server's window
// comes as one push with the first one's tag and `renotify: false`: it replaces the
// first without a second buzz.
// A push for a blocked prompt sent to an operator's device carries the prompt's
// fingerprint and up to two answers: they become the notification's buttons, and a tap
// answers from the notification itself (docs/answers.md). It caches nothing: a stale
// dashboard is worse than none.

self.addEventListener("install", () => self.skipWaiting());
self.addEventListener("activate", (ev) => ev.waitUntil(self.clients.claim()));

const STRIP = /[\p{Cf}\p{Cc}]/gu;
const clean = (s, n = 300) => String(s ?? "").replace(STRIP, " ").slice(0, n);
const ANSWER_ID = /^[a-z0-9_-]{1,32}$/;
const FINGERPRINT = /^[0-9a-f]{64}$/;
const PANE_ID = /^[0-9]{1,18}$/;
const TAG = /^[A-Za-z0-9_-]{1,64}$/;

// Why an answer was not typed, in the words of the follow-up notification.
const WHY = {
  changed: "the prompt changed",
  used: "someone answered it already",
  "not-blocked": "the pane no longer waits",
  offline: "its collector is not connected",
  disabled: "this host does not take answers",
  refused: "that answer is no longer offered",
  "not-in-front": "the program that asked is no longer in front",
  expired: "it came too late",
  forbidden: "this account may not answer",
  csrf: "the session could not be checked",
  "signed-out": "you are signed out",
  gone: "the pane is gone",
};

const paneUrl = (pane) => (pane ? `/#/pane/${encodeURIComponent(pane)}/screen` : "/");

// The link a push carries (the server's public URL + the pane's page), when it is on
// this worker's own origin; else the pane's page here.
function linkOf(d, pane) {
  try {
    const u = new URL(String(d.url));
    if (u.origin === self.location.origin) return u.pathname + u.hash;
  } catch {}
  return paneUrl(pane);
}

// What a push's JSON may offer: the fingerprint and answers, checked, or null.
function offerOf(d, pane) {
  const o = d && typeof d.offer === "object" ? d.offer : null;
  if (!o || !PANE_ID.test(pane) || !FINGERPRINT.test(String(o.fingerprint))) return null;
  const answers = (Array.isArray(o.answers) ? o.answers : [])
    .filter((a) => a && ANSWER_ID.test(String(a.id)))
    .slice(0, 2)
    .map((a) => ({ id: String(a.id), label: clean(a.label, 60) || String(a.id) }));
  return answers.length ? { fingerprint: String(o.fingerprint), answers } : null;
}

// The notification a push becomes: title and options (buttons where the platform
// shows any; iOS shows none, and a tap opens the pane on its prompt).
function notificationFor(d) {
  const pane = clean(d.pane ?? d.id ?? "", 200);
  const title = clean(d.title || "paneboard", 120);
  const offer = offerOf(d, pane);
  const opts = {
    body: clean(d.body, 500),
    tag: typeof d.tag === "string" && TAG.test(d.tag) ? d.tag : pane || "paneboard",
    renotify: d.renotify !== false,
    icon: "/icons/icon-192.png",
    badge: "/icons/badge-72.png",
    data: { pane, url: linkOf(d, pane), title, ...(offer || {}) },
  };
  const max = self.Notification && Number.isInteger(self.Notification.maxActions) ? self.Notification.maxActions : 0;
  if (pane && max > 0) {
    const answers = offer ? offer.answers.map((a) => ({ action: `answer:${a.id}`, title: a.label })) : [];
    opts.actions = [...answers, { action: "open", title: "Open" }];
  }
  return [title, opts];
}
self.notificationFor = notificationFor;

self.addEventListener("push", (ev) => {
  let d = {};
  try { d = ev.data ? ev.data.json() : {}; } catch { d = { title: "paneboard", body: ev.data ? ev.data.text() : "" }; }
  if (!d || typeof d !== "object") d = {};
  const [title, opts] = notificationFor(d);
  const shown = self.registration.showNotification(title, opts);
  // The phone's icon badge: how many wait, when the push says (the page keeps it
  // exact while it is open).
  const waiting = Number.isInteger(d.waiting) && d.waiting >= 0 ? d.waiting : null;
  const badge = waiting !== null && "setAppBadge" in self.navigator
    ? (waiting ? self.navigator.setAppBadge(waiting) : self.navigator.clearAppBadge()).catch(() => {})
    : Promise.resolve();
  ev.waitUntil(Promise.all([shown, badge]));
});

async function openPane(url) {
  const href = new URL(url || "/", self.location.origin).href;
  const all = await self.clients.matchAll({ type: "window", includeUncontrolled: true });
  for (const c of all) {
    if (new URL(c.url).origin === self.location.origin) {
      await c.focus();
      if ("navigate" in c) return c.navigate(href);
      return undefined;
    }
  }
  return self.clients.openWindow(href);
}

// Post the answer as the signed-in operator: the session cookie goes with a
// same-origin fetch, and the CSRF token (a worker cannot read cookies) comes from
// GET /api/me, which only a same-origin request can read. Returns the outcome word.
async function postAnswer(data, id) {
  try {
    const me = await fetch("/api/me", { credentials: "same-origin", cache: "no-store" });
    if (me.status === 401) return "signed-out";
    if (!me.ok) return "offline";
    const { csrf } = await me.json();
    const r = await fetch(`/api/panes/${encodeURIComponent(data.pane)}/answer`, {
      method: "POST",
      credentials: "same-origin",
      cache: "no-store",
      headers: { "Content-Type": "application/json", "X-CSRF-Token": String(csrf || "") },
      body: JSON.stringify({ fingerprint: data.fingerprint, answer: id }),
    });
    if (r.ok) return clean((await r.json()).outcome, 40) || "offline";
    return { 401: "signed-out", 403: "forbidden", 404: "gone" }[r.status] || "offline";
  } catch {
    return "offline";
  }
}

// A click on a notification (`action`: "" for its body, "open", or "answer:ID"). Kept
// apart from the event so a test can drive it inside the real worker. An answer ends
// in a follow-up notification saying what happened; returns the outcome, or "opened".
async function handleClick(data, action) {
  const d = data || {};
  const id = typeof action === "string" && action.startsWith("answer:") ? action.slice(7) : null;
  const offered = id !== null && Array.isArray(d.answers) ? d.answers.find((a) => a.id === id) : null;
  if (!offered || !PANE_ID.test(String(d.pane)) || !FINGERPRINT.test(String(d.fingerprint))) {
    await openPane(d.url);
    return "opened";
  }
  const outcome = await postAnswer(d, id);
  const typed = outcome === "typed";
  const title = typed ? `typed: ${offered.label}` : `not typed: ${WHY[outcome] || outcome} — open it`;
  await self.registration.showNotification(clean(title, 120), {
    body: clean(d.title, 200),
    tag: String(d.pane),
    renotify: true,
    icon: "/icons/icon-192.png",
    badge: "/icons/badge-72.png",
    data: { pane: String(d.pane), url: paneUrl(String(d.pane)), outcome },
  });
  return outcome;
}
self.handleClick = handleClick;

self.addEventListener("notificationclick", (ev) => {
  ev.notification.close();
  ev.waitUntil(handleClick(ev.notification.data, ev.action));
});
