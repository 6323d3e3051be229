// Web Push from the page's side: register the service worker, subscribe with the
// server's VAPID public key, and hand the subscription to the server (or take it back).

import { del, get, post } from "./api.js";

function urlB64ToBytes(s) {
  const pad = "=".repeat((4 - (s.length % 4)) % 4);
  const b = atob((s + pad).replace(/-/g, "+").replace(/_/g, "/"));
  return Uint8Array.from(b, (c) => c.charCodeAt(0));
}

// The label the settings panel lists this device under ("Chrome on Android"): the
// browser and the system, nothing more of the user agent.
export function deviceLabel(ua = navigator.userAgent) {
  const os = /Android/.test(ua) ? "Android" : /iPhone|iPad|iPod/.test(ua) ? "iOS"
    : /Mac OS X/.test(ua) ? "macOS" : /Windows/.test(ua) ? "Windows" : /CrOS/.test(ua) ? "ChromeOS"
    : /Linux/.test(ua) ? "Linux" : "another system";
  const browser = /Edg\//.test(ua) ? "Edge" : /Firefox\//.test(ua) ? "Firefox"
    : /Chrom(e|ium)\//.test(ua) ? "Chrome" : /Safari\//.test(ua) ? "Safari" : "A browser";
  return `${browser} on ${os}`;
}

export async function registerWorker() {
  if (!("serviceWorker" in navigator)) return null;
  try {
    return await navigator.serviceWorker.register("/sw.js", { scope: "/" });
  } catch {
    return null;
  }
}

export async function currentSubscription() {
  if (!("serviceWorker" in navigator) || !("PushManager" in window)) return null;
  const reg = await navigator.serviceWorker.getRegistration("/");
  return reg ? reg.pushManager.getSubscription() : null;
}

// Each failure is a sentence that says what to do: the settings panel shows it as is.
export async function subscribe() {
  if (!("PushManager" in window)) throw new Error("This browser has no Web Push: on a phone, install the board as an app (Add to Home Screen) and try there.");
  const perm = await Notification.requestPermission();
  if (perm !== "granted") throw new Error("Notifications are blocked for this site: allow them in the browser's site settings, then try again.");
  const reg = (await registerWorker()) && (await navigator.serviceWorker.ready);
  if (!reg) throw new Error("The page's service worker did not start: reload the page and try again.");
  const { key } = await get("/api/push/vapid-public-key");
  let sub = await reg.pushManager.getSubscription();
  if (!sub) {
    try {
      sub = await reg.pushManager.subscribe({ userVisibleOnly: true, applicationServerKey: urlB64ToBytes(key) });
    } catch {
      throw new Error("The browser's push service refused to register: check your connection and try again later.");
    }
  }
  await post("/api/push/subscribe", { ...sub.toJSON(), device: deviceLabel() });
  return sub;
}

export async function unsubscribe() {
  const sub = await currentSubscription();
  if (!sub) return;
  await del("/api/push/subscribe", { endpoint: sub.endpoint });
  await sub.unsubscribe();
}
