// Every string from a pane is untrusted (P7501-19). It reaches the page only through
// textContent; before that, bidi overrides, zero-width and other invisible formatting
// characters are removed so a name cannot disguise itself, and control characters
// become spaces. The server strips too; this is the second lock on the door.

const FORMAT = /[\p{Cf}\u034F\u115F\u1160\u17B4\u17B5\u180B-\u180F\u3164\uFE00-\uFE0F\uFFA0\uFFF9-\uFFFB]/gu;
const CONTROL = /[\p{Cc}\u2028\u2029]/gu;

/** Clean one untrusted value for display; null/undefined become "". */
export function clean(value, maxLen = 4096) {
  if (value === null || value === undefined) return "";
  let s = String(value);
  if (s.length > maxLen) s = s.slice(0, maxLen) + "…";
  return s.replace(FORMAT, "").replace(CONTROL, " ");
}

/** Set an element's text to a cleaned untrusted value (never innerHTML). */
export function setText(el, value, maxLen) {
  el.textContent = clean(value, maxLen);
}
