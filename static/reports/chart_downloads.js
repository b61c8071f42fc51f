/* Every chart on a report page can be downloaded as PNG and SVG (issue 31), with plotly's own
   image export (Plotly.downloadImage): the figure as drawn, at a publication size. The buttons
   appear under each chart once plotly has drawn it, including charts drawn later (a report that
   finishes computing, a filter). Nothing leaves the browser: the image is made in the page. */
(function () {
  "use strict";
  var SIZE = {width: 1200, height: 700};

  function slug(text) {
    return text.toLowerCase().replace(/[^a-z0-9]+/g, "-").replace(/^-+|-+$/g, "").slice(0, 80) || "chart";
  }

  function chartName(gd, index) {
    var heading = gd.closest("section, figure, details, .card, main");
    var title = heading ? heading.querySelector("h2, h3, figcaption, summary") : null;
    var page = slug(location.pathname.replace(/^\/reports\//, ""));
    return "evalsite-" + page + "-" + slug(gd.id || (title ? title.textContent : "") || "chart-" + (index + 1));
  }

  function download(gd, format, name, status) {
    var ratio = gd.clientWidth > 0 && gd.clientHeight > 0 ? gd.clientHeight / gd.clientWidth : SIZE.height / SIZE.width;
    var height = Math.max(400, Math.min(1600, Math.round(SIZE.width * ratio)));
    status.textContent = "Preparing the " + format.toUpperCase() + "…";
    window.Plotly.downloadImage(gd, {format: format, width: SIZE.width, height: height, scale: format === "png" ? 2 : 1,
                                     filename: name}).then(function () {
      status.textContent = "The " + format.toUpperCase() + " was handed to your browser as " + name + "." + format + ".";
    }, function (err) {
      status.textContent = "The " + format.toUpperCase() + " could not be made: " + (err && err.message ? err.message : err);
    });
  }

  function addButtons(gd, index) {
    if (gd.dataset.downloads) return;
    gd.dataset.downloads = "1";
    var name = chartName(gd, index);
    var box = document.createElement("p");
    box.className = "chart-downloads small muted";
    box.appendChild(document.createTextNode("Download this chart: "));
    var status = document.createElement("span");
    status.className = "chart-download-status";
    status.setAttribute("role", "status");
    status.style.display = "block";
    ["png", "svg"].forEach(function (format, i) {
      var b = document.createElement("button");
      b.type = "button";
      b.className = "link";
      b.textContent = format.toUpperCase();
      b.setAttribute("aria-label", "Download this chart as " + format.toUpperCase());
      b.addEventListener("click", function () { download(gd, format, name, status); });
      if (i) box.appendChild(document.createTextNode(" · "));
      box.appendChild(b);
    });
    box.appendChild(document.createTextNode(" "));
    box.appendChild(status);
    gd.insertAdjacentElement("afterend", box);
  }

  function scan() {
    if (!window.Plotly || !window.Plotly.downloadImage) return;
    // A report's charts live in <main>; plotly's image export draws a hidden copy of the chart
    // straight under <body> (and removes it): that copy gets no buttons.
    document.querySelectorAll("main .js-plotly-plot").forEach(addButtons);
    document.querySelectorAll(".chart-downloads").forEach(function (box) {
      var chart = box.previousElementSibling;
      if (!chart || !chart.classList.contains("js-plotly-plot")) box.remove();
    });
  }

  // Plotly changes the DOM on every hover: look again at most once a frame.
  var pending = false;
  function scanSoon() {
    if (pending) return;
    pending = true;
    window.requestAnimationFrame(function () { pending = false; scan(); });
  }

  document.addEventListener("DOMContentLoaded", function () {
    scan();
    new MutationObserver(scanSoon).observe(document.body, {subtree: true, childList: true, attributes: true, attributeFilter: ["class"]});
  });
  window.addEventListener("load", scan);
})();
