// The console's one script: parts of a page marked `data-live` follow the server. Every two
// seconds, while the page is visible, the page is fetched again and each live part whose content
// changed is replaced by the server's (rendered and escaped there). Nothing else depends on it:
// without it the pages work as they are, reloaded by hand.
"use strict";
(function () {
  const EVERY_MS = 2000;
  function live() { return document.querySelectorAll("[data-live]"); }
  async function refresh() {
    if (document.visibilityState !== "visible" || live().length === 0) return;
    let response;
    try {
      response = await fetch(window.location.href, { credentials: "same-origin", headers: { "Accept": "text/html", "X-Live-Refresh": "1" } });
    } catch (_) { return; }
    if (!response.ok || response.redirected) return;
    const fresh = new DOMParser().parseFromString(await response.text(), "text/html");
    for (const part of live()) {
      if (part.contains(document.activeElement) && document.activeElement !== document.body) continue;
      const next = fresh.querySelector('[data-live="' + CSS.escape(part.dataset.live) + '"]');
      if (next && next.innerHTML !== part.innerHTML) part.innerHTML = next.innerHTML;
    }
    // A decided approval's outcome appears once the decision is made elsewhere: take new live parts too.
    for (const next of fresh.querySelectorAll("[data-live]")) {
      const id = next.id;
      if (id && !document.getElementById(id)) {
        const holder = next.closest("article[id]");
        const here = holder && document.getElementById(holder.id);
        if (here && !here.querySelector("form:focus-within")) here.replaceWith(document.importNode(holder, true));
      }
    }
  }
  window.setInterval(refresh, EVERY_MS);
})();
