// Live updates over Server-Sent Events. EventSource reconnects by itself and sends
// Last-Event-ID, so the server replays what we missed; we only show that the
// connection is down ("reconnecting…") and hide the banner once it is back.
// A stream that is refused (401) is not retried forever: we re-check auth.

export class Stream {
  constructor(url, { onSnapshot, onPane, onGone, onHosts, onTime, onState, onUnauthorized }) {
    this.url = url;
    this.h = { onSnapshot, onPane, onGone, onHosts, onTime, onState, onUnauthorized };
    this.es = null;
    this.opened = false;
  }

  start() {
    const es = new EventSource(this.url, { withCredentials: true });
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
      try { return JSON.parse(ev.data); } catch { return null; }
    };
    es.addEventListener("snapshot", (ev) => {
      const d = parse(ev);
      if (!d) return;
      if (typeof d.now === "number") this.h.onTime(d.now);
      const panes = Array.isArray(d) ? d : d.panes || [];
      this.h.onSnapshot(panes, d.hosts);
    });
    const onPane = (ev) => {
      const d = parse(ev);
      if (!d) return;
      if (typeof d.now === "number") this.h.onTime(d.now);
      const p = d.pane ?? d;
      if (d.gone || p.gone) this.h.onGone(p.id ?? d.id);
      else this.h.onPane(p);
    };
    for (const name of ["pane", "change", "update"]) es.addEventListener(name, onPane);
    for (const name of ["gone", "pane_gone", "removed"]) {
      es.addEventListener(name, (ev) => {
        const d = parse(ev);
        if (d) this.h.onGone(String(d.id ?? d.pane?.id));
      });
    }
    for (const name of ["host", "hosts", "host_status"]) {
      es.addEventListener(name, (ev) => {
        const d = parse(ev);
        if (d) this.h.onHosts(Array.isArray(d) ? d : d.hosts ?? [d]);
      });
    }
    es.addEventListener("message", onPane);
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
