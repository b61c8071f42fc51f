/* The review page: the turns an item cites are highlighted while the item is active (focused,
   hovered or opened from a link); each cited turn says who cites it; j / k open the next /
   previous conversation of the list and n the next item with a disagreement. */
(function () {
  "use strict";
  function ready(fn) { if (document.readyState !== "loading") fn(); else document.addEventListener("DOMContentLoaded", fn); }
  ready(function () {
    var items = Array.prototype.slice.call(document.querySelectorAll(".review-item"));
    var data = document.getElementById("turn-citations");
    var cites = data ? JSON.parse(JSON.parse(data.textContent)) : {};
    Object.keys(cites).forEach(function (turn) {
      var el = document.querySelector('#turn-' + turn + ' .cites');
      if (el) el.textContent = "cited by " + cites[turn].join("; ");
    });
    function activate(item) {
      items.forEach(function (i) { i.classList.toggle("active", i === item); });
      var turns = (item && item.dataset.turns ? item.dataset.turns.split(" ") : []).filter(Boolean);
      document.querySelectorAll(".transcript .msg").forEach(function (m) {
        m.classList.toggle("cited", turns.indexOf(m.dataset.turn) >= 0);
      });
      var first = turns.length ? document.getElementById("turn-" + turns[0]) : null;
      var box = document.querySelector(".review-transcript .transcript-box");
      if (first && box && window.matchMedia("(min-width: 801px)").matches) {
        box.scrollTop = first.offsetTop - box.offsetTop - 8;
      }
    }
    items.forEach(function (item) {
      item.addEventListener("focusin", function () { activate(item); });
      item.addEventListener("click", function () { activate(item); });
    });
    var start = location.hash && location.hash.indexOf("#item-") === 0 ? document.getElementById(location.hash.slice(1)) : null;
    activate(start || document.querySelector(".review-item.disagreement") || items[0]);
    document.addEventListener("keydown", function (e) {
      if (e.altKey || e.ctrlKey || e.metaKey) return;
      var t = e.target;
      if (t && (t.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(t.tagName))) return;
      var go = null;
      if (e.key === "j") go = document.getElementById("review-next");
      if (e.key === "k") go = document.getElementById("review-prev");
      if (go) { location.href = go.href; e.preventDefault(); return; }
      if (e.key === "n") {
        var list = items.filter(function (i) { return i.classList.contains("disagreement"); });
        if (!list.length) return;
        var current = items.filter(function (i) { return i.classList.contains("active"); })[0];
        var next = list.filter(function (i) { return !current || items.indexOf(i) > items.indexOf(current); })[0] || list[0];
        next.focus(); next.scrollIntoView({block: "start"}); activate(next); e.preventDefault();
      }
    });
  });
})();
