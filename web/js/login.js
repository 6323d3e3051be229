// The sign-in page: POST /api/login sets the session and CSRF cookies, then the board.

const form = document.getElementById("login");
const error = document.getElementById("login-error");

form.addEventListener("submit", async (ev) => {
  ev.preventDefault();
  error.textContent = "";
  let res;
  try {
    res = await fetch("/api/login", {
      method: "POST",
      headers: { "Content-Type": "application/json", Accept: "application/json" },
      credentials: "same-origin",
      body: JSON.stringify({ name: form.elements.name.value, password: form.elements.password.value }),
    });
  } catch {
    error.textContent = "The server cannot be reached.";
    return;
  }
  if (res.ok) {
    location.replace("/");
    return;
  }
  error.textContent = res.status === 401 ? "Wrong name or password." : `Sign-in failed (${res.status}).`;
});
