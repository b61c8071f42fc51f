/* Layout checks run in the page by tests/browser/test_layout.py; returns a list of problems in words.

   1. The document must not scroll sideways.
   2. A visible form control, and each of its labels, must lie inside its fieldset or card and
      inside the window (a control in its own scroll box, e.g. a wide table, may be scrolled
      out of view: the box is what must fit), and must not be cut off by an ancestor that
      hides overflow.
   3. A box that scrolls takes the keyboard focus or holds something that does.
   4. No two interactive elements may overlap (an element and its own descendant, or a label
      and its control, do not count).
   Sizes are CSS pixels; one pixel of rounding is tolerated everywhere. */
() => {
  const TOL = 1;
  const problems = [];
  const root = document.documentElement;
  const vw = root.clientWidth;

  const describe = (el) => {
    let s = el.tagName.toLowerCase();
    if (el.id) s += "#" + el.id;
    else if (el.classList.length) s += "." + Array.from(el.classList).slice(0, 2).join(".");
    if (el.getAttribute("name")) s += `[name=${el.getAttribute("name")}]`;
    const text = (el.innerText || el.value || el.getAttribute("aria-label") || "").trim().replace(/\s+/g, " ");
    return text ? `${s} "${text.slice(0, 40)}"` : s;
  };
  const shown = (el) => {
    if (!el.checkVisibility({ checkOpacity: true, checkVisibilityCSS: true })) return false;
    const r = el.getBoundingClientRect();
    return r.width > 1 && r.height > 1; // 1 x 1: the visually-hidden pattern
  };
  const intersect = (a, b) => ({
    left: Math.max(a.left, b.left), top: Math.max(a.top, b.top),
    right: Math.min(a.right, b.right), bottom: Math.min(a.bottom, b.bottom),
  });
  const empty = (r) => r.right - r.left <= TOL || r.bottom - r.top <= TOL;
  const inside = (r, box) =>
    r.left >= box.left - TOL && r.right <= box.right + TOL && r.top >= box.top - TOL && r.bottom <= box.bottom + TOL;
  // Overflow of each element, looked up once per run: [clips, scrolls sideways, scrolls down].
  const overflowCache = new Map();
  const overflowOf = (el) => {
    let found = overflowCache.get(el);
    if (!found) {
      const style = getComputedStyle(el);
      const x = ["auto", "scroll"].includes(style.overflowX);
      const y = ["auto", "scroll"].includes(style.overflowY);
      found = [style.overflowX !== "visible" || style.overflowY !== "visible", x, y];
      overflowCache.set(el, found);
    }
    return found;
  };
  const clips = (el) => overflowOf(el)[0];
  const scrolls = (el) => overflowOf(el)[1] || overflowOf(el)[2];
  // The part of a rectangle its clipping ancestors let through, and whether a non-scrolling one cut it.
  const visiblePart = (el, rect) => {
    let r = rect;
    let cutBy = null;
    for (let a = el.parentElement; a && a !== root && a !== document.body; a = a.parentElement) {
      if (!clips(a)) continue;
      const box = a.getBoundingClientRect();
      const next = intersect(r, box);
      if (!scrolls(a) && (next.left > r.left + TOL || next.right < r.right - TOL)) cutBy = cutBy || a;
      r = next;
    }
    return { rect: r, cutBy };
  };
  const inScrollBox = (el) => {
    for (let a = el.parentElement; a && a !== root && a !== document.body; a = a.parentElement) {
      if (scrolls(a)) return a;
    }
    return null;
  };

  // 1. sideways scrolling, naming the outermost elements that stick out
  if (root.scrollWidth > vw + TOL) {
    const sticking = [];
    for (const el of document.body.querySelectorAll("*")) {
      if (sticking.length >= 4) break;
      const r = el.getBoundingClientRect();
      if (r.right <= vw + TOL || !shown(el)) continue;
      if (inScrollBox(el)) continue;
      if (sticking.some((s) => s.contains(el))) continue;
      sticking.push(el);
    }
    problems.push(
      `the page scrolls sideways: ${root.scrollWidth}px wide in a ${vw}px window` +
        (sticking.length ? ` (sticking out: ${sticking.map(describe).join("; ")})` : "")
    );
  }

  // 2. form controls and their labels inside their fieldset or card, and inside the window
  const controls = document.querySelectorAll("input:not([type=hidden]), select, textarea, button");
  for (const control of controls) {
    if (!shown(control)) continue;
    const container = control.closest("fieldset, .card");
    const boxes = [control, ...Array.from(control.labels || []).filter((l) => l !== control && shown(l))];
    for (const box of boxes) {
      const { rect, cutBy } = visiblePart(box, box.getBoundingClientRect());
      const what = box === control ? describe(control) : `the label of ${describe(control)}`;
      if (cutBy) problems.push(`${what} is cut off by ${describe(cutBy)}`);
      if (empty(rect)) continue; // scrolled out of its own scroll box
      if (container && container.contains(box) && shown(container) && !inside(rect, container.getBoundingClientRect())) {
        const c = container.getBoundingClientRect();
        problems.push(
          `${what} lies outside its ${container.tagName === "FIELDSET" ? "fieldset" : "card"} ${describe(container)}` +
            ` (${Math.round(rect.left)}..${Math.round(rect.right)} vs ${Math.round(c.left)}..${Math.round(c.right)})`
        );
      }
      if (rect.left < -TOL || rect.right > vw + TOL) {
        problems.push(`${what} lies outside the window (${Math.round(rect.left)}..${Math.round(rect.right)} of ${vw}px)`);
      }
    }
  }

  // 3. a box that scrolls must take the keyboard focus, or hold something that does (as axe's
  //    scrollable-region-focusable rule asks), else keyboard users cannot scroll it
  const focusable = "a[href], button, input:not([type=hidden]), select, textarea, summary, [tabindex]:not([tabindex='-1'])";
  for (const el of document.body.querySelectorAll("*")) {
    if (!scrolls(el)) continue;
    const sideways = overflowOf(el)[1] && el.scrollWidth > el.clientWidth + TOL;
    const down = overflowOf(el)[2] && el.scrollHeight > el.clientHeight + TOL;
    if (!(sideways || down) || !shown(el)) continue;
    if (el.tabIndex >= 0 || el.querySelector(focusable)) continue;
    problems.push(`${describe(el)} scrolls ${sideways ? "sideways" : "down"} but cannot take the keyboard focus`);
  }

  // 4. overlapping interactive elements
  const interactive = Array.from(document.querySelectorAll(focusable + ", label")).filter(shown);
  const boxes = [];
  for (const el of interactive) {
    for (const r of el.getClientRects()) {
      if (r.width <= TOL || r.height <= TOL) continue;
      const part = visiblePart(el, r).rect;
      if (!empty(part)) boxes.push({ el, r: part });
    }
  }
  boxes.sort((a, b) => a.r.top - b.r.top);
  const related = (a, b) =>
    a.contains(b) || b.contains(a) || (a.tagName === "LABEL" && a.control === b) || (b.tagName === "LABEL" && b.control === a);
  const seen = new Set();
  for (let i = 0; i < boxes.length; i++) {
    const a = boxes[i];
    for (let j = i + 1; j < boxes.length && boxes[j].r.top < a.r.bottom - TOL; j++) {
      const b = boxes[j];
      if (a.el === b.el || related(a.el, b.el)) continue;
      if (empty(intersect(a.r, b.r))) continue;
      const key = [a.el, b.el].map(describe).sort().join(" / ");
      if (seen.has(key)) continue;
      seen.add(key);
      problems.push(`${describe(a.el)} overlaps ${describe(b.el)}`);
    }
  }
  return problems;
}
