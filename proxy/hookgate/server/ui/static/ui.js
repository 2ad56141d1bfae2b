// hookgate admin UI: times in the viewer's own zone, the CSRF token on htmx requests,
// and a confirmation before a destructive form is sent. No inline script anywhere (the
// pages' Content-Security-Policy allows this origin's files only).
(function () {
  "use strict";
  var zone = Intl.DateTimeFormat().resolvedOptions().timeZone;
  var format = new Intl.DateTimeFormat(undefined, {
    year: "numeric", month: "2-digit", day: "2-digit",
    hour: "2-digit", minute: "2-digit", second: "2-digit", timeZoneName: "short",
  });

  function localTimes(root) {
    root.querySelectorAll("time[datetime]").forEach(function (node) {
      if (node.dataset.local) return;
      var moment = new Date(node.getAttribute("datetime"));
      if (isNaN(moment)) return;
      node.title = node.textContent + " (" + zone + ")";
      node.textContent = format.format(moment);
      node.dataset.local = "1";
    });
  }

  document.addEventListener("DOMContentLoaded", function () {
    localTimes(document);
    var zoneNote = document.getElementById("zone");
    if (zoneNote) zoneNote.textContent = zone;
  });
  document.addEventListener("htmx:afterSwap", function (event) { localTimes(event.target); });
  document.addEventListener("htmx:configRequest", function (event) {
    var token = document.querySelector('meta[name="csrf-token"]');
    if (token) event.detail.headers["x-csrf-token"] = token.content;
  });
  document.addEventListener("submit", function (event) {
    var message = event.target.getAttribute("data-confirm");
    if (message && !window.confirm(message)) event.preventDefault();
  });
})();
