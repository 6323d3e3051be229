// Talking to the server. Every state-changing request carries the CSRF token the
// server handed out in a (readable) cookie, echoed in a header: the server checks
// both match. A 401 anywhere means "show the login page".
//
// A failed request becomes an ApiError whose message is a sentence for a person (what
// went wrong and what to do), never "METHOD URL: STATUS": the message is shown as is
// in the page's status line and panels. `status` keeps the number for code.

export class Unauthorized extends Error {}

export class ApiError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

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

/** The server's reason, first letter up and ending in a full stop. */
function reason(detail) {
  const d = String(detail || "").trim().replace(/[.\s]+$/, "");
  return d ? d[0].toUpperCase() + d.slice(1) + "." : "";
}

/** A failed response as a sentence that says what to do (exported for tests). */
export function errorSentence(status, detail) {
  const why = reason(detail);
  if (status === 401) return "Your sign-in has ended: sign in again.";
  if (status === 403) return `${why || "This is not allowed for you."} Ask the board's admin if you need it.`;
  if (status === 404) return "The board no longer knows this (it may have gone): go back to the board.";
  if (status === 413) return "That is too long to send: shorten it and try again.";
  if (status === 429) return "Too many requests just now: wait a minute and try again.";
  if (status >= 500) return "The board's server failed to answer: try again in a moment.";
  return `${why || "The board refused this."} Check it and try again.`;
}

async function request(method, url, body, signal, keepalive = false) {
  const headers = { Accept: "application/json" };
  if (method !== "GET") headers[CSRF_HEADER] = csrfToken();
  if (body !== undefined) headers["Content-Type"] = "application/json";
  let res;
  try {
    res = await fetch(url, {
      method,
      headers,
      credentials: "same-origin",
      body: body === undefined ? undefined : JSON.stringify(body),
      signal,
      keepalive,
    });
  } catch {
    throw new ApiError(0, "The board cannot be reached: check your connection; it will try again.");
  }
  if (res.status === 401) throw new Unauthorized(url);
  if (!res.ok) {
    let detail = "";
    try {
      const j = await res.json();
      detail = typeof j.detail === "string" ? j.detail : "";
    } catch { /* not JSON */ }
    throw new ApiError(res.status, errorSentence(res.status, detail));
  }
  if (res.status === 204) return null;
  const type = res.headers.get("Content-Type") || "";
  return type.includes("json") ? res.json() : res.text();
}

/** `signal`: an AbortSignal that ends the request (a long poll nobody waits on any more). */
export const get = (url, { signal } = {}) => request("GET", url, undefined, signal);
/** `keepalive`: the request outlives the page (said as the tab goes away). */
export const post = (url, body = {}, { keepalive = false } = {}) => request("POST", url, body, undefined, keepalive);
export const del = (url, body) => request("DELETE", url, body);
export const put = (url, body) => request("PUT", url, body);
