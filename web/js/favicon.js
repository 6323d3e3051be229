// Counts in the tab: the title says "(2 waiting, longest 5 min · 1 done)" and the
// favicon is drawn on a canvas with the blocked+error count on an orange disc (red when
// only errors; done in green when nothing needs you), so a pinned tab still tells you.

import { formatWait } from "./model.js";

let last = "";
let lastTitle = "";

/** The header's counts, the tab title ("(2 waiting, longest 5 min · 1 error) paneboard",
 * re-told every second as the wait grows) and the favicon. */
export function showCounts({ blocked, error, done, possibly = 0, waitSince }, countsEl, now) {
  const parts = [];
  if (blocked) parts.push(`${blocked} waiting${waitSince !== null ? `, longest ${formatWait(now - waitSince)}` : ""}`);
  if (error) parts.push(`${error} error`);
  if (done) parts.push(`${done} done`);
  const title = parts.length ? `(${parts.join(" · ")}) paneboard` : "paneboard";
  if (title !== lastTitle) document.title = lastTitle = title;
  if (countsEl) {
    // Only what is there, so the header stays one line on a phone.
    // Panes possibly still waiting (their report went stale) are told apart, never
    // added to the blocked count, the badge or the favicon.
    const seen = [[blocked, "blocked"], [possibly, "possibly waiting"], [error, "error"], [done, "done"]]
      .filter(([n]) => n);
    const text = seen.length ? seen.map(([n, w]) => `${n} ${w}`).join(" · ") : "nothing waiting";
    if (countsEl.textContent !== text) countsEl.textContent = text;
  }
  const key = `${blocked}/${error}/${done}`;
  if (key === last) return;
  last = key;
  setBadge(blocked);
  const link = document.getElementById("favicon");
  if (!link) return;
  link.href = drawIcon(blocked + error, done, error && !blocked);
}

/** The installed app's icon badge (Badging API; phones and desktops that have it): how
 * many panes wait on you. The longest wait is in the title and the notifications. */
export function setBadge(n) {
  if (!("setAppBadge" in navigator)) return;
  const p = n ? navigator.setAppBadge(n) : navigator.clearAppBadge();
  p?.catch?.(() => {}); // not installed, or not allowed: the title and favicon still say it
  document.documentElement.dataset.badge = String(n);
}

export function drawIcon(blocked, done, red = false) {
  const size = 64;
  const c = document.createElement("canvas");
  c.width = c.height = size;
  const g = c.getContext("2d");
  // The board: a dark rounded square with three pane stripes.
  g.fillStyle = "#1f2937";
  roundRect(g, 0, 0, size, size, 12);
  g.fill();
  g.fillStyle = "#9ca3af";
  for (let i = 0; i < 3; i++) g.fillRect(10, 12 + i * 15, 44, 9);
  const n = blocked || done;
  if (n) {
    g.fillStyle = red ? "#dc2626" : blocked ? "#ea580c" : "#16a34a";
    g.beginPath();
    g.arc(size - 22, size - 22, 22, 0, Math.PI * 2);
    g.fill();
    g.fillStyle = "#ffffff";
    g.font = "bold 30px system-ui, sans-serif";
    g.textAlign = "center";
    g.textBaseline = "middle";
    g.fillText(n > 9 ? "9+" : String(n), size - 22, size - 20);
  }
  return c.toDataURL("image/png");
}

function roundRect(g, x, y, w, h, r) {
  g.beginPath();
  g.moveTo(x + r, y);
  g.arcTo(x + w, y, x + w, y + h, r);
  g.arcTo(x + w, y + h, x, y + h, r);
  g.arcTo(x, y + h, x, y, r);
  g.arcTo(x, y, x + w, y, r);
  g.closePath();
}
