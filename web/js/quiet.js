// Quiet rules, the browser's half: the same reading as the server's
// paneboard_server.notify.quiet, so a desktop notification and a push agree on
// whether now is a quiet time for this pane.
//   mutes: [{scope: "pane"|"host"|"agent", value, until (unix s or null = until lifted),
//            audience: "me" | "everyone"}]: everyone's and this viewer's own, both apply here
//   quiet_hours: {start: "22:00", end: "07:00"} in the viewer's local time, or null
//   dnd: {until: unix s or null} when on, or null

function minutes(hhmm) {
  const m = /^(\d{1,2}):(\d{2})$/.exec(hhmm || "");
  return m ? Number(m[1]) * 60 + Number(m[2]) : null;
}

export function inQuietHours(hours, date = new Date()) {
  if (!hours) return false;
  const a = minutes(hours.start), b = minutes(hours.end);
  if (a === null || b === null || a === b) return false;
  const t = date.getHours() * 60 + date.getMinutes();
  return a < b ? t >= a && t < b : t >= a || t < b;
}

/** Why this pane must stay quiet now, or "" when it may notify. */
export function quietReason(q, pane, nowSec = Date.now() / 1000) {
  if (!q) return "";
  if (q.dnd && (q.dnd.until === null || q.dnd.until === undefined || q.dnd.until > nowSec)) return "do not disturb";
  for (const m of q.mutes || []) {
    if (m.until !== null && m.until !== undefined && m.until <= nowSec) continue;
    const hit = (m.scope === "pane" && m.value === pane.id) ||
      (m.scope === "host" && m.value === pane.host) ||
      (m.scope === "agent" && m.value === (pane.agent ?? ""));
    if (hit) return `muted ${m.scope}`;
  }
  if (inQuietHours(q.quiet_hours)) return "quiet hours";
  return "";
}

/** The mute (pane, host or agent) that covers this pane now, or "": the card's marker. */
export function muteReason(q, pane, nowSec = Date.now() / 1000) {
  const r = quietReason(q ? { mutes: q.mutes } : null, pane, nowSec);
  return r.startsWith("muted") ? r : "";
}
