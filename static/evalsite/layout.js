/* Layout helpers for every page (issue 19): the phone menu, and tables that scroll in their own box.
 *
 * The menu is a <details> rendered open, so without JavaScript every link shows (a phone user can
 * fold it with its "Menu" button); here it is folded on narrow windows and kept open on wide ones,
 * whose stylesheet hides the button.
 *
 * A table wider than its column scrolls inside its own box instead of making the whole page
 * scroll sideways. The box is a labelled region that takes the keyboard focus, so arrow keys
 * scroll it (axe: scrollable-region-focusable). Tables already in such a box (.table-frame) are
 * left alone; a bare .scroll wrapper of one table becomes the box. Fragments htmx swaps in
 * (progress, report states) get the same treatment.
 */
(function () {
  "use strict";

  var NARROW = window.matchMedia("(max-width: 760px)");

  function fitMenu() {
    var menu = document.getElementById("site-menu");
    if (menu) menu.open = !NARROW.matches;
  }

  function headingBefore(el) {
    for (var node = el; node && node !== document.body; node = node.parentElement) {
      for (var sib = node.previousElementSibling; sib; sib = sib.previousElementSibling) {
        if (/^H[1-4]$/.test(sib.tagName)) return sib.textContent;
        var inner = sib.querySelectorAll("h1, h2, h3, h4");
        if (inner.length) return inner[inner.length - 1].textContent;
      }
    }
    return "";
  }

  function tableName(table) {
    var caption = table.querySelector("caption");
    var named = table.getAttribute("aria-label");
    var by = table.getAttribute("aria-labelledby");
    var byEl = by && document.getElementById(by.split(" ")[0]);
    var text = (caption && caption.textContent) || named || (byEl && byEl.textContent) || headingBefore(table) || "Table";
    return text.replace(/\s+/g, " ").trim().slice(0, 80);
  }

  var used = {};

  function boxTables(scope) {
    var root = scope && scope.querySelectorAll ? scope : document;
    var tables = root.tagName === "TABLE" ? [root] : Array.prototype.slice.call(root.querySelectorAll("table"));
    tables.forEach(function (table) {
      if (table.closest(".table-scroll, .table-frame, [data-no-scroll]")) return;
      var parent = table.parentElement;
      var box;
      if (parent.classList.contains("scroll") && parent.children.length === 1) {
        box = parent;
      } else {
        box = document.createElement("div");
        parent.insertBefore(box, table);
        box.appendChild(table);
      }
      box.classList.add("table-scroll");
      if (!box.hasAttribute("tabindex")) box.tabIndex = 0;
      box.setAttribute("role", "region");
      if (!box.hasAttribute("aria-label") && !box.hasAttribute("aria-labelledby")) {
        var name = tableName(table);
        used[name] = (used[name] || 0) + 1; // landmarks need distinct names
        box.setAttribute("aria-label", used[name] > 1 ? name + " (table " + used[name] + ")" : name + " (table)");
      }
    });
  }

  fitMenu();
  if (NARROW.addEventListener) NARROW.addEventListener("change", fitMenu);
  boxTables(document);
  document.addEventListener("htmx:load", function (event) { boxTables(event.detail && event.detail.elt); });
})();
