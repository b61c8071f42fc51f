/* Dates in the reader's own locale and time zone.
 *
 *   <time datetime="2026-03-02T14:05:00+00:00" data-local="datetime">2026-03-02 14:05 UTC</time>
 *
 * The server writes ISO 8601 in the attribute and a readable fallback as the text (the
 * `local_time` template tag); here the text becomes the browser's own way of writing it.
 * Also run on content htmx swaps in (progress panels refresh every few seconds).
 */
(function () {
  "use strict";
  var STYLES = {
    datetime: {dateStyle: "medium", timeStyle: "short"},
    date: {dateStyle: "medium"},
    time: {timeStyle: "medium"},
    seconds: {dateStyle: "medium", timeStyle: "medium"}
  };
  var formats = {};

  function format(el) {
    var when = new Date(el.getAttribute("datetime"));
    if (isNaN(when.getTime())) return;
    var style = STYLES[el.getAttribute("data-local")] ? el.getAttribute("data-local") : "datetime";
    try {
      formats[style] = formats[style] || new Intl.DateTimeFormat(undefined, STYLES[style]);
      if (!el.title) el.title = el.textContent;  // the server's reading stays one hover away
      el.textContent = formats[style].format(when);
      el.setAttribute("data-localised", "");
    } catch (e) { /* an old browser keeps the server's text */ }
  }

  function run(root) {
    (root || document).querySelectorAll("time[data-local]:not([data-localised])").forEach(format);
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", function () { run(); });
  else run();
  document.addEventListener("htmx:afterSwap", function (event) { run(event.target); });
  window.evalsiteLocalTime = run;
})();
