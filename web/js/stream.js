// Live updates over Server-Sent Events. EventSource reconnects by itself and sends
// Last-Event-ID, so the server replays what we missed; we only show that the
// connection is down ("reconnecting…") and hide the banner once it is back.
// A stream that is refused (401) is not retried forever: we re-check auth.

export class Stream {
  constructor(url, { onSnapshot, onPane, onGone, onState, onUnauthorized }) {
    this.url = url;
    this.h = { onSnapshot, onPane, onGone, onState, onUnauthorized };
    this.lastId = "";
    this.es = null;
    this.opened = false;
  }

  start() {
    // A fresh EventSource does not carry Last-Event-ID; the query parameter does the
    // same job when we reopen after a "reset" (the server dropped us as too slow).
    const url = this.lastId ? `${this.url}?last_event_id=${encodeURIComponent(this.lastId)}` : this.url;
    const es = new EventSource(url, { withCredentials: true });
    this.es = es;
    es.addEventListener("open", () => { this.opened = true; this.h.onState("live"); });
    es.addEventListener("error", () => {
      if (es.readyState === EventSource.CLOSED) {
        // The server refused (e.g. 401) or the response was not a stream: ask why.
        this.h.onState("down");
        this.h.onUnauthorized?.(this);
      } else {
        this.h.onState("reconnecting");
      }
    });
    const parse = (ev) => {
      if (ev.lastEventId) this.lastId = ev.lastEventId;
      try { return JSON.parse(ev.data); } catch { return null; }
    };
    es.addEventListener("snapshot", (ev) => {
      const d = parse(ev);
      if (d) this.h.onSnapshot(Array.isArray(d) ? d : d.panes || []);
    });
    es.addEventListener("change", (ev) => {
      const d = parse(ev);
      if (!d) return;
      for (const p of d.panes || []) this.h.onPane(p);
      for (const id of d.gone || []) this.h.onGone(String(id));
    });
    es.addEventListener("reset", () => {
      this.h.onState("reconnecting");
      this.restart();
    });
  }

  restart() {
    this.stop();
    this.start();
  }

  stop() {
    if (this.es) this.es.close();
    this.es = null;
  }
}
