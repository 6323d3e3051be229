// The notification settings panel: desktop permission, push on this device, a test
// message to the configured channels, do-not-disturb (mine; everyone's for operators), this viewer's quiet
// hours, and the list of active mutes (each can be lifted).

import { del, get, post, put } from "./api.js";
import { clean } from "./sanitize.js";
import { askPermission } from "./notify.js";
import { currentSubscription, subscribe, unsubscribe } from "./push.js";

export class Settings {
  constructor({ onStatus, onLoaded = () => {} }) {
    this.quiet = null;
    this.status = onStatus;
    this.onLoaded = onLoaded;
    const $ = (id) => document.getElementById(id);
    this.el = {
      panel: $("settings"), toggle: $("settings-btn"), enable: $("enable-notify"),
      sub: $("push-subscribe"), unsub: $("push-unsubscribe"), test: $("notify-test"),
      dnd: $("dnd"), dndAll: $("dnd-all"), dndAllRow: $("dnd-all-row"), qhStart: $("qh-start"), qhEnd: $("qh-end"), qhSave: $("qh-save"),
      qhClear: $("qh-clear"), mutes: $("mutes"), devices: $("push-devices"), out: $("settings-status"),
    };
    const e = this.el;
    // A browser without the Notification API (most phones' browsers, outside an
    // installed app) cannot show desktop notifications: do not offer them.
    e.enable.hidden = !("Notification" in window);
    e.sub.hidden = !("PushManager" in window);
    e.toggle.addEventListener("click", () => {
      e.panel.hidden = !e.panel.hidden;
      e.toggle.setAttribute("aria-expanded", String(!e.panel.hidden));
      if (!e.panel.hidden) this.refreshPush();
    });
    e.enable.addEventListener("click", async () => this.say(`desktop notifications: ${await askPermission()}`));
    e.sub.addEventListener("click", () => this.run(async () => { await subscribe(); await this.refreshPush(); return "push enabled on this device"; }));
    e.unsub.addEventListener("click", () => this.run(async () => { await unsubscribe(); await this.refreshPush(); return "push disabled on this device"; }));
    e.test.addEventListener("click", () => this.run(async () => {
      const r = await post("/api/notify/test", {});
      const devices = Array.isArray(r.devices) ? r.devices : [];
      await this.loadDevices(devices);
      return `test sent: ${r.sent ?? 0} channel(s), ${r.failed ?? 0} failed; push: ${r.push ?? 0} of ${devices.length} device(s) got it`;
    }));
    e.dnd.addEventListener("change", () => this.run(async () => {
      await put("/api/notify/dnd", { on: e.dnd.checked, minutes: null, scope: "me" });
      await this.load();
      return e.dnd.checked ? "do not disturb on" : "do not disturb off";
    }));
    // Do-not-disturb for everyone: operators only (the server refuses anyone else too).
    // Turning it on silences every user, so it is asked first; turning it off is not.
    const confirm = $("dnd-all-confirm");
    const setAll = (on) => this.run(async () => {
      await put("/api/notify/dnd", { on, minutes: null, scope: "everyone" });
      await this.load();
      return on ? "do not disturb on for everyone" : "do not disturb off for everyone";
    });
    e.dndAll.addEventListener("change", () => {
      if (!e.dndAll.checked) { confirm.hidden = true; setAll(false); return; }
      e.dndAll.checked = false; // not until confirmed
      confirm.hidden = false;
      confirm.querySelector("button.yes").focus();
    });
    confirm.querySelector("button.yes").addEventListener("click", () => {
      confirm.hidden = true;
      e.dndAll.checked = true;
      setAll(true);
    });
    confirm.querySelector("button.cancel").addEventListener("click", () => {
      confirm.hidden = true;
      e.dndAll.focus();
    });
    e.qhSave.addEventListener("click", () => this.run(async () => {
      await put("/api/notify/quiet-hours", { start: e.qhStart.value || null, end: e.qhEnd.value || null, tz: Intl.DateTimeFormat().resolvedOptions().timeZone });
      await this.load();
      return "quiet hours saved";
    }));
    e.qhClear.addEventListener("click", () => this.run(async () => {
      await put("/api/notify/quiet-hours", { start: null, end: null, tz: null });
      await this.load();
      return "quiet hours cleared";
    }));
    setInterval(() => this.load().catch(() => {}), 60000);
  }

