// paneboard's service worker: shows Web Push notifications (one per pane: the tag is
// the pane id, so a newer push replaces an older one) and opens the pane on click.
// It caches nothing: a stale dashboard is worse than none.

self.addEventListener("install", () => self.skipWaiting());
self.addEventListener("activate", (ev) => ev.waitUntil(self.clients.claim()));

const STRIP = /[\p{Cf}\p{Cc}]/gu;
const clean = (s, n = 300) => String(s ?? "").replace(STRIP, " ").slice(0, n);

self.addEventListener("push", (ev) => {
  let d = {};
  try { d = ev.data ? ev.data.json() : {}; } catch { d = { title: "paneboard", body: ev.data ? ev.data.text() : "" }; }
  const pane = clean(d.pane ?? d.id ?? "", 200);
  const title = clean(d.title || "paneboard", 120);
  const opts = {
    body: clean(d.body, 500),
    tag: pane || "paneboard",
    renotify: true,
    icon: "/icons/icon-192.png",
    badge: "/icons/badge-72.png",
    data: { pane, url: pane ? `/#/pane/${encodeURIComponent(pane)}/screen` : "/" },
  };
  const shown = self.registration.showNotification(title, opts);
  // The phone's icon badge: how many wait, when the push says (the page keeps it
  // exact while it is open).
  const waiting = Number.isInteger(d.waiting) && d.waiting >= 0 ? d.waiting : null;
  const badge = waiting !== null && "setAppBadge" in self.navigator
    ? (waiting ? self.navigator.setAppBadge(waiting) : self.navigator.clearAppBadge()).catch(() => {})
    : Promise.resolve();
  ev.waitUntil(Promise.all([shown, badge]));
});

self.addEventListener("notificationclick", (ev) => {
  ev.notification.close();
  const url = new URL(ev.notification.data?.url || "/", self.location.origin).href;
  ev.waitUntil((async () => {
    const all = await self.clients.matchAll({ type: "window", includeUncontrolled: true });
    for (const c of all) {
      if (new URL(c.url).origin === self.location.origin) {
        await c.focus();
        if ("navigate" in c) return c.navigate(url);
        return undefined;
      }
    }
    return self.clients.openWindow(url);
  })());
});
