/* The chatbot form: the "HTTP chatbots only" settings show only when the kind is an HTTP endpoint.
 * Without JavaScript every field shows, the group's legend says when it applies, and the server
 * ignores those fields for other kinds. */
(function () {
  "use strict";
  var form = document.getElementById("target-form");
  if (!form) return;
  var kind = form.querySelector("select[name=kind]");
  var groups = form.querySelectorAll("[data-show-for-kind]");
  function update() {
    groups.forEach(function (group) {
      var show = kind.value === group.dataset.showForKind;
      // A group holding an error stays open: the researcher must see what to fix.
      group.hidden = !show && !group.querySelector(".has-error");
    });
  }
  kind.addEventListener("change", update);
  update();
})();
