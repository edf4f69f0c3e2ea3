// edi-inbox console: the one script of the console, served from /console/assets/ (the
// Content-Security-Policy allows no other). Every element with `data-refresh` is reloaded from
// the same page every 5 seconds while the tab is visible, so new deliveries appear on their own;
// once the session has ended, the page says so instead of going stale.
// A form marked `data-confirm` (Discard, Suspend) is sent only once the person confirms it.
"use strict";

async function refresh() {
  const live = document.querySelectorAll("[data-refresh][id]");
  if (live.length === 0 || document.visibilityState !== "visible") return;
  try {
    const answer = await fetch(location.href, { credentials: "same-origin", redirect: "manual" });
    // Sent to sign in: the session ended (signed out in another tab, disabled, expired).
    if (answer.type === "opaqueredirect" || answer.status === 303) return signedOut();
    if (!answer.ok) return;
    const page = new DOMParser().parseFromString(await answer.text(), "text/html");
    for (const element of live) {
      const fresh = page.getElementById(element.id);
      if (fresh) element.replaceWith(document.importNode(fresh, true));
    }
  } catch (_) {
    // Offline: the next refresh tries again.
  }
}

// Says, once, that what the page shows is no longer refreshed, with a way back to it.
function signedOut() {
  if (document.getElementById("signed-out")) return;
  const notice = document.createElement("p");
  notice.id = "signed-out";
  notice.className = "problem";
  notice.setAttribute("role", "alert");
  notice.append("Signed out: this page is no longer refreshed. ");
  const link = document.createElement("a");
  link.href = "/console/sign-in?next=" + encodeURIComponent(location.pathname + location.search);
  link.textContent = "Sign in again";
  notice.append(link);
  (document.querySelector("main") || document.body).prepend(notice);
}

setInterval(refresh, 5000);

document.addEventListener("submit", (event) => {
  const question = event.target.dataset && event.target.dataset.confirm;
  if (question && !window.confirm(question)) event.preventDefault();
});
