/* Report pages: poll a report being computed and reload when it is ready. */
(function () {
  "use strict";
  var box = document.getElementById("report-pending");
  if (!box) return;
  var url = box.getAttribute("data-job-url");
  var bar = document.getElementById("report-progress");
  var percent = document.getElementById("report-percent");
  var stage = document.getElementById("report-stage");
  function poll() {
    fetch(url, {credentials: "same-origin", headers: {"Accept": "application/json"}})
      .then(function (r) { return r.json(); })
      .then(function (state) {
        if (!state.pending) { window.location.reload(); return; }
        if (bar) bar.value = state.progress || 0;
        if (percent) percent.textContent = Math.round(100 * (state.progress || 0)) + "%";
        if (stage) stage.textContent = state.stage || "";
        if (state.status === "failed") { stage.textContent = "The computation failed: " + (state.error || "unknown error"); return; }
        window.setTimeout(poll, 1000);
      })
      .catch(function () { window.setTimeout(poll, 3000); });
  }
  window.setTimeout(poll, 700);
})();
