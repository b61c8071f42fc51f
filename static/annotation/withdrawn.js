/* The page of a withdrawn conversation: list the answers this browser still keeps for it
 * (rating.js stores every answer until the server confirms it) and let the rater discard them. */
(function () {
  "use strict";
  var idEl = document.getElementById("withdrawn-assignment");
  if (!idEl) return;
  var storeKey = "evalsite:rating:" + JSON.parse(idEl.textContent);
  var kept;
  try { kept = JSON.parse(window.localStorage.getItem(storeKey) || "null"); } catch (e) { kept = null; }
  var entries = kept && kept.entries ? Object.keys(kept.entries).map(function (k) { return kept.entries[k]; }) : [];
  if (!entries.length) return;
  var list = document.getElementById("local-answers-list");
  entries.forEach(function (entry) {
    var li = document.createElement("li");
    li.textContent = (entry.label || ("Question " + entry.item_key)) + ": " + (entry.value === "" ? "(empty)" : entry.value) +
      (entry.note ? " (note: " + entry.note + ")" : "");
    list.appendChild(li);
  });
  document.getElementById("local-answers").hidden = false;
  document.getElementById("local-answers-none").hidden = true;
  document.getElementById("discard-local").addEventListener("click", function () {
    window.localStorage.removeItem(storeKey);
    document.getElementById("local-answers").hidden = true;
    var none = document.getElementById("local-answers-none");
    none.textContent = "The unsaved answers were discarded from this browser.";
    none.hidden = false;
  });
})();
