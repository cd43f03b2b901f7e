// The Switchboard web chat page. Plain JavaScript, no build step, no third-party code; the
// token, the connection state and the event stream are live.js's (shared with the console), the
// Markdown rendering markdown.js's.
//
// Messages are sent with POST /chat/api/messages, each with its own idempotency key, one at
// a time in the order typed: a send that fails (network, 5xx, 408, 429, no answer in time) is retried
// with the same key until the gateway has it, and only then does the next go, also after a
// reload (unconfirmed sends wait in sessionStorage); a reconnect sends the one waiting, or on
// its way, again at once. What the chat shows
// comes from GET /chat/api/events (Server-Sent Events, read with fetch so the token can
// travel in a header): a "history" event with the conversation from the gateway's
// durable store, then live events. Every (re)connect starts with a fresh history, so a
// dropped connection loses nothing; messages are merged by id, so nothing shows twice. A reconnect
// names the newest message the page holds ("after"): the history reaches back to it, however long the
// page was away, or says "gap" when the gateway no longer has it (the page then shows it as a reload would);
// what the page holds comes as ids alone ("brief").
// A file the agent sent is a message with a download link; the download is fetched with the
// token too (a plain link cannot carry the header) and saved under the file's name.
"use strict";

(() => {
  const $ = (id) => document.getElementById(id);
  const list = $("messages");
  const input = $("input");
  const working = $("working");
  const shown = new Map(); // message id -> element
  // What this page sent and shows at the bottom before the gateway has it, in the order typed. Others'
  // messages may reach the gateway first: they show above it, and when the gateway publishes ours, it
  // moves to where the gateway took it.
  const unplaced = new Set();
  const { scoped, setState } = SwitchboardLive;
  const auth = SwitchboardLive.access("switchboard.token");
  const TYPING_LAPSE_MS = 8000; // the gateway repeats "typing" every few seconds while a turn runs
  // The API's address beside this script's own (…/chat/static/chat.js): the page may be at /chat, /chat/ or under a
  // reverse proxy's prefix (/sb/chat), where an absolute /chat/api goes to the proxy's root instead.
  const API = new URL("../api/", document.currentScript.src);
  const api = (path) => new URL(path, API).href;

  // -- identity: the token and the chat ----------------------------------------------

  const chat = (() => {
    const named = new URLSearchParams(location.search).get("chat");
    if (named && /^[A-Za-z0-9_-]{1,64}$/.test(named)) return named;
    const key = scoped(localStorage, "switchboard.chat", true);
    let id = localStorage.getItem(key);
    if (!id) {
      id = randomId();
      try {
        localStorage.setItem(key, id);
      } catch {
        // No room (another app of this origin filled it): thrown here, the page never started. This tab's chat
        // all the same, another after a reload.
      }
    }
    return id;
  })();
  // What one address kept before the upgrade, joined to what another kept (`scoped`): its sends first, typed earlier.
  const joined = (kept, own) => {
    const have = new Set(JSON.parse(kept).map((item) => item.key));
    return JSON.stringify([...JSON.parse(own).filter((item) => !have.has(item.key)), ...JSON.parse(kept)]);
  };
  const PENDING_KEY = scoped(sessionStorage, "switchboard.pending." + chat, false, joined);
  const REFUSED_KEY = scoped(sessionStorage, "switchboard.refused." + chat, false, joined);
  const DRAFT_KEY = scoped(sessionStorage, "switchboard.draft." + chat, false,
                           (kept, own) => (!own || own === kept ? kept : !kept ? own : own + "\n\n" + kept));

  function randomId() {
    // crypto.randomUUID needs a secure context; getRandomValues works on plain http too.
    const bytes = crypto.getRandomValues(new Uint8Array(16));
    return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
  }

  // -- showing messages ---------------------------------------------------------------

  const { render, renderer, DIRECTION } = SwitchboardMarkdown; // markdown.js: the text as DOM nodes, never as HTML

  // One reading at the bottom follows what grows there (a reply, the progress card's new lines, the working line
  // taking room); one reading further up stays where they are. Asked once per change (a whole history is one), not
  // per message: each asking lays the page out again, and a history of 5,000 messages, laid out anew after each
  // one added, froze the tab for a minute. Near it is within 80 px, or a quarter of the list where that is less: on a
  // small phone with the keyboard up and the box grown, the list is some 50 to 80 px tall, and a reader who scrolled
  // up half of it to read an answer again was taken back down by every message arriving.
  const atBottom = () =>
    list.scrollHeight - list.scrollTop - list.clientHeight < Math.min(80, Math.max(2, list.clientHeight / 4));
  function following(change) {
    const nearBottom = atBottom();
    change();
    if (nearBottom) list.scrollTop = list.scrollHeight;
  }

  const upsert = (message) => following(() => place(message));

  // A message out of sight is not laid out (chat.css): until it comes near, an estimate stands in for its height, and
  // scrolling to the bottom goes by the estimates. A page at the very bottom keeps to it as the messages there take
  // their real heights (a long answer just shown ran on below the window); one the reader scrolled away stays put.
  let pinned = true;
  // Where the page last scrolled the list to its bottom. The scroll event of that comes at the next frame, and the
  // list may have got shorter meanwhile (a line more typed in the growing box): read then, it took the page's own
  // scroll for the reader's, away from the bottom, and let go of it.
  let placed = null;
  list.addEventListener("scroll", () => {
    if (list.scrollTop === placed) return;
    placed = null;
    pinned = list.scrollHeight - list.scrollTop - list.clientHeight < 2;
  });
  const sized = new ResizeObserver(() => {
    if (!pinned) return;
    list.scrollTop = list.scrollHeight;
    placed = list.scrollTop;
  });
  // So does one whose window onto the messages gets shorter: the message box grows with a list being typed (chat.css),
  // a phone's window with its keyboard.
  sized.observe(list);
  // A phone's keyboard covers the lower part of the window and leaves the page as tall (Safari, which ignores
  // index.html's `interactive-widget=resizes-content`; Chrome on Android since 108 without it), and `vh` with it: the
  // box's 40% of the window (chat.css) was 227 px of the 248 an iPhone SE shows above its keyboard and Safari's bar, a
  // long message typed with the conversation out of sight. Its share is of what shows (`--shown`), at the window's
  // scale: not less while zoomed in. Where the keyboard makes the page shorter, both measures agree.
  const seen = window.visualViewport;
  if (seen) {
    const shown = () => document.documentElement.style.setProperty("--shown", seen.height * seen.scale + "px");
    seen.addEventListener("resize", shown);
    shown();
  }

  // Rendering the Markdown of every message a history brings was most of the time the page took to open (fifty
  // answers of 50 KB: fifty renders, 1.1 s of 1.7 s). Such a message shows its text as typed, in its bubble, until it
  // comes within two screens of the window or the page is idle; the newest render at once, and what arrives live or
  // is edited. Its words are there all along, for find-in-page and a screen reader. Rendered before it comes near
  // enough to be laid out (chat.css), it takes its real height once, as before.
  const RENDER_AT_ONCE = 20000; // characters of the newest messages of a history: a window's worth and more
  const plain = new Set(); // the messages whose text shows as typed, waiting to be rendered
  const unrendered = new IntersectionObserver((entries) => {
    const near = entries.filter((entry) => entry.isIntersecting).map((entry) => entry.target);
    if (near.length) steady(() => near.forEach(renderNow));
  }, { root: list, rootMargin: "200% 0px" });

  // What the reader looks at stays where it is while what is above it changes height. The browser's own scroll
  // anchoring keeps to a node within the message at the top of the window, and rendering that message replaced the
  // node: the page moved by the difference. At the bottom, the page follows the bottom instead (`sized`).
  function steady(change) {
    const top = list.getBoundingClientRect().top;
    const anchor = pinned ? null : [...list.children].find((el) => el.getBoundingClientRect().bottom > top);
    const before = anchor && anchor.getBoundingClientRect().top;
    change();
    if (anchor) list.scrollTop += anchor.getBoundingClientRect().top - before;
  }

  function write(el, text, later) {
    el.dataset.text = text;
    plain.add(el);
    if (later) {
      textOf(el).textContent = text;
      unrendered.observe(el);
    } else {
      renderNow(el);
    }
  }

  function renderNow(el) {
    if (!plain.has(el)) return;
    try {
      show(el, (text) => render(el.dataset.text, text));
    } catch (error) { // it stays as typed; thrown from here, it cut off what its caller had left to do (a history)
      setTimeout(() => { throw error; });
    }
  }

  // `el` rendered, `fill` putting the nodes into its text: it waits as typed no longer. The browser finds the text's
  // direction itself (dir="auto"), and looked for it again at each node added: adding the nodes of a 50 KB answer took
  // from 10 to 170 ms, as long as rendering them or longer, and of a 400 KB one five seconds. Added while it is off,
  // it is looked for once.
  function show(el, fill) {
    plain.delete(el);
    unrendered.unobserve(el);
    const text = textOf(el);
    text.removeAttribute("dir");
    try {
      fill(text);
    } finally {
      text.dir = "auto"; // also when rendering failed: right-to-left text shows so, as typed
    }
  }

  // Rendered only as they came near, the messages further up had no headings or links for a screen reader moving by
  // them (NVDA's H and K keys, its list of links). Once the page has painted what a history brought, the rest are
  // rendered while the browser has nothing else to do, the newest first (nearest the window), without moving what is
  // read, each a piece at a time (markdown.js's `renderer`: a line read, a block built), shown as typed until its
  // last piece is done. Rendered at one go, an answer of 50 KB was one task of 80 ms, and a key typed in the box
  // meanwhile waited for its end (bench/web_render_bench.py, "longest task"). The pieces of an idle moment stop at its
  // deadline (before the next frame is due), at once when a key waits (Chromium's timeRemaining() says 0 then), and
  // after SLICE_MS at most.
  const SLICE_MS = 30; // well under a long task's 50 ms; the browser gives one idle moment per 50 ms, no more
  const whenIdle = window.requestIdleCallback || ((work) => setTimeout(() => { // Safari: moments of 50 ms
    const end = performance.now() + 50;
    work({ timeRemaining: () => Math.max(0, end - performance.now()) });
  }, 50));
  let toRender = null; // the messages to render when idle, the newest last; null while none are
  let rendering = null; // { el, text, piece } while one is half rendered: `piece` does its next piece
  function renderRestWhenIdle() {
    const underWay = toRender !== null;
    toRender = [...list.children].filter((el) => plain.has(el)); // with those a reconnect brought
    if (underWay) return;
    requestAnimationFrame(() => whenIdle(renderWhileIdle)); // once what opened is painted
  }
  function renderWhileIdle(deadline) {
    const end = performance.now() + SLICE_MS;
    while (toRender.length && deadline.timeRemaining() > 0 && performance.now() < end) {
      const el = toRender[toRender.length - 1];
      if (!plain.has(el)) { // rendered meanwhile (come near, Tab), or gone
        toRender.pop();
        continue;
      }
      let built;
      try {
        if (!rendering || rendering.el !== el || rendering.text !== el.dataset.text) { // not begun, or edited since
          rendering = { el, text: el.dataset.text, piece: renderer(el.dataset.text) };
        }
        built = rendering.piece();
      } catch (error) {
        // A text the renderer fails on stays as typed, and the rest go on rendering: thrown out of here, it ended
        // the idle renders of this history and of every one a reconnect brought. Still reported, as a page error.
        rendering = null;
        toRender.pop();
        setTimeout(() => { throw error; });
        continue;
      }
      if (built) {
        rendering = null;
        toRender.pop();
        steady(() => show(el, (text) => text.replaceChildren(built)));
      }
    }
    if (toRender.length) whenIdle(renderWhileIdle);
    else toRender = rendering = null;
  }

  // Printed, the page is every message: rendered first, or they would print as typed.
  addEventListener("beforeprint", () => plain.forEach(renderNow));

  // Tab goes to the next link in the page, and a message shown as typed has none yet: Tab went past its links, from
  // an answer read at the top of the history to the newest ones or the input. Before the browser moves the focus, the
  // messages it passes, in the way it goes, are rendered up to the first one with something to focus.
  addEventListener("keydown", (event) => {
    if (event.key !== "Tab" || !plain.size) return;
    const back = event.shiftKey;
    const at = document.activeElement;
    let el;
    if (at && at !== list && list.contains(at)) {
      const from = at.closest(".msg");
      el = from && (back ? from.previousElementSibling : from.nextElementSibling);
    } else {
      const after = !at || at === document.body ? back
        : Boolean(list.compareDocumentPosition(at) & Node.DOCUMENT_POSITION_FOLLOWING);
      if (after === back) el = back ? list.lastElementChild : list.firstElementChild; // Tab goes into the list
    }
    steady(() => {
      for (; el; el = back ? el.previousElementSibling : el.nextElementSibling) {
        renderNow(el);
        if (el.querySelector("a[href], button, input, textarea, select, [tabindex]")) break;
      }
    });
  });

  // `later`: a history's message, rendered once it comes near (a message shown rendered stays so).
  function place(message, later = false) {
    let el = shown.get(message.id);
    const fresh = !el;
    if (!el) {
      el = document.createElement("article");
      el.dataset.id = message.id;
      // Who said it, in words for a screen reader (hidden: the bubble's side and colour say it on screen). Heard
      // without it, a message the user sent was read out as if the agent had said it.
      const who = document.createElement("span");
      who.className = "who";
      who.textContent = message.role === "user" ? "You: " : "Agent: ";
      const text = document.createElement("div");
      text.className = "text";
      text.dir = "auto"; // Arabic or Hebrew reads right to left, its punctuation at the left end
      el.append(who, text);
      shown.set(message.id, el);
      sized.observe(el);
      // Above what this page sent that the gateway does not have yet: that goes where the gateway takes it.
      const [waiting] = unplaced;
      list.insertBefore(el, unplaced.has(message.id) ? null : shown.get(waiting) || null);
    }
    el.className = "msg " + message.role + " kind-" + message.kind;
    el.dataset.kind = message.kind;
    el.dataset.role = message.role;
    el.classList.toggle("pending", Boolean(message.pending));
    markWaiting(el, message.pending && waited);
    el.classList.toggle("failed", Boolean(message.failed));
    el.classList.toggle("edited", Boolean(message.edited));
    el.classList.toggle("has-file", Boolean(message.file));
    let reason = el.querySelector(".reason");
    if (message.failed && !reason) {
      reason = document.createElement("div"); // in words, not in a tooltip a phone cannot show
      reason.className = "reason";
      el.removeAttribute("aria-live"); // news, also in a message a history brought (sent before a reload)
      el.append(reason, refusedActions(message.id, message.text));
    }
    if (message.failed) reason.textContent = message.failed;
    if (el.dataset.text !== message.text) write(el, message.text, later && (fresh || plain.has(el)));
    if (message.file) showFile(message.file, el);
  }

  const textOf = (el) => el.querySelector(":scope > .text");

  // What a screen reader is told that the messages themselves do not say: each line added to the #said region, a
  // status, is read out once and goes after SAID_MS. Left there, it was met again, stale, by whoever read the page
  // through; a line of its own each, two said at once are both read out, and the same words again are news again
  // (a line added, in place of the one before).
  const SAID_MS = 7000; // as React Aria's LiveAnnouncer: long enough for a screen reader to have taken it
  function say(text) {
    for (const before of [...$("said").children]) if (before.textContent === text) before.remove();
    const line = document.createElement("p");
    line.className = "spoken";
    line.textContent = text;
    $("said").append(line);
    setTimeout(() => line.remove(), SAID_MS);
  }

  // A message the page holds back (its POST failed and waits to be posted again, is still unanswered after
  // WAITING_AFTER_MS, or it is queued behind one of those) shows in a dashed outline. A screen reader was told nothing
  // of it, and its user took the message for lost: each such bubble says "not sent yet" in words too (hidden, as who
  // said it; not read out again as it is marked, #said says it once), and #said says once that it waits, and once
  // that what waited went. On screen chat.css says it in a line under the text: the outline alone told a phone's user
  // nothing either.
  let waited = false; // a message was held back, and the page has not said yet that the queue is through
  function markWaiting(el, on) {
    let mark = el.querySelector(":scope > .waiting");
    if (on && !mark) {
      mark = document.createElement("span");
      mark.className = "spoken waiting";
      mark.setAttribute("aria-live", "off");
      mark.textContent = " (not sent yet)";
      textOf(el).after(mark);
    } else if (!on && mark) {
      mark.remove();
    }
  }

  function holdBack() {
    for (const item of pending()) {
      const el = shown.get("user:" + item.key);
      if (el) markWaiting(el, true);
    }
    if (!waited) say("Not sent yet: your message waits, and goes by itself once the gateway takes it.");
    waited = true;
  }

  function showFile(file, el) {
    let box = el.querySelector(".file");
    if (!box) {
      box = document.createElement("div");
      box.className = "file";
      el.append(box);
    }
    box.classList.toggle("expired", Boolean(file.expired));
    if (file.expired) {
      box.textContent = "📎 This file is no longer kept.";
      return;
    }
    const link = document.createElement("a");
    link.href = api("files/") + encodeURIComponent(file.id) + "?chat=" + encodeURIComponent(chat);
    link.download = file.name;
    link.textContent = file.name;
    link.addEventListener("click", (event) => {
      event.preventDefault();
      download(link.href, file.name, box);
    });
    const size = document.createElement("span");
    size.className = "size";
    size.textContent = humanSize(file.size);
    box.replaceChildren("📎 ", link, " ", size);
  }

  async function download(url, name, box) {
    let response = null;
    let body = null;
    try {
      response = await fetch(url, { headers: auth.headers(), cache: "no-store" });
      if (response.ok) body = await response.blob(); // the gateway stopping halfway ends it with an error
    } catch {
      // said below: no answer at all, or the file cut off
    }
    if (response && auth.asksForToken(response)) {
      await auth.askForToken(true);
      return download(url, name, box);
    }
    let problem = box.querySelector(".problem");
    if (!body) {
      const reason = !response ? "the gateway cannot be reached"
        : response.ok ? "the download was cut off; try again"
        : (await response.json().catch(() => ({}))).error || "HTTP " + response.status;
      if (!problem) {
        problem = document.createElement("span");
        problem.className = "problem";
        box.append(problem);
      }
      problem.textContent = "Not downloaded: " + reason;
      return;
    }
    if (problem) problem.remove();
    const saved = URL.createObjectURL(body);
    const save = document.createElement("a");
    save.href = saved;
    save.download = name;
    document.body.append(save);
    save.click();
    save.remove();
    setTimeout(() => URL.revokeObjectURL(saved), 60000); // the download has long started by then
  }

  // Decimal units, as the gateway states upload limits (agent/tools/send_file.py human_size).
  function humanSize(n) {
    for (const [unit, scale] of [["GB", 1e9], ["MB", 1e6], ["KB", 1e3]]) {
      if (n >= scale) return (n / scale).toFixed(1) + " " + unit;
    }
    return n + " bytes";
  }

  function edit(id, text) {
    const el = shown.get(id);
    if (!el) return; // older than the history the page holds: nothing to show
    // The progress card is edited every few seconds all turn long: a screen reader hears it when it
    // appears, then not at each edit, which would drown the replies.
    if (el.dataset.kind === "notice") el.setAttribute("aria-live", "off");
    following(() => {
      el.classList.add("edited");
      write(el, text, false);
    });
  }

  function remove(id) {
    const el = shown.get(id);
    if (el) {
      sized.unobserve(el);
      unrendered.unobserve(el);
      plain.delete(el);
      el.remove();
    }
    shown.delete(id);
  }

  // Every (re)connect's history is merged into what shows, not drawn again: a message already shown
  // keeps its element, so the reader is not scrolled away from what they read and a screen reader
  // does not read the whole conversation out again. The history holds the last history_limit messages
  // only: what shows before the first of them it shares with the page stays, whatever the history
  // lacks after that is gone from the gateway (deleted while the page was away). With `gap` (the gateway
  // no longer has the newest message the page held) nothing before it stays: what the page showed does not
  // reach the history, and kept above it, the messages between would be missing without a sign.
  //
  // Unlike the log's live lines, the messages a history adds are not read out: on opening they are the
  // conversation so far, and a reconnect's can be 2,000. Only the few a short drop missed (an answer that came in
  // those seconds) are read out as they would have been; more are news all the same, said as their number, once
  // (left silent, a screen reader's user never learnt that anything had come).
  const MISSED_READ_OUT = 3;
  const showHistory = (messages, gap, reconnect) => following(() => {
    const before = new Set(shown.keys());
    merge(messages, gap);
    renderNewest();
    renderRestWhenIdle();
    const added = [...shown.keys()].filter((id) => !before.has(id));
    if (reconnect && added.length <= MISSED_READ_OUT) { // read out: rendered, as they would have been live
      added.forEach((id) => renderNow(shown.get(id)));
      return;
    }
    for (const id of added) shown.get(id).setAttribute("aria-live", "off");
    if (reconnect) say(added.length + " new messages came while the chat was disconnected.");
  });

  function renderNewest() {
    let budget = RENDER_AT_ONCE;
    for (let el = list.lastElementChild; el && budget > 0; el = el.previousElementSibling) {
      budget -= (el.dataset.text || "").length;
      renderNow(el);
    }
  }

  function merge(messages, gap) {
    const inHistory = new Set(messages.map((m) => m.id));
    const own = ownIds(); // placed below
    const order = [];
    for (const el of gap ? [] : list.children) {
      if (inHistory.has(el.dataset.id)) break;
      if (!own.has(el.dataset.id)) order.push(el.dataset.id);
    }
    unplaced.clear();
    for (const message of messages) {
      if (!isBrief(message)) place(confirmedUnlessPending(message), true); // one sent as its id is shown as it is
      order.push(message.id);
    }
    for (const send of pending()) { // not confirmed yet: still shown, still retried
      if (!inHistory.has("user:" + send.key)) unplaced.add("user:" + send.key);
      place(ownMessage(send));
      order.push("user:" + send.key);
    }
    for (const draft of refused) {
      place(ownMessage(draft, { pending: false, failed: draft.failed }));
      order.push("user:" + draft.key);
    }
    const keep = new Set(order);
    for (const id of [...shown.keys()]) if (!keep.has(id)) remove(id);
    let previous = null;
    for (const id of keep) { // moved only where out of order: a moved element is read out as new
      const el = shown.get(id);
      const next = previous ? previous.nextElementSibling : list.firstElementChild;
      if (el !== next) list.insertBefore(el, next);
      previous = el;
    }
  }

  const ownIds = () => new Set([...pending(), ...refused].map((m) => "user:" + m.key));

  // The newest message shown that the gateway keeps, for a reconnect's history to reach back to: not one
  // this page has not had confirmed, nor a progress card (deleted when its turn ends, it would not be found).
  function newestHeld() {
    const own = ownIds();
    for (let el = list.lastElementChild; el; el = el.previousElementSibling) {
      if (!own.has(el.dataset.id) && !unplaced.has(el.dataset.id) && el.dataset.kind !== "notice") return el.dataset.id;
    }
    return null;
  }

  // A reconnect asks for the messages up to the newest it holds as their ids alone ("brief"): a phone that locks or
  // changes networks was sent the whole history_limit again at each reconnect, up to megabytes of answers. The ids
  // still say the order and what is gone, so the history merges as a whole one does. An id the page does not hold
  // (one the gateway placed above the newest while the page was away) it cannot show: it asks again, whole.
  const isBrief = (message) => !("role" in message);
  let briefOk = true;
  function eventsUrl() {
    const after = newestHeld();
    return api("events?chat=") + encodeURIComponent(chat)
      + (after ? "&after=" + encodeURIComponent(after) + (briefOk ? "&brief=1" : "") : "");
  }

  // The working line is seen; a screen reader is told once a turn (#said), not at each of the typing events that keep
  // the line up, nor when a reconnect's history says the turn still runs. Only shown, it left its user hearing
  // nothing between their message and the answer, however long the turn. `known`: the gateway says whether a turn
  // runs (its history, "idle"), which a dropped stream or typing events that lapse do not.
  const WORKING = "The agent is working.";
  let toldWorking = false;
  let typingTimer = null;
  function setWorking(on, known = false) {
    if (on && !toldWorking) say(WORKING);
    if (on || known) toldWorking = on;
    // Hidden, its Stop button would take the focus with it: a keyboard would start again from the top of the page.
    if (!on && working.contains(document.activeElement)) input.focus();
    following(() => {
      working.hidden = !on;
    });
    clearTimeout(typingTimer);
    if (on) typingTimer = setTimeout(() => setWorking(false), TYPING_LAPSE_MS);
  }

  // -- sending ------------------------------------------------------------------------

  function stored(key) {
    try {
      return JSON.parse(sessionStorage.getItem(key) || "[]");
    } catch {
      return [];
    }
  }

  // What is not sent yet lives in this page's memory, and in the tab's sessionStorage as far as it has room (a few
  // megabytes: a pasted log, many messages queued while the gateway is away, fill it, and setItem throws). Thrown
  // mid-send, it lost the message, or stopped the queue until a reload. What does not fit is sent, shown and
  // editable all the same while the tab lives; a reload loses it, which the page says (`notKept`).
  let queue = stored(PENDING_KEY); // sends the gateway has not confirmed, in the order typed
  let refused = stored(REFUSED_KEY); // messages it refused, each the only copy of its text
  const pending = () => queue;

  function savePending(sends) {
    queue = sends;
    keep(PENDING_KEY, sends);
  }
  function saveRefused(drafts) {
    refused = drafts;
    keep(REFUSED_KEY, drafts);
  }

  // As many of `items` as fit, the oldest: a reload sends what was kept in the order typed, no message without
  // the one before it. Found by halving: trying each shorter list in turn wrote a long queue behind a pasted log
  // over and over, at each save.
  function keep(key, items) {
    if (!items.length) {
      sessionStorage.removeItem(key);
      return;
    }
    const fits = (n) => {
      try {
        sessionStorage.setItem(key, JSON.stringify(items.slice(0, n)));
        return true;
      } catch {
        return false; // no room for this many
      }
    };
    if (fits(items.length)) return;
    let kept = 0; // fits: the last list that did is what is stored
    let over = items.length; // does not fit
    while (over - kept > 1) {
      const n = Math.floor((kept + over) / 2);
      if (fits(n)) kept = n;
      else over = n;
    }
    if (!kept) sessionStorage.removeItem(key);
    notKept();
  }

  let warned = false;
  function notKept() {
    if (warned) return; // once: the storage stays full, and a screen reader would read it out at each message
    warned = true;
    const note = document.createElement("div");
    note.id = "not-kept";
    note.className = "working error"; // the working line's place and size, in red
    note.setAttribute("role", "status");
    note.textContent = "This tab's storage is full: what is typed or not sent yet is kept only while this tab"
      + " stays open, not through a reload.";
    $("composer").before(note);
  }

  function ownMessage(send, extra) {
    return Object.assign({ id: "user:" + send.key, role: "user", kind: "user", text: send.text, pending: true }, extra);
  }

  function send(text) {
    const item = { key: randomId(), text };
    savePending([...pending(), item]);
    unplaced.add("user:" + item.key);
    upsert(ownMessage(item));
    list.scrollTop = list.scrollHeight; // what one sends shows, wherever one was reading
    sendNext();
  }

  // One message on its way at a time, the oldest first; the next goes once the gateway has it. Each
  // retrying on its own, a message typed later could reach the gateway (and the agent) first.
  const SEND_TIMEOUT_MS = 20000; // a POST sent on a connection that died without a word is never answered
  // A POST that hangs (a gateway slow to take it, a stalled connection) is said to wait this long after it went:
  // said only once it failed, a screen reader heard nothing of the message for up to SEND_TIMEOUT_MS.
  const WAITING_AFTER_MS = 2000;
  let sending = false; // the oldest pending message is being posted, or waits to be posted again
  let posting = null; // the AbortController of its POST while that is on its way
  let retry = null; // { timer, item } while it waits
  let failures = 0;
  const AGAIN = Symbol("posted again"); // why a POST was abandoned: it goes again at once, not after a backoff

  function sendNext() {
    const [item] = pending();
    if (sending || !item) return;
    sending = true;
    deliver(item);
  }

  // The page reconnecting means the gateway is back: the message waiting goes at once then, not at the
  // end of its backoff (up to 10 s after a long outage, faded meanwhile). So does one on its way: its POST
  // may have gone on a connection that died with the gateway or the network, to wait out SEND_TIMEOUT_MS
  // unanswered. If the gateway had it after all, the same key again is the same message to it.
  function sendWaitingNow(reconnected) {
    failures = 0;
    if (posting && reconnected) {
      posting.abort(AGAIN);
      return;
    }
    if (!retry) return;
    clearTimeout(retry.timer);
    const { item } = retry;
    retry = null;
    deliver(item);
  }

  async function post(item) {
    const abort = new AbortController();
    const timer = setTimeout(() => abort.abort(), SEND_TIMEOUT_MS);
    const slow = setTimeout(holdBack, WAITING_AFTER_MS);
    posting = abort;
    try {
      return await fetch(api("messages"), {
        method: "POST",
        headers: auth.headers({ "Content-Type": "application/json" }),
        body: JSON.stringify({ chat, text: item.text, key: item.key }),
        signal: abort.signal,
      });
    } catch {
      if (abort.signal.reason === AGAIN) return AGAIN;
      return null; // offline, the gateway restarting, or no answer in time: the same key again, later
    } finally {
      clearTimeout(timer);
      clearTimeout(slow);
      posting = null;
    }
  }

  async function deliver(item) {
    const response = await post(item);
    if (response === AGAIN) return deliver(item);
    if (response && auth.asksForToken(response)) {
      auth.askForToken(true).then(() => deliver(item));
      return;
    }
    // 408 (a body that came in too slowly) and 429 (a proxy's rate limit) say "not now", not "not this
    // message": refused, it would be left behind while the messages typed after it went. Any other 4xx is
    // final, 422 too (the gateway failed on this message, and would at every try): posted again, it held
    // every message typed after it for ever.
    if (!response || response.status >= 500 || [401, 408, 429].includes(response.status)) {
      holdBack();
      retry = { item, timer: setTimeout(() => {
        retry = null;
        deliver(item);
      }, Math.min(500 * 2 ** failures++, 10000)) };
      return;
    }
    failures = 0;
    savePending(pending().filter((p) => p.key !== item.key));
    if (response.ok) {
      const el = shown.get("user:" + item.key);
      if (el) {
        el.classList.remove("pending");
        markWaiting(el, false);
      }
    } else {
      unplaced.delete("user:" + item.key); // refused: the gateway never publishes it
      const reason = (await response.json().catch(() => ({}))).error || "HTTP " + response.status;
      const draft = Object.assign({}, item, { failed: "Not sent: " + reason });
      saveRefused([...refused, draft]);
      upsert(ownMessage(draft, { pending: false, failed: draft.failed }));
      if (!input.value) setInput(item.text); // back in the box, to shorten or correct and send again
    }
    sending = false;
    if (waited && !pending().length) { // a refusal is said as its reason, in its bubble
      waited = false;
      if (response.ok) say("Sent: the messages that waited are with the gateway now.");
    }
    sendNext();
  }

  // What is typed and not sent lives in this tab's sessionStorage too: a phone reloads a tab it had in the
  // background, and the half-typed message was gone. Set by the page (Edit, a refusal), the box fires no "input".
  // Best effort: a draft the tab's storage has no room for (a pasted log) is not kept (`notKept`), and must not throw
  // where the page sets the box (a refusal): the queue stopped there, and nothing typed after it was sent.
  function saveDraft() {
    try {
      if (input.value) sessionStorage.setItem(DRAFT_KEY, input.value);
      else sessionStorage.removeItem(DRAFT_KEY);
    } catch {
      sessionStorage.removeItem(DRAFT_KEY); // not an older draft in its place: a reload would show that
      notKept();
    }
  }
  function setInput(text) {
    input.value = text;
    saveDraft();
  }
  input.addEventListener("input", saveDraft);

  // What is not sent yet lives in this tab's sessionStorage (a reload sends it): closing the tab loses it.
  addEventListener("beforeunload", (event) => {
    if (!pending().length) return;
    event.preventDefault();
    event.returnValue = true; // how browsers before 2023 (Chrome 119) are asked to
  });

  // A refused message is the only copy of its text (the gateway never took it): it stays, also through
  // a reload (from sessionStorage), until dismissed (asked first unless the box holds its text);
  // Edit puts its text into the box again, after what is typed there (a draft a reload kept, say).
  // Each button's name says which message, after the word it shows (what a voice user says to click it): named by
  // that word alone, a screen reader's list of the page's buttons read "Edit, Dismiss, Edit, Dismiss". Its start is
  // quoted as the console quotes a message, isolated: a right-to-left text does not turn the name round. It holds
  // no direction control, as the gateway's own quotes hold none (gateway/excerpt.py): an isolate it closed itself (a
  // stray U+2069) ended the quote's, an override after that turning the rest of the name round, and one it opened
  // and left open took the closing quote in.
  const EXCERPT_CHARS = 40;
  function refusedActions(id, text) {
    const actions = document.createElement("div");
    actions.className = "actions";
    const draft = () => refused.find((d) => "user:" + d.key === id);
    // By character as shown (a grapheme): cut between the halves of a surrogate pair, or the code points of one
    // character (a family emoji, a flag, an accented letter written as two), the name ended in a broken one.
    const spaced = text.replace(DIRECTION, "").trim().replace(/\s+/g, " ");
    const parts = typeof Intl.Segmenter === "function"
      ? new Intl.Segmenter(undefined, { granularity: "grapheme" }).segment(spaced) : spaced; // else by code point
    const chars = [];
    for (const part of parts) { // the start alone, of a long text too
      if (chars.push(typeof part === "string" ? part : part.segment) > EXCERPT_CHARS) break;
    }
    const excerpt = chars.length > EXCERPT_CHARS ? chars.slice(0, EXCERPT_CHARS).join("").trimEnd() + "…"
      : chars.join("");
    const named = (button, word) => {
      button.textContent = word;
      button.setAttribute("aria-label", word + " the message \u201c\u2068" + excerpt + "\u2069\u201d");
    };
    const edit = document.createElement("button");
    edit.type = "button";
    edit.className = "edit";
    named(edit, "Edit");
    edit.addEventListener("click", () => {
      const text = draft() ? draft().text : "";
      setInput(input.value && input.value !== text ? input.value + "\n\n" + text : text); // what was typed stays
      input.focus();
    });
    const dismiss = document.createElement("button");
    dismiss.type = "button";
    dismiss.className = "dismiss";
    named(dismiss, "Dismiss");
    dismiss.addEventListener("click", () => {
      // The bubble may be the text's only copy (the box holds other words): a slip must not lose it.
      const text = draft() ? draft().text : "";
      if (!input.value.includes(text) && !confirm("Dismiss this message? Its text is kept nowhere else.")) return;
      saveRefused(refused.filter((d) => "user:" + d.key !== id));
      remove(id);
      input.focus(); // not lost with the button: a keyboard would start again from the top of the page
    });
    actions.append(edit, dismiss);
    return actions;
  }

  // What shows nothing, the gateway's own set (platforms/formatting/blank.py; a browser test holds the two equal):
  // whitespace, the characters Telegram counts as none, Unicode's default ignorables. A message of only these (a
  // zero-width space) is not sent, as an empty one is not: the gateway refuses it, and it showed in red.
  const BLANK = new RegExp("^[\t-\r\x1c-\x20\x85\xa0\xad\u034f\u061c\u115f\u1160\u1680\u17b4\u17b5"
    + "\u180b-\u180f\u2000-\u200f\u2028-\u202f\u205f-\u206f\u2800\u3000\u3164\ufe00-\ufe0f\ufeff\uffa0"
    + "\ufff0-\ufff8\ufffc\u{1bca0}-\u{1bca3}\u{1d173}-\u{1d17a}\u{e0000}-\u{e0fff}]*$", "u");
  $("composer").addEventListener("submit", (event) => {
    event.preventDefault();
    const text = input.value;
    if (BLANK.test(text)) return;
    setInput(""); // first: the draft's room in the tab's storage goes to the send, which keeps its text now
    input.focus(); // sent with the button, the next message is typed at once all the same
    send(text);
  });
  // A touch screen alone (a phone, a tablet without a mouse or trackpad) has no Shift+Enter: there Enter sending, a
  // message of more than one line (a list, which is what delegates) could not be typed at all. Its Enter starts a new
  // line, Send sends, and so does Ctrl+Enter (or Cmd+Enter) from a keyboard attached to it: no media query tells a
  // keyboard is there, so a tablet with one and no pointer counts as touch alone too.
  const touchOnly = matchMedia("(hover: none) and (pointer: coarse)");
  input.addEventListener("keydown", (event) => {
    // The Enter that picks an input method's conversion (Japanese, Chinese) is the method's: Chromium says
    // isComposing, Safari ends the composition first and gives the key code 229 ("being composed") only.
    if (event.key !== "Enter" || event.shiftKey || event.isComposing || event.keyCode === 229) return;
    if (touchOnly.matches && !event.ctrlKey && !event.metaKey) return;
    event.preventDefault();
    $("composer").requestSubmit();
  });
  // A command acts once per click burst: the second click of a double click (event.detail 2) would
  // send it again, and a second /stop could stop the turn after the one meant.
  const once = (command) => (event) => event.detail > 1 || send(command);
  for (const button of document.querySelectorAll("button.command")) {
    button.addEventListener("click", once(button.dataset.command));
  }
  $("stop").addEventListener("click", once("/stop"));

  // -- older messages, as the reader scrolls up or asks for them ----------------------------

  // A history holds the chat's last history_limit messages (200): scrolled up to the first of them, the reader took it
  // for the conversation's start, with no sign that it went on above. Scrolling up near the top, the page asks for the
  // messages before its oldest, a history's worth at a time, for as long as the gateway says it may keep more
  // ("more"). Only the reader asks. Scrolling alone, a list that fits the window (a small history_limit, a tall
  // screen) never scrolled, and a screen reader reading the log need not scroll it: the older messages were out of
  // reach, and nothing said there were any. So while there are more, a button above the list says so and brings
  // them, and a key going up at the list's top (where it scrolls nothing) asks too. What could not be fetched is said
  // above the messages, with a button: at the very top, no scroll comes to try again.
  const OLDER_WITHIN_PX = 400; // asked for before the reader gets to the top, so they are there when they do
  const REVEAL_KEPT_PX = 48; // of what showed at the top, still in sight below the older ones the button brought
  const UP_KEYS = new Set(["Home", "PageUp", "ArrowUp"]);
  const olderLine = $("older");
  const olderButton = $("show-older");
  let olderMore = false; // the gateway keeps messages older than the oldest shown
  let fetchingOlder = false;

  // The oldest message shown that the gateway has (not one this page sent that it has not confirmed, or refused).
  function oldestKept() {
    const own = ownIds();
    return [...list.children].find((el) => !own.has(el.dataset.id) && !unplaced.has(el.dataset.id)) || null;
  }

  const retryOlder = olderLine.querySelector("button");

  function sayOlder(text, failed = false) {
    const focused = document.activeElement; // before Try again, shown only while it failed, may hide with it
    olderLine.hidden = !text;
    olderLine.classList.toggle("failed", failed);
    olderLine.querySelector("span").textContent = text;
    offerOlder(focused);
  }

  // Hidden while Try again stands in its place, or when there are none more. A button hidden with the focus on it
  // took the focus with it (a keyboard would start again at the top of the page): that goes to the one shown in its
  // place, or to the messages.
  function offerOlder(focused = document.activeElement) {
    const failed = olderLine.classList.contains("failed");
    olderButton.hidden = !olderMore || failed;
    if (focused === olderButton && olderButton.hidden) (failed ? retryOlder : list).focus();
    else if (focused === retryOlder && !failed) (olderButton.hidden ? list : olderButton).focus();
  }

  const nearTop = () => list.scrollTop < OLDER_WITHIN_PX && fetchOlder();

  // `reveal`: asked for with the button, the older messages come into sight (the reader asked to see them); else
  // the reader stays where they are.
  async function fetchOlder(reveal = false) {
    const oldest = oldestKept();
    if (fetchingOlder || !olderMore || !oldest) return;
    fetchingOlder = true;
    sayOlder("Loading older messages…");
    let failed = null;
    let response = null;
    try {
      response = await fetch(api("history?chat=") + encodeURIComponent(chat) + "&before="
        + encodeURIComponent(oldest.dataset.id), { headers: auth.headers(), cache: "no-store" });
      const body = await response.json().catch(() => ({}));
      if (!response.ok) failed = body.error || "HTTP " + response.status;
      else if (oldestKept() === oldest) showOlder(body.messages || [], Boolean(body.more), reveal); // not a gap's
    } catch {
      failed = "the gateway cannot be reached";
    } finally {
      fetchingOlder = false;
    }
    if (response && auth.asksForToken(response)) {
      await auth.askForToken(true);
      return fetchOlder(reveal);
    }
    if (failed) return sayOlder("Older messages could not be loaded: " + failed, true);
    sayOlder("");
    nearTop(); // a short history's worth may leave the reader at the top still
  }

  // Above what shows, with the reader kept where they are (the message they read does not move), or, to `reveal`
  // them, with what showed at the top moved down to the bottom of the window. Not read out, they are counted (#said):
  // a screen reader's user heard "Loading older messages…", then nothing, and could not tell what had come.
  function showOlder(messages, more, reveal) {
    const first = list.firstElementChild;
    const before = reveal ? list.getBoundingClientRect().bottom - REVEAL_KEPT_PX : first.getBoundingClientRect().top;
    let added = 0;
    for (const message of messages) {
      if (shown.has(message.id)) continue;
      place(message, true);
      const el = shown.get(message.id);
      el.setAttribute("aria-live", "off"); // the conversation's past, asked for: not news to read out
      list.insertBefore(el, first);
      added += 1;
    }
    if (added) say(added + (added === 1 ? " older message" : " older messages") + " loaded.");
    list.scrollTop += first.getBoundingClientRect().top - before;
    olderMore = more;
    renderRestWhenIdle();
  }

  // What a history says of older messages holds where it reaches the oldest shown: on opening, after a gap, or a
  // reconnect of a page that had loaded none older. A page that had keeps them, and what it knew of those before.
  function historyReaches(messages, more) {
    const oldest = oldestKept();
    if (oldest && messages.length && oldest.dataset.id !== messages[0].id) return;
    olderMore = more;
    if (fetchingOlder) offerOlder();
    else sayOlder("");
  }

  // Up, and not to the bottom: the page's own scrolls go down, and a scroll offset cut back because the messages got
  // shorter (their real heights in place of the estimates, chat.css) leaves the page at its bottom.
  let lastTop = 0;
  list.addEventListener("scroll", () => {
    const up = list.scrollTop < lastTop && list.scrollHeight - list.scrollTop - list.clientHeight >= 2;
    lastTop = list.scrollTop;
    if (up) nearTop();
  }, { passive: true });
  retryOlder.addEventListener("click", () => fetchOlder());
  olderButton.addEventListener("click", () => fetchOlder(true));
  // A key going up asks near the top as a scroll up does: at the very top (a list that fits the window) it scrolls
  // nothing, and no scroll comes to ask.
  list.addEventListener("keydown", (event) => UP_KEYS.has(event.key) && nearTop());

  // -- receiving ----------------------------------------------------------------------

  // What this page sent stays marked pending until its own POST is answered, whatever the stream says.
  const confirmedUnlessPending = (message) =>
    Object.assign(message, { pending: pending().some((p) => "user:" + p.key === message.id) });

  let opened = false; // a history came before: the next is a reconnect's
  const handlers = {
    history: (data) => {
      briefOk = data.messages.every((m) => !isBrief(m) || shown.has(m.id));
      if (!briefOk) return false; // asked for again, whole
      showHistory(data.messages, Boolean(data.gap), opened);
      historyReaches(data.messages, Boolean(data.more));
      setWorking(Boolean(data.working), true);
      // At the first, what a reload left unsent has just been posted, alongside the stream: no cause to doubt it.
      sendWaitingNow(opened);
      opened = true;
    },
    user: (data) => {
      // Moved to where the gateway took it, unless it is there: the first unplaced, right below what the gateway has.
      const [first] = unplaced;
      if (unplaced.delete(data.id) && data.id !== first) remove(data.id);
      upsert(confirmedUnlessPending(data));
    },
    message: (data) => upsert(data),
    edit: (data) => edit(data.id, data.text),
    delete: (data) => remove(data.id),
    typing: () => setWorking(true),
    idle: () => setWorking(false, true),
  };

  input.value = sessionStorage.getItem(DRAFT_KEY) || ""; // what a reload interrupted the typing of
  sendNext(); // what a reload interrupted, in the order typed
  SwitchboardLive.listen(eventsUrl, auth, {
    ready: "history",
    onEvent: (type, data) => handlers[type] && handlers[type](data),
    onDrop: () => setWorking(false),
  });
  input.focus();
})();
