/* Report pages: poll a report being computed and reload as soon as it is ready.
 *
 * Most cold reports take well under a second, so the first polls come quickly and back off
 * while the computation goes on (0.25 s, 0.5 s, 1 s, 2 s, then every 3 s): a short report
 * appears almost as soon as it is ready, a long one is not polled more than it needs.
 */
(function () {
  "use strict";
  var DELAYS = [250, 500, 1000, 2000, 3000];
  function nextDelay(attempt) { return DELAYS[Math.min(attempt, DELAYS.length - 1)]; }
  window.evalsiteReportPoll = {nextDelay: nextDelay};

  var box = document.getElementById("report-pending");
  if (!box) return;
  var url = box.getAttribute("data-job-url");
  var bar = document.getElementById("report-progress");
  var percent = document.getElementById("report-percent");
  var stage = document.getElementById("report-stage");
  var attempt = 0;
  function later() { window.setTimeout(poll, nextDelay(attempt++)); }
  function poll() {
    fetch(url, {credentials: "same-origin", headers: {"Accept": "application/json"}})
      .then(function (r) { return r.json(); })
      .then(function (state) {
        if (!state.pending) { window.location.reload(); return; }
        if (bar) bar.value = state.progress || 0;
        if (percent) percent.textContent = Math.round(100 * (state.progress || 0)) + "%";
        if (stage) stage.textContent = state.stage || "";
        if (state.status === "failed") { stage.textContent = "The computation failed: " + (state.error || "unknown error"); return; }
        later();
      })
      .catch(later);
  }
  later();
})();
