/* Small helpers for every form: busy states on slow actions, and searchable checkbox lists.
 *
 *   <form data-busy="Computing the consensus…">  the submit button is disabled and says so
 *   <div data-filter-list> <input type=search data-filter> ... <label data-filter-item>  search
 */
(function () {
  "use strict";

  document.addEventListener("submit", function (event) {
    var form = event.target;
    if (!form.matches || !form.matches("form[data-busy]") || event.defaultPrevented) return;
    var button = event.submitter || form.querySelector("button[type=submit], button:not([type])");
    if (!button) return;
    // Disabled after the browser has taken the submitter's value.
    setTimeout(function () {
      button.disabled = true;
      button.dataset.label = button.textContent;
      button.textContent = form.dataset.busy;
      form.setAttribute("aria-busy", "true");
      var note = form.querySelector(".busy-note");
      if (note) note.hidden = false;
    }, 0);
  });
  // Back from the browser cache: the page must not stay busy.
  window.addEventListener("pageshow", function () {
    document.querySelectorAll("form[aria-busy=true]").forEach(function (form) {
      form.removeAttribute("aria-busy");
      form.querySelectorAll("button[data-label]").forEach(function (b) { b.disabled = false; b.textContent = b.dataset.label; });
    });
  });

  function setUpFilter(box) {
    var input = box.querySelector("input[data-filter]");
    var count = box.querySelector("[data-filter-count]");
    var items = Array.from(box.querySelectorAll("[data-filter-item]"));
    function update() {
      var words = (input ? input.value : "").toLowerCase().split(/\s+/).filter(Boolean);
      var shown = 0;
      items.forEach(function (item) {
        var text = item.textContent.toLowerCase();
        var checked = !!item.querySelector("input:checked");
        var match = checked || words.every(function (w) { return text.indexOf(w) >= 0; });
        item.hidden = !match;
        if (match) shown += 1;
      });
      if (count) {
        var picked = box.querySelectorAll("input[type=checkbox]:checked").length;
        count.textContent = picked + " chosen" + (words.length ? ", " + shown + " shown" : "");
      }
    }
    if (input) input.addEventListener("input", update);
    box.addEventListener("change", update);
    update();
  }
  document.querySelectorAll("[data-filter-list]").forEach(setUpFilter);
})();