  say(text) {
    this.el.out.textContent = clean(text, 300);
    this.status?.(text);
  }

  // A failed change says why and puts the switches back to what the server holds: a
  // checkbox ticked before its request (do-not-disturb for everyone, once confirmed)
  // must not stay ticked when nothing was saved.
  async run(fn) {
    try {
      this.say(await fn());
    } catch (err) {
      this.say(String(err.message || err));
      await this.load();
    }
  }

  async refreshPush() {
    const sub = await currentSubscription().catch(() => null);
    this.el.sub.hidden = !!sub || !("PushManager" in window);
    this.el.unsub.hidden = !sub;
    await this.loadDevices();
  }

  // This account's push devices, each with its last delivery and last failure; after
  // a test, `tested` (the test's `devices`) says which got it.
  async loadDevices(tested = []) {
    let devices;
    try {
      ({ devices } = await get("/api/push/devices"));
    } catch {
      return;
    }
    const when = (t) => (t ? new Date(t * 1000).toLocaleString() : "never");
    const ul = this.el.devices;
    ul.replaceChildren();
    for (const d of devices || []) {
      const li = document.createElement("li");
      li.dataset.id = String(d.id);
      const name = clean(d.device || "a device", 80);
      let text = `${name} (${clean(d.service, 80)}): last delivered ${when(d.last_ok)}`;
      text += d.last_fail ? `; last failed ${when(d.last_fail)} (${clean(d.last_error, 120)})` : "; no failure";
      const t = tested.find((x) => x.id === d.id);
      if (t) text += t.ok ? " — test: got it" : ` — test: not delivered (${clean(t.outcome, 120)})`;
      li.textContent = text;
      ul.append(li);
    }
    if (!ul.children.length) ul.textContent = "none";
  }

  async load() {
    try {
      this.quiet = await get("/api/notify/quiet");
    } catch {
      return;
    }
    const q = this.quiet;
    this.onLoaded(q);
    this.el.dnd.checked = !!q.dnd_mine;
    this.el.dndAll.checked = !!q.dnd_everyone;
    this.el.dndAllRow.hidden = !q.operator;
    // The server's channels (names, or URLs' schemes: never their secrets), or how to add one.
    const chans = Array.isArray(q.channels) ? q.channels : [];
    const cl = document.getElementById("channels");
    cl.replaceChildren(...chans.map((c) => {
      const li = document.createElement("li");
      li.textContent = clean(c, 120);
      return li;
    }));
    if (!chans.length) cl.textContent = "none";
    document.getElementById("channels-help").hidden = chans.length > 0;
    this.el.qhStart.value = q.quiet_hours?.start || "";
    this.el.qhEnd.value = q.quiet_hours?.end || "";
    const ul = this.el.mutes;
    ul.replaceChildren();
    for (const m of q.mutes || []) {
      const li = document.createElement("li");
      const until = m.until ? ` until ${new Date(m.until * 1000).toLocaleString()}` : "";
      // Whose it is: this account's own, or everyone's (an operator's, lifted by operators).
      const whose = m.audience === "everyone" ? "for everyone" : "only you";
      li.append(document.createTextNode(`${m.scope} ${clean(m.value, 120)}${until} (${whose}) `));
      const b = document.createElement("button");
      b.type = "button";
      b.textContent = "lift";
      b.addEventListener("click", () => this.run(async () => { await del(`/api/notify/mutes/${encodeURIComponent(m.id)}`); await this.load(); return "mute lifted"; }));
      if (m.audience !== "everyone" || this.quiet?.operator) li.append(b);
      ul.append(li);
    }
    if (!ul.children.length) ul.textContent = "none";
  }
}
