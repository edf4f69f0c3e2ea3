// edi-inbox console: the one script of the console, served from /console/assets/ (the
// Content-Security-Policy allows no other). Every element with `data-refresh` is reloaded from
// the same page every 5 seconds while the tab is visible, so new deliveries appear on their own.
// A form marked `data-confirm` (Discard, Suspend) is sent only once the person confirms it.
"use strict";

async function refresh() {
  const live = document.querySelectorAll("[data-refresh][id]");
  if (live.length === 0 || document.visibilityState !== "visible") return;
  try {
    const answer = await fetch(location.href, { credentials: "same-origin", redirect: "error" });
    if (!answer.ok) return;
    const page = new DOMParser().parseFromString(await answer.text(), "text/html");
    for (const element of live) {
      const fresh = page.getElementById(element.id);
      if (fresh) element.replaceWith(document.importNode(fresh, true));
    }
  } catch (_) {
    // Offline or signed out: the next page load says so.
  }
}

setInterval(refresh, 5000);

document.addEventListener("submit", (event) => {
  const question = event.target.dataset && event.target.dataset.confirm;
  if (question && !window.confirm(question)) event.preventDefault();
});
