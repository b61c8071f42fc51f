// Opening a rating starts the assignment: a state change, so the page POSTs it once loaded
// (GET /ratings/<id>/ changes nothing; a cross-site image cannot start an assignment).
// Separate from rating.js on purpose; the first autosave opens the rating too.
(function () {
  "use strict";
  var configEl = document.getElementById("rating-config");
  if (!configEl) return;
  var config = JSON.parse(configEl.textContent);
  if (!config.openUrl || config.submitted) return;
  var input = document.querySelector("input[name=csrfmiddlewaretoken]");
  var token = input ? input.value : "";
  if (!token) {
    try { token = JSON.parse(document.body.getAttribute("hx-headers") || "{}")["X-CSRFToken"] || ""; } catch (e) { token = ""; }
  }
  fetch(config.openUrl, {
    method: "POST",
    credentials: "same-origin",
    headers: { "X-CSRFToken": token, Accept: "application/json" },
  }).catch(function () { /* offline: the first autosave opens it */ });
})();
