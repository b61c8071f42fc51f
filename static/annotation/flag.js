/* "Flag this conversation": send the flag without leaving the rating page, so nothing typed is lost.
 * Without JavaScript the form posts normally and comes back to the page. */
(function () {
  "use strict";
  // Ctrl+Enter in the flag's note sends the flag, never the rating (the page's own shortcut).
  document.querySelectorAll("form[data-flag-form]").forEach(function (form) {
    form.addEventListener("keydown", function (event) {
      if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) {
        event.preventDefault();
        event.stopPropagation();
        form.requestSubmit();
      }
    });
  });
  document.addEventListener("submit", function (event) {
    var form = event.target;
    if (!form.matches || !form.matches("form[data-flag-form]")) return;
    event.preventDefault();
    var status = form.querySelector(".flag-status");
    var button = form.querySelector("button[type=submit]");
    button.disabled = true;
    fetch(form.action, {method: "POST", body: new FormData(form), credentials: "same-origin",
                        headers: {"Accept": "application/json", "X-Requested-With": "fetch"}})
      .then(function (r) { return r.json().then(function (body) { return {ok: r.ok, body: body}; }); })
      .then(function (res) {
        status.textContent = res.ok ? res.body.message : "Not sent: " + (res.body.detail || "please try again") + ".";
        status.classList.toggle("error", !res.ok);
        if (res.ok) {
          form.closest("details").querySelector("summary").textContent = "Flagged: " + res.body.reason.toLowerCase();
          button.textContent = "Update the flag";
        }
      })
      .catch(function () { status.textContent = "Not sent: the server did not answer. Your answers are safe; try again."; status.classList.add("error"); })
      .then(function () { button.disabled = false; });
  });
})();
