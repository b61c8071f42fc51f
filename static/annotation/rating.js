/* The rating page: autosave every answer, guided question flows, keyboard-only rating.
 *
 * Saves go one at a time to POST /api/v1/my/assignments/<id>/answers/ with the revision the
 * page last saw; the server answers the new revision, 409 when the rating changed elsewhere
 * (another tab or device), 410 when a coordinator withdrew the conversation. The status says
 * "All answers saved" only when the server confirmed every answer: a refused answer stays on
 * the page with its reason until the rater tries again or discards it, a network or server
 * failure is retried with backoff, and every unsaved answer is also kept in local storage
 * (restored, and offered for saving, when the page is opened again). No dependencies.
 *
 * Evidence (studies that ask raters to cite turns): each turn of the transcript has a "Cite"
 * button, and [ / ] then c do the same from the keyboard. A cited turn goes to the question the
 * rater is on (or to the whole form) and shows as a chip beside it; it travels with that
 * question's answer through the same queue ("part|key" entries carry "evidence"), the whole
 * form's as the entry "form|". Turns are sent in the conversation's numbering (data-cite-turn),
 * shown as the rater reads them (data-shown).
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
  var storeKey = "evalsite:rating:" + config.assignment;
  var revision = config.revision;
  var lastSaveAt = Date.now();
  // Every answer is in exactly one place until the server confirms it: queued, in flight,
  // refused (with the server's reason) or restored from this browser after a reload. All of
  // them are mirrored to local storage, so closing the tab loses nothing either.
  var pending = new Map(); // "part|key" -> {part, item_key, value, note}
  var inFlight = null; // {id, entry}
  var refused = new Map(); // id -> {entry, reason}
  var restored = new Map(); // id -> entry (kept in this browser, not yet saved)
  var confirmed = new Map(); // id -> {value, note}: what the server holds
  var conflict = false;
  var withdrawn = false;
  var typing = false;
  var retryDelay = 0;
  var retryTimer = null;
  var retryAt = 0;
  var retryWhy = "";
  var countdown = null;
  var current = null; // the item the keyboard acts on
  var evidenceMode = config.evidenceMode || "off";
  var turnAt = null; // the transcript turn that [ and ] moved to (c cites it)

  // ---------------------------------------------------------------- local copy of unsaved answers
  function unsavedEntries() {
    var all = new Map();
    restored.forEach(function (entry, id) { all.set(id, entry); });
    refused.forEach(function (r, id) { all.set(id, r.entry); });
    if (inFlight) all.set(inFlight.id, inFlight.entry);
    pending.forEach(function (entry, id) { all.set(id, entry); });
    return all;
  }

  function persist() {
    var entries = {};
    unsavedEntries().forEach(function (entry, id) {
      entries[id] = Object.assign({ label: labelOf(entry) }, entry);
    });
    try {
      if (Object.keys(entries).length) {
        window.localStorage.setItem(storeKey, JSON.stringify({ revision: revision, saved: Date.now(), entries: entries }));
      } else {
        window.localStorage.removeItem(storeKey);
      }
    } catch (e) { /* storage full or blocked: the page still holds the answers */ }
  }

  function readStore() {
    try { return JSON.parse(window.localStorage.getItem(storeKey) || "null"); } catch (e) { return null; }
  }

  // ---------------------------------------------------------------- status and banner
  function setStatus(text, kind) {
    if (!statusEl) return;
    statusEl.textContent = text;
    statusEl.className = "save-status" + (kind ? " " + kind : "");
  }

  function plural(n, word) { return n + " " + word + (n === 1 ? "" : "s"); }

  function secondsLeft() { return Math.max(0, Math.ceil((retryAt - Date.now()) / 1000)); }

  // The one place that decides what the status pill and the banner say: from the state, so a
  // later success elsewhere can never paint over an answer that was not saved.
  function render() {
    persist();
    updateCount();
    var unsaved = Array.from(unsavedEntries().values());
    if (withdrawn) {
      setStatus("Not saved: conversation withdrawn", "error");
      showBanner("error",
        "This conversation was withdrawn from you by the study coordinator, so nothing more can be saved here. " +
        "Answers saved earlier stay in the study's records with the withdrawn conversation. " +
        (unsaved.length ? "These answers were not saved; they stay on this page and in this browser until you discard them:" : ""),
        unsaved.map(describe), { discard: unsaved.length > 0, leave: true });
      return;
    }
    if (conflict) {
      setStatus("Not saved", "error");
      return; // the conflict banner stays as it was shown
    }
    if (refused.size) {
      var lines = Array.from(refused.values()).map(function (r) { return describe(r.entry) + " — " + r.reason; });
      setStatus(plural(refused.size, "answer") + " not saved", "error");
      showBanner("error",
        "The server refused " + plural(refused.size, "answer") + ". " + (refused.size === 1 ? "It stays" : "They stay") +
        " on this page and in this browser until saved or discarded. Check the reason, then try again, or discard to go back to the saved " +
        (refused.size === 1 ? "answer:" : "answers:"),
        lines, { retry: true, discard: true });
      return;
    }
    if (restored.size) {
      setStatus(plural(restored.size, "earlier answer") + " not saved", "error");
      showBanner("conflict",
        "This browser kept " + plural(restored.size, "answer") + " from your last visit that never reached the server. " +
        (restored.size === 1 ? "It is" : "They are") + " filled in below. Save them, or discard them to keep the saved answers:",
        Array.from(restored.values()).map(describe), { saveRestored: true, discard: true });
      return;
    }
    if (retryTimer) {
      var offline = navigator.onLine === false;
      setStatus("Not saved yet" + (offline ? ": offline" : "") + " · retrying in " + secondsLeft() + " s", "error");
      showBanner("error",
        retryWhy + " Your answers are kept on this page and in this browser, and are saved when the connection is back " +
          "(next try in " + secondsLeft() + " s). Not saved yet:",
        unsaved.map(describe), { retry: true });
      return;
    }
    hideBanner();
    if (inFlight || pending.size) setStatus("Saving…", "saving");
    else if (typing) setStatus("Unsaved changes…", "saving");
    else setStatus("All answers saved", "saved");
  }

  function showBanner(kind, text, list, buttons) {
    buttons = buttons || {};
    banner.className = "banner " + kind;
    banner.querySelector(".banner-text").textContent = text;
    var ul = banner.querySelector(".banner-list");
    ul.textContent = "";
    (list || []).forEach(function (line) {
      var li = document.createElement("li");
      li.textContent = line;
      ul.appendChild(li);
    });
    banner.querySelector(".banner-retry").hidden = !buttons.retry;
    banner.querySelector(".banner-reload").hidden = !buttons.reload;
    banner.querySelector(".banner-discard").hidden = !buttons.discard;
    banner.querySelector(".banner-save-restored").hidden = !buttons.saveRestored;
    banner.querySelector(".banner-leave").hidden = !buttons.leave;
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

  function labelOf(entry) {
    if (entry.part === "form") return "Turns for the whole form";
    var el = itemFor(entry.part, entry.item_key);
    var num = el ? (el.querySelector(".qnum") || {}).textContent || entry.item_key : entry.item_key;
    return "Question " + num;
  }

  function describe(entry) {
    var turns = (entry.evidence || []).map(shownTurn).join(", ");
    if (entry.part === "form") return labelOf(entry) + ": " + (turns || "(none)");
    return labelOf(entry) + ": " + (entry.value === "" ? "(empty)" : entry.value) +
      (entry.note ? " (note: " + entry.note + ")" : "") + (turns ? " (cited turns " + turns + ")" : "");
  }

  // ---------------------------------------------------------------- answers on the page
  function answerOf(el) {
    var text = el.querySelector("textarea[data-text-answer]");
    if (text) return { value: text.value, note: null };
    var checked = el.querySelector("input[type=radio]:checked");
    var noteEl = el.querySelector("textarea[data-note]");
    return { value: checked ? checked.value : null, note: noteEl ? noteEl.value : null };
  }

  function setAnswer(el, value, note) {
    var text = el.querySelector("textarea[data-text-answer]");
    if (text) {
      text.value = value || "";
    } else {
      el.querySelectorAll("input[type=radio]").forEach(function (r) { r.checked = r.value === value; });
      var noteEl = el.querySelector("textarea[data-note]");
      if (noteEl && note !== undefined && note !== null) noteEl.value = note;
    }
    el.classList.toggle("answered", !!(value && String(value).trim()));
  }

  function same(a, b) {
    return (a.value || "") === (b.value || "") && (a.note === null || a.note === undefined || (a.note || "") === (b.note || "")) &&
      (a.evidence === undefined || (a.evidence || []).join(" ") === (b.evidence || []).join(" "));
  }

  // ---------------------------------------------------------------- evidence: cited turns
  function evidenceBox(el) { return el ? el.querySelector(".evidence") : null; }

  function evidenceOf(el) {
    var box = evidenceBox(el);
    if (!box) return null;
    var raw = (box.dataset.evidence || "").trim();
    return raw ? raw.split(/\s+/).map(Number) : [];
  }

  function bubbleOf(n) { return document.querySelector('[data-cite-turn="' + n + '"]'); }

  function shownTurn(n) {
    var bubble = bubbleOf(n);
    return bubble ? bubble.dataset.shown : String(n);
  }

  function setEvidence(el, turns) {
    var box = evidenceBox(el);
    if (!box) return;
    turns = Array.from(new Set(turns)).sort(function (a, b) { return a - b; });
    box.dataset.evidence = turns.join(" ");
    var ul = box.querySelector(".evidence-chips");
    ul.textContent = "";
    turns.forEach(function (n) {
      var li = document.createElement("li");
      li.className = "chip";
      var jump = document.createElement("a");
      jump.className = "chip-jump";
      jump.href = "#turn-" + shownTurn(n);
      jump.dataset.turn = n;
      jump.textContent = "turn " + shownTurn(n);
      var remove = document.createElement("button");
      remove.type = "button";
      remove.className = "chip-remove link";
      remove.dataset.turn = n;
      remove.setAttribute("aria-label", "Remove turn " + shownTurn(n));
      remove.textContent = "×";
      li.appendChild(jump);
      li.appendChild(remove);
      ul.appendChild(li);
    });
    box.querySelector(".evidence-none").hidden = turns.length > 0;
    refreshCites();
  }

  // Where a cited turn goes: the whole form, or the question the rater is on.
  function citeTarget() {
    if (evidenceMode === "whole_form") return document.getElementById("form-evidence");
    if (evidenceMode !== "per_item") return null;
    return current && !current.hidden && evidenceBox(current) ? current : null;
  }

  function refreshCites() {
    var target = citeTarget();
    var turns = target ? evidenceOf(target) : [];
    document.querySelectorAll(".cite-turn").forEach(function (button) {
      var on = turns.indexOf(Number(button.dataset.cite)) >= 0;
      button.setAttribute("aria-pressed", on ? "true" : "false");
      button.closest(".bubble").classList.toggle("cited", on);
    });
    document.querySelectorAll(".citing").forEach(function (el) { if (el !== target) el.classList.remove("citing"); });
    if (target && evidenceMode === "per_item") target.classList.add("citing");
    var line = document.getElementById("cite-target");
    if (line && evidenceMode === "per_item" && target) {
      var num = (target.querySelector(".qnum") || {}).textContent || target.dataset.key;
      line.textContent = "Citing turns for question " + num + (turns.length ? ": turn " + turns.map(shownTurn).join(", ") : ": none yet") + ".";
    }
  }

  function announce(text) {
    var line = document.getElementById("cite-target");
    if (line) line.textContent = text;
  }

  function toggleCite(n) {
    var target = citeTarget();
    if (!target) {
      announce("Choose a question first (select its answer or press j), then cite the turns that support it.");
      return false;
    }
    var turns = evidenceOf(target);
    var at = turns.indexOf(n);
    if (at >= 0) turns.splice(at, 1); else turns.push(n);
    setEvidence(target, turns);
    queueSave(target);
    var bubble = bubbleOf(n);
    if (bubble) markTurn(bubble);
    if (evidenceMode === "per_item") {
      var num = (target.querySelector(".qnum") || {}).textContent || target.dataset.key;
      announce("Turn " + shownTurn(n) + (at >= 0 ? " removed from" : " cited for") + " question " + num +
        (target.querySelector("input[type=radio]:checked, textarea[data-text-answer]") ? "." : ": saved with your answer once you give it."));
    } else {
      announce("Turn " + shownTurn(n) + (at >= 0 ? " removed from" : " cited for") + " the whole form.");
    }
    return true;
  }

  function markTurn(bubble) {
    if (turnAt) turnAt.classList.remove("turn-at");
    turnAt = bubble;
    bubble.classList.add("turn-at");
  }

  function moveTurn(step) {
    var list = Array.from(document.querySelectorAll("[data-cite-turn]"));
    if (!list.length) return;
    var at = list.indexOf(turnAt);
    var next = at < 0 ? (step > 0 ? 0 : list.length - 1) : Math.min(Math.max(at + step, 0), list.length - 1);
    showView("transcript");
    markTurn(list[next]);
    list[next].focus({ preventScroll: true });
    list[next].scrollIntoView({ block: "nearest" });
  }

  function jumpToTurn(n) {
    var bubble = bubbleOf(n);
    if (!bubble) return;
    showView("transcript");
    markTurn(bubble);
    bubble.focus({ preventScroll: true });
    bubble.scrollIntoView({ block: "center" });
  }

  // Put an entry (saved, kept or restored) back on the page: answer, note and cited turns.
  function showEntry(el, entry) {
    if (el.dataset.part !== "form") setAnswer(el, entry.value, entry.note);
    if (entry.evidence !== undefined) setEvidence(el, entry.evidence || []);
  }

  function queueSave(el) {
    var id = el.dataset.part + "|" + el.dataset.key;
    var evidence = evidenceOf(el);
    var entry;
    if (el.dataset.part === "form") {
      entry = { part: "form", item_key: "", evidence: evidence || [] };
      refused.delete(id);
      restored.delete(id);
      pending.delete(id);
      pending.set(id, entry);
      return flush();
    }
    var answer = answerOf(el);
    if (answer.value === null) return; // a note (or a cited turn) waits for its answer
    entry = { part: el.dataset.part, item_key: el.dataset.key, value: answer.value };
    if (answer.note !== null) entry.note = answer.note;
    // Cited turns go with the answer (an empty answer clears them); none are sent to a study
    // that stopped asking unless some were saved.
    var saved = (confirmed.get(id) || {}).evidence || [];
    if (evidence !== null && answer.value.trim() !== "" && (evidence.length || saved.length)) entry.evidence = evidence;
    refused.delete(id); // a new answer replaces a refused one: it is sent again
    restored.delete(id);
    pending.delete(id); // keep queue order = order of changes
    pending.set(id, entry);
    el.classList.toggle("answered", answer.value.trim() !== "");
    if (answer.value.trim() !== "") el.classList.remove("missing");
    flush();
  }

  // ---------------------------------------------------------------- saving
  function flush() {
    if (inFlight || conflict || withdrawn || retryTimer) return render();
    if (!pending.size) return render();
    var id = pending.keys().next().value;
    var entry = pending.get(id);
    pending.delete(id);
    inFlight = { id: id, entry: entry };
    var now = Date.now();
    var body = Object.assign({}, entry, {
      expected_revision: revision,
      elapsed_seconds: Math.round((now - lastSaveAt) / 100) / 10,
    });
    render();
    fetch(config.answersUrl, {
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
          rememberConfirmed(result.data.answers);
          if (result.data.flow) applyFlow(result.data.flow, entry.item_key);
          flush();
        } else if (result.status === 409) {
          keep(id, entry);
          conflict = true;
          render();
          showBanner(
            "conflict",
            (result.data.detail ? capitalise(result.data.detail) + ". " : "") +
              "To protect both versions nothing more is saved from this page. Reload to see the saved answers, then give these answers again:",
            Array.from(unsavedEntries().values()).map(describe),
            { reload: true }
          );
        } else if (result.status === 410 || result.status === 404) {
          keep(id, entry);
          withdrawn = true;
          if (form) form.querySelectorAll("input, textarea, button").forEach(function (c) { c.disabled = true; });
          render();
        } else if (result.status === 401 || result.status === 403) {
          retryLater(id, entry, "Your session has ended or the page lost its permission (" + result.status + "). Log in again in another tab.");
        } else if (result.status >= 400 && result.status < 500) {
          // Refused (invalid, locked, calibration pending...): never shown as saved. It stays,
          // with the reason, until the rater tries again or discards it; the rest goes on.
          refused.set(id, { entry: entry, reason: capitalise(result.data.detail || "refused by the server (" + result.status + ")") });
          flush();
        } else {
          retryLater(id, entry, "The server had a problem (" + result.status + ").");
        }
      })
      .catch(function () {
        inFlight = null;
        retryLater(id, entry, navigator.onLine === false ? "You are offline." : "No connection to the server.");
      });
  }

  function rememberConfirmed(answers) {
    if (!answers) return;
    ["main", "section"].forEach(function (part) {
      var given = answers[part] || {};
      Array.from(confirmed.keys()).forEach(function (id) {
        if (id.indexOf(part + "|") === 0 && !(id.slice(part.length + 1) in given)) confirmed.set(id, { value: "", note: "" });
      });
      Object.keys(given).forEach(function (key) {
        confirmed.set(part + "|" + key, {
          value: String(given[key].value || ""), note: String(given[key].note || ""), evidence: given[key].evidence || [],
        });
      });
    });
    if (document.getElementById("form-evidence")) confirmed.set("form|", { value: "", note: "", evidence: answers.form_evidence || [] });
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
    retryWhy = why;
    retryAt = Date.now() + retryDelay;
    if (retryTimer) clearTimeout(retryTimer);
    retryTimer = setTimeout(function () { retryTimer = null; flush(); }, retryDelay);
    if (!countdown) countdown = setInterval(function () {
      if (!retryTimer) { clearInterval(countdown); countdown = null; return; }
      render();
    }, 1000);
    render();
  }

  function retryNow() {
    if (retryTimer) clearTimeout(retryTimer);
    retryTimer = null;
    refused.forEach(function (r, id) { if (!pending.has(id)) pending.set(id, r.entry); });
    refused.clear();
    flush();
  }

  function discardUnsaved() {
    // Go back to what the server holds for every refused or restored answer.
    var ids = Array.from(refused.keys()).concat(Array.from(restored.keys()));
    if (withdrawn) ids = Array.from(unsavedEntries().keys());
    ids.forEach(function (id) {
      var parts = id.split("|");
      var el = itemFor(parts[0], parts.slice(1).join("|"));
      var saved = confirmed.get(id) || { value: "", note: "", evidence: [] };
      if (el && !withdrawn) showEntry(el, Object.assign({ evidence: [] }, saved));
      refused.delete(id);
      restored.delete(id);
      pending.delete(id);
    });
    if (withdrawn) inFlight = null;
    render();
  }

  function saveRestored() {
    restored.forEach(function (entry, id) { pending.set(id, entry); });
    restored.clear();
    flush();
  }

  function idle() {
    return !inFlight && !pending.size && !refused.size && !restored.size;
  }

  function whenIdle(timeoutMs) {
    flush();
    return new Promise(function (resolve, reject) {
      var started = Date.now();
      (function check() {
        if (idle()) return resolve();
        if (conflict || withdrawn || refused.size || restored.size || Date.now() - started > timeoutMs) return reject();
        setTimeout(check, 100);
      })();
    });
  }

  function capitalise(text) {
    return text ? text.charAt(0).toUpperCase() + text.slice(1) : text;
  }

  // ---------------------------------------------------------------- answered counter
  function updateCount() {
    var sectionN = document.getElementById("section-n");
    if (sectionN) { // guided flow: the flow's count comes with each save (applyFlow); the section's is counted here
      sectionN.textContent = items().filter(function (el) {
        var a = el.classList.contains("item") && el.dataset.required === "true" ? answerOf(el) : null;
        return a && a.value !== null && a.value.trim() !== "";
      }).length;
    }
    var n = document.getElementById("answered-n");
    if (!n) return;
    var shown = items().filter(function (el) {
      return el.classList.contains("fq") || (el.classList.contains("item") && el.dataset.required === "true");
    });
    var answered = shown.filter(function (el) {
      if (el.classList.contains("fq")) return el.dataset.state === "answered";
      var a = answerOf(el);
      return a.value !== null && a.value.trim() !== "";
    });
    n.textContent = answered.length;
    document.getElementById("answered-total").textContent = shown.length;
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
    var progress = document.getElementById("flow-progress");
    if (progress && flow.progress_text) progress.textContent = flow.progress_text;
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
    if (typeof showStep === "function") showStep(el);
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

  // One key per answer (issue 29): after an answer by key, the next unanswered question takes the focus, said to
  // screen readers. A rater setting (kept in this browser), on by default; not while citing turns per item
  // (the turns of the answer just given are cited next) and not in a question flow (it moves by itself).
  var autoAdvance = document.getElementById("auto-advance");
  if (autoAdvance) {
    try { autoAdvance.checked = window.localStorage.getItem("evalsite-auto-advance") !== "off"; } catch (e) { /* private mode */ }
    autoAdvance.addEventListener("change", function () {
      try { window.localStorage.setItem("evalsite-auto-advance", autoAdvance.checked ? "on" : "off"); } catch (e) { /* private mode */ }
    });
  }

  // ---------------------------------------------------------------- one question per screen (phones)
  var onePerScreen = document.getElementById("one-per-screen");
  var stepNav = document.getElementById("step-nav");
  function stepItems() { return Array.prototype.filter.call(document.querySelectorAll("#rating-form .item"), function (el) { return !el.classList.contains("ro-item"); }); }
  function showStep(el) {
    var list = stepItems();
    if (!el || list.indexOf(el) < 0) return;
    list.forEach(function (x) { x.classList.toggle("step-current", x === el); });
    var pos = document.getElementById("step-pos");
    if (pos) pos.textContent = "Question " + (list.indexOf(el) + 1) + " of " + list.length;
  }
  function setOnePerScreen(on) {
    var lay = document.getElementById("rate-layout");
    if (!lay || !stepNav) return;
    lay.classList.toggle("one-per-screen", on);
    stepNav.hidden = !on;
    if (on) showStep(current && stepItems().indexOf(current) >= 0 ? current : (stepItems().filter(unanswered)[0] || stepItems()[0]));
  }
  if (onePerScreen) {
    try { onePerScreen.checked = window.localStorage.getItem("evalsite-one-per-screen") === "on"; } catch (e) { /* private mode */ }
    onePerScreen.addEventListener("change", function () {
      try { window.localStorage.setItem("evalsite-one-per-screen", onePerScreen.checked ? "on" : "off"); } catch (e) { /* private mode */ }
      setOnePerScreen(onePerScreen.checked);
    });
    setOnePerScreen(onePerScreen.checked);
    document.getElementById("step-prev").addEventListener("click", function () {
      var list = stepItems(), at = list.indexOf(document.querySelector(".item.step-current"));
      focusItem(list[Math.max(at - 1, 0)]);
    });
    document.getElementById("step-next").addEventListener("click", function () {
      var list = stepItems(), at = list.indexOf(document.querySelector(".item.step-current"));
      focusItem(list[Math.min(at + 1, list.length - 1)]);
    });
  }

  function advance() {
    if (!current || !current.classList.contains("item") || evidenceMode === "per_item") return;
    if (autoAdvance && !autoAdvance.checked) return;
    var list = items(), at = list.indexOf(current);
    var open = list.filter(unanswered);
    var next = open.filter(function (el) { return list.indexOf(el) > at; })[0] || open[0];
    var say = document.getElementById("rate-announce");
    if (next) {
      focusItem(next);
      var title = next.querySelector("legend, h2, h3");
      if (say) say.textContent = "Next: " + (title ? title.textContent.replace(/\s+/g, " ").trim().slice(0, 120) : "question");
    } else {
      var submit = form && form.querySelector("[type=submit]");
      if (submit) { submit.focus({ preventScroll: true }); submit.scrollIntoView({ block: "nearest" }); }
      if (say) say.textContent = "Every question is answered: submit when you are ready.";
    }
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
    else if (key === "t") { showView("transcript"); document.getElementById("transcript").focus(); }
    else if (evidenceMode !== "off" && (key === "[" || key === "]")) moveTurn(key === "]" ? 1 : -1);
    else if (evidenceMode !== "off" && key === "c") {
      var bubble = target.closest && target.closest("[data-cite-turn]");
      if (bubble) markTurn(bubble);
      handled = turnAt ? toggleCite(Number(turnAt.dataset.citeTurn)) : false;
      if (!turnAt) announce("Go to a turn first: ] moves to the next turn, [ to the previous one.");
    }
    else if (key === "y" || key === "n" || key === "a") { handled = choose(current, '[data-letter="' + key + '"]'); if (handled) advance(); }
    else if (/^[1-9]$/.test(key)) { handled = choose(current, '[data-n="' + key + '"]'); if (handled) advance(); }
    else handled = false;
    if (handled) event.preventDefault();
  });

  document.addEventListener("focusin", function (event) {
    var el = event.target.closest && event.target.closest(ITEM);
    if (el) {
      current = el;
      if (evidenceMode === "per_item") refreshCites();
    }
  });

  // ---------------------------------------------------------------- phones: transcript or questions
  var layout = document.getElementById("rate-layout");
  var scrolls = {};
  var narrow = window.matchMedia("(max-width: 1000px)");
  // The sticky bar's height, for scroll-margin-top: anchors land below it (issue 29).
  var sideBar = document.querySelector(".side-bar");
  function measureBar() {
    var sticks = sideBar && window.getComputedStyle(sideBar).position === "sticky";
    document.documentElement.style.setProperty("--sticky-bar", (sticks ? Math.ceil(sideBar.getBoundingClientRect().height) : 0) + "px");
  }
  measureBar();
  if (sideBar && window.ResizeObserver) new ResizeObserver(measureBar).observe(sideBar);
  window.addEventListener("resize", measureBar);

  function showView(view) {
    if (!layout || layout.dataset.view === view) return;
    if (layout.dataset.view) scrolls[layout.dataset.view] = window.scrollY;
    layout.dataset.view = view;
    document.querySelectorAll(".pane-switch [data-view]").forEach(function (b) {
      b.setAttribute("aria-pressed", b.dataset.view === view ? "true" : "false");
    });
    if (narrow.matches) window.scrollTo(0, scrolls[view] || 0);
  }

  document.querySelectorAll("button[data-view]").forEach(function (button) {
    button.addEventListener("click", function () {
      showView(button.dataset.view);
      if (button.dataset.view === "questions" && narrow.matches) {
        var at = current || items().filter(unanswered)[0];
        if (at) focusItem(at);
      }
    });
  });
  // Resuming starts on the questions; a fresh conversation starts with the transcript.
  showView(config.resumeAt || config.submitted ? "questions" : "transcript");

  var reviseProblems = document.getElementById("revise-problems");
  if (reviseProblems) reviseProblems.focus();
  if (config.submitted || !form) return; // a locked rating: navigation only

  // ---------------------------------------------------------------- opening: saved, kept, resumed
  items().forEach(function (el) {
    if (el.classList.contains("ro-item")) return;
    var a = answerOf(el);
    confirmed.set(el.dataset.part + "|" + el.dataset.key, { value: a.value || "", note: a.note || "", evidence: evidenceOf(el) || [] });
    if (evidenceBox(el)) setEvidence(el, evidenceOf(el));
  });
  var formEvidence = document.getElementById("form-evidence");
  if (formEvidence) {
    confirmed.set("form|", { value: "", note: "", evidence: evidenceOf(formEvidence) });
    setEvidence(formEvidence, evidenceOf(formEvidence));
  }
  var kept = readStore();
  if (kept && kept.entries) {
    Object.keys(kept.entries).forEach(function (id) {
      var entry = kept.entries[id];
      var el = itemFor(entry.part, entry.item_key);
      var saved = confirmed.get(id) || { value: "", note: "" };
      if (!el || same(entry, saved)) return; // the server has it: nothing to restore
      delete entry.label;
      restored.set(id, entry);
      showEntry(el, entry);
    });
  }
  render();
  var resumeAt = config.resumeAt && document.getElementById(config.resumeAt);
  if (resumeAt && !restored.size) {
    current = resumeAt;
    resumeAt.focus({ preventScroll: true });
    resumeAt.scrollIntoView({ block: "center" });
  }

  // ---------------------------------------------------------------- autosave wiring
  // A tap (or click) on an answer moves on to the next unanswered question, as a key does.
  var pointerAt = 0;
  form.addEventListener("pointerdown", function () { pointerAt = Date.now(); }, true);
  form.addEventListener("change", function (event) {
    if (event.target.type !== "radio") return;
    var el = event.target.closest(ITEM);
    queueSave(el);
    if (Date.now() - pointerAt < 1500 && el && el.classList.contains("item")) { current = el; advance(); }
  });

  var typingTimers = new Map();
  form.addEventListener("input", function (event) {
    if (event.target.tagName !== "TEXTAREA") return;
    var el = event.target.closest(ITEM);
    typing = true;
    render();
    clearTimeout(typingTimers.get(el));
    typingTimers.set(el, setTimeout(function () { typingTimers.delete(el); typing = typingTimers.size > 0; queueSave(el); }, 800));
  });
  form.addEventListener("focusout", function (event) {
    if (event.target.tagName !== "TEXTAREA") return;
    var el = event.target.closest(ITEM);
    if (typingTimers.has(el)) {
      clearTimeout(typingTimers.get(el));
      typingTimers.delete(el);
      typing = typingTimers.size > 0;
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

  document.querySelectorAll(".cite-turn").forEach(function (button) {
    button.addEventListener("click", function () { toggleCite(Number(button.dataset.cite)); });
  });
  form.addEventListener("click", function (event) {
    var chip = event.target.closest && event.target.closest(".chip-jump, .chip-remove");
    if (!chip) return;
    event.preventDefault();
    var n = Number(chip.dataset.turn);
    var owner = chip.closest(ITEM) || chip.closest("#form-evidence");
    if (chip.classList.contains("chip-jump")) return jumpToTurn(n);
    current = owner.id === "form-evidence" ? current : owner;
    setEvidence(owner, evidenceOf(owner).filter(function (t) { return t !== n; }));
    queueSave(owner);
    announce("Turn " + shownTurn(n) + " removed.");
    var next = owner.querySelector(".chip-remove") || owner;
    next.focus();
  });
  refreshCites();

  banner.querySelector(".banner-retry").addEventListener("click", retryNow);
  banner.querySelector(".banner-discard").addEventListener("click", discardUnsaved);
  banner.querySelector(".banner-save-restored").addEventListener("click", saveRestored);
  window.addEventListener("online", function () { if (retryTimer) retryNow(); });
  window.addEventListener("offline", render);
  var leaving = false; // the rater chose to reload after a conflict: the banner listed what is unsaved
  banner.querySelector(".banner-reload").addEventListener("click", function () {
    leaving = true;
    window.location.reload();
  });

  window.addEventListener("beforeunload", function (event) {
    if (!leaving && !withdrawn && !idle()) {
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
      render();
      if (!conflict && !withdrawn && !refused.size && !restored.size) {
        showBanner("error", "Some answers are not saved yet, so the page stays open. Try again in a moment.",
          Array.from(unsavedEntries().values()).map(describe), { retry: true });
      }
    });
  });

  // ---------------------------------------------------------------- submit
  var problems = document.getElementById("submit-problems");
  form.addEventListener("submit", function (event) {
    event.preventDefault();
    document.querySelectorAll(".item.missing, .fq.missing").forEach(function (el) { el.classList.remove("missing"); });
    var missing = items().filter(unanswered);
    if (missing.length) {
      problems.textContent = "";
      var p = document.createElement("p");
      var strong = document.createElement("strong");
      strong.textContent = "Not submitted yet: " + missing.length + " required question" + (missing.length > 1 ? "s" : "") + " unanswered.";
      p.appendChild(strong);
      p.appendChild(document.createTextNode(" They are marked below; each link goes to one."));
      var ul = document.createElement("ul");
      ul.className = "missing-links";
      missing.forEach(function (el) {
        el.classList.add("missing");
        var li = document.createElement("li");
        var a = document.createElement("a");
        a.href = "#" + el.id;
        var num = (el.querySelector(".qnum") || {}).textContent || el.dataset.key;
        a.textContent = "Question " + num;
        a.addEventListener("click", function (e) { e.preventDefault(); showView("questions"); focusItem(el); });
        li.appendChild(a);
        var legend = el.querySelector("legend");
        var text = legend ? legend.textContent.replace(/\s+/g, " ").trim().replace(/^\S+\s/, "") : "";
        if (text) li.appendChild(document.createTextNode(": " + (text.length > 90 ? text.slice(0, 89) + "…" : text)));
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
        render();
        if (!conflict && !withdrawn) {
          showBanner("error", "Not submitted: some answers are not saved yet.",
            Array.from(unsavedEntries().values()).map(describe), { retry: true, discard: refused.size + restored.size > 0 });
        }
      }
    );
  });

  // The form opens with its first unanswered question focused (issue 29: no Tabs to reach it); on phones the
  // page opens on the transcript, so nothing moves there.
  if (form && !location.hash && document.activeElement === document.body && !window.matchMedia("(max-width: 760px)").matches) {
    var firstOpen = items().filter(unanswered)[0];
    if (firstOpen) focusItem(firstOpen);
  }
  if (problems && !problems.hidden) problems.focus();
})();
