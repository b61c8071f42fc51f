// The break prompt of the rating page: "Keep going" hides it until another `limit`
// conversations are rated in this sitting (remembered for this browser tab only).
(function () {
  "use strict";
  var box = document.getElementById("break-prompt");
  if (!box) return;
  var key = "evalsite-break-dismissed-" + box.dataset.study;
  var count = parseInt(box.dataset.count, 10), limit = parseInt(box.dataset.limit, 10);
  var dismissedAt = parseInt(window.sessionStorage.getItem(key) || "", 10);
  if (!isNaN(dismissedAt) && count >= dismissedAt && count < dismissedAt + limit) box.hidden = true;
  // The page's own "Take a break" waits for answers still being saved: go through it.
  var take = box.querySelector("a.break-take"), pageTake = document.getElementById("take-break");
  if (take && pageTake) {
    take.addEventListener("click", function (event) { event.preventDefault(); pageTake.click(); });
  }
  var button = document.getElementById("break-dismiss");
  button.addEventListener("click", function () {
    try { window.sessionStorage.setItem(key, String(count)); } catch (e) { /* private mode: hide anyway */ }
    box.hidden = true;
  });
})();
