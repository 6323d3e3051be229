// Talking to the server. Every state-changing request carries the CSRF token the
// server handed out in a (readable) cookie, echoed in a header: the server checks
// both match. A 401 anywhere means "show the login page".

export class Unauthorized extends Error {}

const CSRF_COOKIES = ["pb_csrf"];
const CSRF_HEADER = "X-CSRF-Token";

export function csrfToken() {
  const jar = document.cookie.split(";").map((c) => c.trim());
  for (const name of CSRF_COOKIES) {
    const hit = jar.find((c) => c.startsWith(name + "="));
    if (hit) return decodeURIComponent(hit.slice(name.length + 1));
  }
  return "";
}

async function request(method, url, body) {
  const headers = { Accept: "application/json" };
  if (method !== "GET") headers[CSRF_HEADER] = csrfToken();
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const res = await fetch(url, {
    method,
    headers,
    credentials: "same-origin",
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (res.status === 401) throw new Unauthorized(url);
  if (!res.ok) {
    let detail = res.statusText;
    try {
      const j = await res.json();
      detail = typeof j.detail === "string" ? j.detail : JSON.stringify(j.detail ?? j);
    } catch { /* not JSON */ }
    throw new Error(`${method} ${url}: ${res.status} ${detail}`);
  }
  if (res.status === 204) return null;
  const type = res.headers.get("Content-Type") || "";
  return type.includes("json") ? res.json() : res.text();
}

export const get = (url) => request("GET", url);
export const post = (url, body = {}) => request("POST", url, body);
export const del = (url, body) => request("DELETE", url, body);
export const put = (url, body) => request("PUT", url, body);
