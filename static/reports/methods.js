/* "Copy" buttons of the methods paragraph. Without JavaScript the buttons stay hidden and the text is selectable. */
(function () {
  "use strict";
  if (window.evalsiteMethodsCopy) return;  // the block may appear twice on a page (scorecard and regression)
  window.evalsiteMethodsCopy = true;

  function plainText(element) {
    var parts = element.tagName === "UL" || element.tagName === "OL" ? element.querySelectorAll("li") : element.querySelectorAll("p");
    if (!parts.length) return element.textContent.trim();
    return Array.prototype.map.call(parts, function (p) { return p.textContent.replace(/\s+/g, " ").trim(); })
      .join(element.tagName === "DIV" ? "\n\n" : "\n");
  }

  function selectOnly(element) {
    var range = document.createRange();
    range.selectNodeContents(element);
    var selection = window.getSelection();
    selection.removeAllRanges();
    selection.addRange(range);
  }

  function copy(button) {
    var target = document.getElementById(button.getAttribute("data-copy"));
    var status = button.parentNode.querySelector(".methods-copied");
    if (!target) return;
    var text = plainText(target);
    function said(words) { if (status) status.textContent = words; }
    if (navigator.clipboard && window.isSecureContext) {
      navigator.clipboard.writeText(text).then(function () { said("Copied."); }, function () {
        selectOnly(target); said("Selected: press Ctrl+C (⌘C) to copy.");
      });
      return;
    }
    selectOnly(target);
    var done = false;
    try { done = document.execCommand("copy"); } catch (e) { done = false; }
    said(done ? "Copied." : "Selected: press Ctrl+C (⌘C) to copy.");
  }

  function ready() {
    Array.prototype.forEach.call(document.querySelectorAll(".methods-copy"), function (button) {
      button.hidden = false;
      button.addEventListener("click", function () { copy(button); });
    });
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", ready); else ready();
})();
