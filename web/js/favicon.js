// Counts in the tab: the title says "(2 blocked, 1 done)" and the favicon is drawn
// on a canvas with the blocked count on an orange disc (done in green when nothing
// is blocked), so a pinned tab still tells you something.

let last = "";

export function showCounts({ blocked, done }, countsEl) {
  const parts = [];
  if (blocked) parts.push(`${blocked} blocked`);
  if (done) parts.push(`${done} done`);
  document.title = parts.length ? `(${parts.join(", ")}) paneboard` : "paneboard";
  if (countsEl) countsEl.textContent = `${blocked} blocked · ${done} done`;
  const key = `${blocked}/${done}`;
  if (key === last) return;
  last = key;
  const link = document.getElementById("favicon");
  if (!link) return;
  link.href = drawIcon(blocked, done);
}

export function drawIcon(blocked, done) {
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
    g.fillStyle = blocked ? "#ea580c" : "#16a34a";
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
