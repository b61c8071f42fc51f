/* The rating page: autosave every answer, guided question flows, keyboard-only rating.
 *
 * Saves go one at a time to POST /api/v1/my/assignments/<id>/answers/ with the revision the
 * page last saw; the server answers the new revision, or 409 when the rating changed
 * elsewhere (another tab or device). Until a change is saved it stays on the page and in
 * `pending`; a failed save is retried and never dropped. Plain JavaScript, no dependencies.
 */
(function () {
  "use strict";

  var configEl = document.getElementById("rating-config");
  if (!configEl) return;
  var config = JSON.parse(configEl.textContent);
  var ITEM = ".item, .fq, .ro-item";
  var form = document.getElementById("rating-form");
  var statusEl = document.getElementById("save-status");
  var banner = document.getElementById("save-banner");
  var csrfInput = document.querySelector("input[name=csrfmiddlewaretoken]");
  var revision = config.revision;
  var lastSaveAt = Date.now();
  var pending = new Map(); // "part|key" -> {part, item_key, value, note}
  var inFlight = null;
  var conflict = false;
  var retryDelay = 0;
  var retryTimer = null;
  var current = null; // the item the keyboard acts on

  // ---------------------------------------------------------------- status and banner
  function setStatus(text, kind) {
    if (!statusEl) return;
    statusEl.textContent = text;
    statusEl.className = "save-status" + (kind ? " " + kind : "");
  }

  function showBanner(kind, text, list, buttons) {
    banner.className = "banner " + kind;
    banner.querySelector(".banner-text").textContent = text;
    var ul = banner.querySelector(".banner-list");
    ul.textContent = "";
    (list || []).forEach(function (line) {
      var li = document.createElement("li");
      li.textContent = line;
      ul.appendChild(li);
    });
    banner.querySelector(".banner-retry").hidden = !(buttons && buttons.retry);
    banner.querySelector(".banner-reload").hidden = !(buttons && buttons.reload);
    banner.hidden = false;
  }

  function hideBanner() {
    if (!conflict) banner.hidden = true;
  }

  function itemFor(part, key) {
    return document.querySelector(
      '[data-part="' + CSS.escape(part) + '"][data-key="' + CSS.escape(key) + '"]'
    );
  }

  function describe(entry) {
    var el = itemFor(entry.part, entry.item_key);
    var num = el ? (el.querySelector(".qnum") || {}).textContent || entry.item_key : entry.item_key;
    return "Question " + num + ": " + (entry.value === "" ? "(empty)" : entry.value) +
      (entry.note ? " (note: " + entry.note + ")" : "");
  }

  // ---------------------------------------------------------------- saving
  function answerOf(el) {
    var text = el.querySelector("textarea[data-text-answer]");
    if (text) return { value: text.value, note: null };
    var checked = el.querySelector("input[type=radio]:checked");
    var noteEl = el.querySelector("textarea[data-note]");
    return { value: checked ? checked.value : null, note: noteEl ? noteEl.value : null };
  }

  function queueSave(el) {
    var answer = answerOf(el);
    if (answer.value === null) return; // a note waits for its answer
    var entry = { part: el.dataset.part, item_key: el.dataset.key, value: answer.value };
    if (answer.note !== null) entry.note = answer.note;
    pending.delete(entry.part + "|" + entry.item_key); // keep queue order = order of changes
    pending.set(entry.part + "|" + entry.item_key, entry);
    el.classList.toggle("answered", answer.value !== "");
    flush();
  }

  function flush() {
    if (inFlight || conflict || retryTimer) return;
    if (!pending.size) {
      setStatus("All answers saved", "saved");
      hideBanner();
      return;
    }
    var id = pending.keys().next().value;
    var entry = pending.get(id);
    pending.delete(id);
    var now = Date.now();
    var body = Object.assign({}, entry, {
      expected_revision: revision,
      elapsed_seconds: Math.round((now - lastSaveAt) / 100) / 10,
    });
    setStatus("Saving…", "saving");
    inFlight = fetch(config.answersUrl, {
      method: "POST",
      credentials: "same-origin",
      headers: { "Content-Type": "application/json", "X-CSRFToken": csrfInput.value, Accept: "application/json" },
      body: JSON.stringify(body),
    })
      .then(function (response) {
        return response.json().catch(function () { return {}; }).then(function (data) {
          return { status: response.status, data: data };
        });
      })
      .then(function (result) {
        inFlight = null;
        if (result.status === 200) {
          revision = result.data.revision;
          lastSaveAt = now;
          retryDelay = 0;
          var hidden = document.getElementById("expected-revision");
          if (hidden) hidden.value = revision;
          if (result.data.flow) applyFlow(result.data.flow, entry.item_key);
          flush();
        } else if (result.status === 409) {
          keep(id, entry);
          conflict = true;
          setStatus("Not saved", "error");
          showBanner(
            "conflict",
            (result.data.detail ? capitalise(result.data.detail) + ". " : "") +
              "To protect both versions nothing more is saved from this page. Reload to see the saved answers, then give these answers again:",
            Array.from(pending.values()).map(describe),
            { reload: true }
          );
        } else if (result.status >= 400 && result.status < 500) {
          // The server refused this answer (invalid, locked, gone): say so, keep the rest going.
          setStatus("Not saved", "error");
          showBanner("error", capitalise(result.data.detail || "this answer was refused") + ".", [describe(entry)], {});
          flush();
        } else {
          retryLater(id, entry, "The server had a problem (" + result.status + ").");
        }
      })
      .catch(function () {
        inFlight = null;
        retryLater(id, entry, "No connection to the server.");
      });
  }

  function keep(id, entry) {
    if (!pending.has(id)) {
      // re-queue at the front: a newer value for the same question, if any, wins
      var rest = Array.from(pending.entries());
      pending.clear();
      pending.set(id, entry);
      rest.forEach(function (pair) { pending.set(pair[0], pair[1]); });
    }
  }

  function retryLater(id, entry, why) {
    keep(id, entry);
    retryDelay = Math.min(retryDelay ? retryDelay * 2 : 2000, 30000);
    setStatus("Not saved yet", "error");
    showBanner(
      "error",
      why + " Your answers are still on this page and will be saved when the connection is back (next try in " +
        Math.round(retryDelay / 1000) + " s). Not saved yet:",
      Array.from(pending.values()).map(describe),
      { retry: true }
    );
    retryTimer = setTimeout(function () { retryTimer = null; flush(); }, retryDelay);
  }

  function retryNow() {
    if (retryTimer) clearTimeout(retryTimer);
    retryTimer = null;
    flush();
  }

  function idle() {
    return !inFlight && !pending.size;
  }

  function whenIdle(timeoutMs) {
    flush();
    return new Promise(function (resolve, reject) {
      var started = Date.now();
      (function check() {
        if (idle()) return resolve();
        if (conflict || Date.now() - started > timeoutMs) return reject();
        setTimeout(check, 100);
      })();
    });
  }

  function capitalise(text) {
    return text ? text.charAt(0).toUpperCase() + text.slice(1) : text;
  }

  // ---------------------------------------------------------------- guided question flow
  function applyFlow(flow, savedKey) {
    var answered = new Map(flow.path.map(function (step) { return [step.question, step.answer]; }));
    var wasCurrent = false;
    document.querySelectorAll(".fq").forEach(function (fq) {
      var key = fq.dataset.key;
      if (key === savedKey && (fq.dataset.state === "current" || fq.classList.contains("expanded"))) wasCurrent = true;
      var state = answered.has(key) ? "answered" : key === flow.next_question ? "current" : "off";
      fq.dataset.state = state;
      fq.classList.remove("state-answered", "state-current", "state-off");
      fq.classList.add("state-" + state);
      fq.hidden = state === "off";
      if (state !== "answered" || key === savedKey) setExpanded(fq, false);
      if (state === "answered") {
        var checked = fq.querySelector("input[type=radio]:checked");
        fq.querySelector(".fq-answer").textContent = checked ? checked.parentNode.querySelector("span").textContent : answered.get(key);
      }
    });
    var result = document.getElementById("flow-result");
    if (result) {
      result.hidden = !flow.finished;
      var dl = document.getElementById("flow-labels");
      dl.textContent = "";
      Object.keys(flow.labels).forEach(function (dimension) {
        var dt = document.createElement("dt");
        dt.textContent = dimension;
        var dd = document.createElement("dd");
        dd.textContent = flow.labels[dimension];
        dl.appendChild(dt);
        dl.appendChild(dd);
      });
    }
    if (wasCurrent) {
      var next = document.querySelector(".fq.state-current");
      if (next) focusItem(next);
      else if (flow.finished) focusItem(document.querySelector(".form-pane .item") || result);
    }
  }

  function setExpanded(fq, open) {
    fq.classList.toggle("expanded", open);
    var button = fq.querySelector(".fq-change");
    if (button) button.setAttribute("aria-expanded", open ? "true" : "false");
  }

  // ---------------------------------------------------------------- keyboard
  function items() {
    return Array.from(document.querySelectorAll(ITEM)).filter(function (el) { return !el.hidden; });
  }

  function focusItem(el) {
    if (!el) return;
    current = el;
    el.focus({ preventScroll: true });
    el.scrollIntoView({ block: "nearest" });
  }

  function move(step) {
    var list = items();
    if (!list.length) return;
    var at = list.indexOf(current);
    var next = at < 0 ? (step > 0 ? 0 : list.length - 1) : Math.min(Math.max(at + step, 0), list.length - 1);
    focusItem(list[next]);
  }

  function unanswered(el) {
    if (el.classList.contains("fq")) return el.dataset.state === "current";
    if (!el.classList.contains("item") || el.dataset.required !== "true") return false;
    var answer = answerOf(el);
    return answer.value === null || answer.value.trim() === "";
  }

  function choose(el, selector) {
    var radio = el && el.querySelector("input[type=radio]" + selector);
    if (!radio || el.classList.contains("ro-item")) return false;
    if (!radio.checked) {
      radio.checked = true;
      radio.dispatchEvent(new Event("change", { bubbles: true }));
    }
    return true;
  }

  function toggleHelp() {
    var details = current && current.querySelector("details.help");
    if (details) details.open = !details.open;
    else {
      var shortcuts = document.getElementById("shortcuts");
      if (shortcuts) shortcuts.open = !shortcuts.open;
    }
  }

  document.addEventListener("keydown", function (event) {
    if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) {
      if (form) {
        event.preventDefault();
        form.requestSubmit();
      }
      return;
    }
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    var target = event.target;
    if (target.matches("textarea, select, input:not([type=radio]):not([type=checkbox]), [contenteditable]")) {
      if (event.key === "Escape") {
        var owner = target.closest(ITEM);
        if (owner) {
          event.preventDefault();
          focusItem(owner);
        }
      }
      return; // typing: no shortcuts
    }
    var key = event.key;
    var handled = true;
    if (key === "j") move(1);
    else if (key === "k") move(-1);
    else if (key === "u") focusItem(items().filter(unanswered)[0]);
    else if (key === "?") toggleHelp();
    else if (key === "t") document.getElementById("transcript").focus();
    else if (key === "y" || key === "n" || key === "a") handled = choose(current, '[data-letter="' + key + '"]');
    else if (/^[1-9]$/.test(key)) handled = choose(current, '[data-n="' + key + '"]');
    else handled = false;
    if (handled) event.preventDefault();
  });

  document.addEventListener("focusin", function (event) {
    var el = event.target.closest && event.target.closest(ITEM);
    if (el) current = el;
  });

  var reviseProblems = document.getElementById("revise-problems");
  if (reviseProblems) reviseProblems.focus();
  if (config.submitted || !form) return; // a locked rating: navigation only

  // ---------------------------------------------------------------- autosave wiring
  form.addEventListener("change", function (event) {
    if (event.target.type === "radio") queueSave(event.target.closest(ITEM));
  });

  var typingTimers = new Map();
  form.addEventListener("input", function (event) {
    if (event.target.tagName !== "TEXTAREA") return;
    var el = event.target.closest(ITEM);
    setStatus("Unsaved changes…", "saving");
    clearTimeout(typingTimers.get(el));
    typingTimers.set(el, setTimeout(function () { queueSave(el); }, 800));
  });
  form.addEventListener("focusout", function (event) {
    if (event.target.tagName !== "TEXTAREA") return;
    var el = event.target.closest(ITEM);
    if (typingTimers.has(el)) {
      clearTimeout(typingTimers.get(el));
      typingTimers.delete(el);
      queueSave(el);
    }
  });

  document.querySelectorAll(".fq-change").forEach(function (button) {
    button.addEventListener("click", function () {
      var fq = button.closest(".fq");
      var open = !fq.classList.contains("expanded");
      setExpanded(fq, open);
      if (open) (fq.querySelector("input[type=radio]:checked") || fq.querySelector("input[type=radio]")).focus();
    });
  });

  banner.querySelector(".banner-retry").addEventListener("click", retryNow);
  var leaving = false; // the rater chose to reload after a conflict: the banner listed what is unsaved
  banner.querySelector(".banner-reload").addEventListener("click", function () {
    leaving = true;
    window.location.reload();
  });

  window.addEventListener("beforeunload", function (event) {
    if (!leaving && !idle()) {
      event.preventDefault();
      event.returnValue = "";
    }
  });

  var breakLink = document.getElementById("take-break");
  breakLink.addEventListener("click", function (event) {
    if (idle()) return;
    event.preventDefault();
    setStatus("Saving before you go…", "saving");
    whenIdle(10000).then(function () { window.location.href = breakLink.href; }, function () {
      showBanner("error", "Some answers are not saved yet, so the page stays open. Try again in a moment.", Array.from(pending.values()).map(describe), { retry: true });
    });
  });

  // ---------------------------------------------------------------- submit
  var problems = document.getElementById("submit-problems");
  form.addEventListener("submit", function (event) {
    event.preventDefault();
    var missing = items().filter(unanswered);
    if (missing.length) {
      problems.textContent = "";
      var p = document.createElement("p");
      var strong = document.createElement("strong");
      strong.textContent = "Not submitted yet: " + missing.length + " required question" + (missing.length > 1 ? "s" : "") + " unanswered.";
      p.appendChild(strong);
      var ul = document.createElement("ul");
      missing.forEach(function (el) {
        var li = document.createElement("li");
        var a = document.createElement("a");
        a.href = "#" + el.id;
        var legend = el.querySelector("legend");
        a.textContent = legend ? legend.textContent.replace(/\s+/g, " ").trim() : el.dataset.key;
        a.addEventListener("click", function (e) { e.preventDefault(); focusItem(el); });
        li.appendChild(a);
        ul.appendChild(li);
      });
      problems.appendChild(p);
      problems.appendChild(ul);
      problems.hidden = false;
      focusItem(missing[0]);
      return;
    }
    var button = document.getElementById("submit-rating");
    button.disabled = true;
    setStatus("Saving before submitting…", "saving");
    whenIdle(15000).then(
      function () {
        document.getElementById("expected-revision").value = revision;
        form.submit();
      },
      function () {
        button.disabled = false;
        showBanner("error", "Not submitted: some answers are not saved yet.", Array.from(pending.values()).map(describe), { retry: !conflict, reload: conflict });
      }
    );
  });

  if (problems && !problems.hidden) problems.focus();
})();
