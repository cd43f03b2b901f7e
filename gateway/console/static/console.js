// The Switchboard operator console. Plain JavaScript, no build step, no third-party code; the
// token, the connection state and the event stream are live.js's (shared with the web chat).
//
// GET /console/api/events (Server-Sent Events, read with fetch so the token can travel in a
// header) sends a "state" event with the whole picture at once and again whenever it changes;
// the page redraws from it. Elapsed times tick here, from the gateway's clock ("now" in each
// state). Buttons POST to /console/api/...; what they change arrives as the next state.
"use strict";

(() => {
  const $ = (id) => document.getElementById(id);
  const { setState } = SwitchboardLive;
  const auth = SwitchboardLive.access("switchboard.console.token");
  // The API's address beside this script's own (…/console/static/console.js): the page may be at /console,
  // /console/ or under a reverse proxy's prefix (/sb/console), where an absolute /console/api reaches the proxy's root.
  const API = new URL("../api/", document.currentScript.src);
  const api = (path) => new URL(path, API).href;
  let skew = 0; // local clock minus the gateway's, in seconds
  let asOf = null; // while what shows is from before a drop, the gateway time it was current: the times stop there
  let pictured = false; // a state has been drawn
  let connected = false; // a state came over the stream open now (false from its drop, see `stale`)

  // -- small DOM helpers: text only, never HTML ----------------------------------------

  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs || {})) {
      if (value === null || value === undefined) continue;
      if (key === "class") node.className = value;
      else if (key.startsWith("data-") || key.startsWith("aria-")) node.setAttribute(key, value);
      else if (key === "title") node.title = value;
      else node[key] = value;
    }
    for (const child of children) {
      if (child !== null && child !== undefined) node.append(child);
    }
    return node;
  }

  const td = (text, cls) => el("td", { class: cls || null }, text === null || text === undefined ? "" : String(text));
  // What strangers wrote (a goal, a logged message), kept to itself when the page's own words follow it on the
  // line: a right-to-left override in it (U+202E) ran on and turned them around, an error read backwards. A
  // <bdi> (and, in a question's plain text, U+2068 ... U+2069) ends the override and sets the text's own direction.
  const theirs = (text) => el("bdi", {}, text);
  // A quote (a button's name, a question) holds no direction control, as the gateway's own quotes hold none
  // (gateway/excerpt.py): an isolate the text closed itself (a stray U+2069) ended the quote's, an override after it
  // turning the rest of the name or question round, and one it opened and left open took the closing quote in.
  const DIRECTION = /[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;
  const quoted = (text) => "\u201c\u2068" + text.replace(DIRECTION, "") + "\u2069\u201d";
  const badge = (text, cls) => el("span", { class: "badge " + (cls || text) }, text);
  const chat = (platform, chatId) => platform + " · " + chatId;
  // Children a plugin launched for a session of its own belong to no chat.
  const where = (w) => w.platform ? chat(w.platform, w.chat_id) : "session " + w.session_id;

  function duration(seconds) {
    seconds = Math.max(0, Math.floor(seconds));
    if (seconds < 60) return seconds + "s";
    if (seconds < 3600) return Math.floor(seconds / 60) + "m " + String(seconds % 60).padStart(2, "0") + "s";
    return Math.floor(seconds / 3600) + "h " + String(Math.floor((seconds % 3600) / 60)).padStart(2, "0") + "m";
  }

  // A gateway time as this browser's date and time with its zone: the errors kept may be days old, and
  // are compared with logs written elsewhere.
  const when = (time) => new Date(time * 1000).toLocaleString(undefined, {
    year: "numeric", month: "2-digit", day: "2-digit", hour: "2-digit", minute: "2-digit", second: "2-digit",
    timeZoneName: "short" });

  // An element whose text is the time since (or, with data-until, between) gateway times; ticks.
  function since(start, end, suffix) {
    const node = el("span", { class: "since", "data-since": start, "data-until": end ?? null, "data-suffix": suffix || "" });
    tick(node);
    return node;
  }

  function tick(node) {
    const now = asOf ?? Date.now() / 1000 - skew;
    const end = node.dataset.until ? Number(node.dataset.until) : now;
    node.textContent = duration(end - Number(node.dataset.since)) + (node.dataset.suffix || "");
  }

  // Not a time the operator is selecting: a tick replaces its text, and the selection went with it.
  setInterval(() => document.querySelectorAll(".since").forEach((node) => {
    if (!document.getSelection()?.containsNode(node, true)) tick(node);
  }), 1000);

  // -- drawing ------------------------------------------------------------------------

  function draw(state) {
    // Every state draws the page again: the button the keyboard was on is a new one then, and is given
    // the focus back (else it falls to the page, and Enter does nothing, or Tab starts over).
    const focused = document.activeElement && document.activeElement.dataset.action;
    drawPlatforms(state.platforms, state.now);
    drawStorage(state.storage, state.unread || {});
    drawWork(state.work);
    drawDelegations(state.delegations);
    drawOutbox(state.outbox);
    drawSessions(state.sessions);
    drawErrors(state.errors);
    document.querySelectorAll("table").forEach(labelCells);
    if (focused) drawn(focused)?.focus();
  }

  // The button that acts on `url` as last drawn (each state draws them anew).
  const drawn = (url) => [...document.querySelectorAll("button[data-action]")].find((b) => b.dataset.action === url);

  // Each cell carries its column's name: on a phone a row shows as a card, a cell a line, named so.
  function labelCells(table) {
    const names = [...table.tHead.rows[0].cells].map((th) => th.textContent);
    for (const row of table.tBodies[0].rows) {
      [...row.cells].forEach((cell, i) => { if (names[i]) cell.dataset.label = names[i]; });
    }
  }

  function drawStorage(storage, unread) {
    const down = storage.status === "down";
    // A section the gateway could not read comes empty: say so, or it reads as nothing there.
    const sections = Object.keys(unread);
    const said = [...(down ? [el("strong", {}, "state database down "), storage.reason] : []),
      ...(sections.length ? [el("strong", {}, (down ? " · " : "") + "could not read "),
                             sections.join(", ") + " (" + Object.values(unread)[0] + ")"] : [])];
    // An alert is read out at each change: drawn again only when what it says changes (each state drew it
    // anew), and how long, which ticks, is beside it.
    const text = said.map((part) => part.textContent ?? part).join("");
    if ($("storage").textContent !== text) $("storage").replaceChildren(...said);
    $("storage-for").replaceChildren(...(down ? [" for ", since(storage.since)] : []));
  }

  // Ages as of the state's `now`, not as of drawing it: one held for a selection is drawn up to 30 s later, and an
  // age is sent again only when the platform hears something (it read younger by the hold until then).
  function drawPlatforms(platforms, now) {
    $("platforms").replaceChildren(...platforms.map((p) => {
      const status = p.connection ? p.connection.status : "no_connection";
      // Only a connection that is not up is worth the words: reconnecting, or down and why.
      const unwell = status === "reconnecting" || status === "down";
      return el("li", { "data-platform": p.name, "data-connection": status,
                        title: unwell ? p.name + " " + status + ": " + p.connection.reason
                                      : "time since " + p.name + " last handed the gateway an event" },
        p.name + " ", unwell ? el("strong", {}, status + " ") : null,
        since(now - p.last_inbound_age, null, " ago"));
    }));
  }

  function drawWork(work) {
    $("work-count").textContent = work.length ? "(" + work.length + ")" : "";
    $("work").replaceChildren(...work.map((w) => el("div", { class: "turn", "data-turn-id": w.turn_id },
      el("div", { class: "turn-head" },
        el("strong", {}, where(w)),
        el("span", { class: "id", title: "turn id" }, w.turn_id),
        w.running ? badge(w.kind === "completion" ? "completion turn" : "turn running", "running")
          : badge("turn ended", "suppressed"),
        w.running ? since(w.started_at) : null,
        w.tool ? el("span", { class: "meta" }, "running " + w.tool) : null,
        w.running || w.children.some((c) => c.live)
          ? action("Stop", (w.running ? "the turn in " : "the subagents of the turn in ") + where(w),
            api("turns/" + encodeURIComponent(w.turn_id) + "/stop"), "danger",
            w.running ? "Stop this turn and its subagents: the chat is told, what it queued still runs"
              : "Interrupt this turn's running subagents: each ends with the partial output it has",
            w.running ? "Stop the turn running in " + where(w) + "? Nothing more of it is sent, "
                + "its subagents stop too, and the chat is told."
              : "Interrupt the running subagents of this turn in " + where(w) + "?")
          : null),
      w.children.length ? tree(w.children) : null)));
  }

  function tree(children) {
    return el("ul", { class: "tree" }, ...children.map((c) => el("li", {},
      el("div", { class: "child", "data-child-id": c.id, "data-state": c.state },
        badge(c.state),
        el("span", { class: "goal" }, c.goal),
        el("span", { class: "meta" }, c.started_at ? since(c.started_at, c.completed_at) : "not started"),
        el("span", { class: "meta activity" }, c.live ? c.activity : (c.error || c.activity)),
        el("span", { class: "meta" }, [c.role, c.model].filter(Boolean).join(" · ")),
        c.live ? action("Stop", "the subagent " + quoted(c.goal),
          api("children/" + encodeURIComponent(c.id) + "/stop"), "danger",
          "Interrupt this subagent: it ends with the partial output it has",
          "Interrupt the subagent " + quoted(c.goal) + "? It ends with the partial output it has.") : null),
      c.children && c.children.length ? tree(c.children) : null)));
  }

  function drawDelegations(rows) {
    const running = rows.filter((d) => d.status === "running").length;
    $("delegations-count").textContent = rows.length ? "(" + running + " running, " + rows.length + " shown)" : "";
    $("delegations").replaceChildren(...rows.map((d) => el("tr", { "data-delegation-id": d.id, "data-status": d.status },
      td(d.id, "id"),
      td(chat(d.platform, d.chat_id)),
      el("td", {}, since(d.dispatched_at, null, " ago")),
      td(d.ran + " of " + d.tasks.length),
      el("td", {}, badge(d.status), d.reason ? el("span", { class: "meta" }, " " + d.reason) : null),
      el("td", {}, ...d.tasks.map((t) => el("div", { "data-subagent-id": t.subagent_id },
        badge(t.state), " ", theirs(t.goal), t.attempts > 1 ? " (attempt " + t.attempts + ")" : null,
        t.error ? el("span", { class: "error" }, " — ", theirs(t.error)) : null))))));
  }

  // What a row's buttons act on, in their names: a screen reader's list of the page's buttons read
  // "Stop, Stop, Dismiss, Dismiss…", the same for every chat and message.
  const message = (m) => "the message to " + chat(m.platform, m.chat_id) + " " + quoted(m.text);
  // One that does not read back names no chat: by its id, as `switchboard inbox dead` lists it (its text says why).
  const letter = (d) => d.damaged ? "dead letter " + d.id + " " + d.text
    : "the event from " + chat(d.platform, d.chat_id) + " " + quoted(d.text);

  function drawOutbox(outbox) {
    $("outbox-counts").textContent = outbox.pending === null ? "could not be read" : outbox.pending + " pending · " + outbox.failed + " failed · " + outbox.dead + " dead letters";
    // Each list holds the newest few: say so when there are more, or the rest looks handled.
    for (const [id, shown, total] of [["failed-shown", outbox.failed_messages.length, outbox.failed],
      ["dead-shown", outbox.dead_letters.length, outbox.dead], ["pending-shown", outbox.pending_messages.length, outbox.pending]]) {
      $(id).textContent = shown < total ? "the " + shown + " newest of " + total + " shown" : "";
    }
    $("failed").replaceChildren(...outbox.failed_messages.map((m) => el("tr", { "data-message-id": m.id },
      td(chat(m.platform, m.chat_id)), td(m.kind), el("td", {}, since(m.created_at, null, " ago")), td(m.attempts),
      td(m.error, "error"), td(m.text, "text"),
      el("td", {}, action("Retry", message(m), api("outbox/" + m.id + "/retry"), "", "Send it again"),
        action("Dismiss", message(m), api("outbox/" + m.id + "/dismiss"), "", "Give up on it",
          "Give up on this message to " + chat(m.platform, m.chat_id) + " for good? It is never sent.")))));
    $("dead").replaceChildren(...outbox.dead_letters.map((d) => el("tr", { "data-letter-id": d.id },
      td(d.damaged ? "" : chat(d.platform, d.chat_id)), td(d.event_id, "id"),
      el("td", {}, since(d.dead_at, null, " ago")),
      td(d.attempts), td(d.error, "error"), td(d.text, "text"),
      el("td", {}, action("Retry", letter(d), api("dead-letters/" + d.id + "/retry"), "",
        "Hand it back to the gateway (as switchboard inbox retry does)"),
        action("Dismiss", letter(d), api("dead-letters/" + d.id + "/dismiss"), "", "Forget it",
          "Forget " + (d.damaged ? "dead letter " + d.id : "this event from " + chat(d.platform, d.chat_id))
            + " for good? It is never handled.")))));
    $("pending").replaceChildren(...outbox.pending_messages.map((m) => el("tr", { "data-message-id": m.id },
      td(chat(m.platform, m.chat_id)), td(m.kind + (m.op !== "send" ? " (" + m.op + ")" : "")),
      el("td", {}, since(m.created_at, null, " ago")), td(m.attempts), td(m.error, "error"), td(m.text, "text"),
      el("td", {}, action("Dismiss", message(m), api("outbox/" + m.id + "/dismiss"), "", "Never send it",
        "Never send this message to " + chat(m.platform, m.chat_id) + "?")))));
  }

  function drawSessions(sessions) {
    $("sessions-count").textContent = sessions.length ? "(" + sessions.length + " most recent)" : "";
    $("sessions").replaceChildren(...sessions.map((s) => el("tr", { "data-session-key": s.key, "data-session-id": s.session_id },
      td(s.platform), td(s.chat_id + (s.thread_id ? " / " + s.thread_id : "")), td(s.mode), td(s.generation),
      el("td", {}, since(s.last_active, null, " ago")),
      // A session out of memory is idle too: a turn runs, and messages wait, only in one loaded.
      el("td", {}, s.running ? badge(s.running.kind === "completion" ? "delivering" : "turn running", "running")
        : (s.queued ? badge(s.queued + " queued", "PENDING") : "idle"),
      s.running && s.running.tool ? el("span", { class: "meta" }, " " + s.running.tool) : null))));
  }

  function drawErrors(errors) {
    $("errors").replaceChildren(...errors.map((e) => el("li", { class: e.level },
      el("span", { class: "meta" }, when(e.time) + " " + e.level + " " + e.logger + ": "),
      theirs(e.message), e.exception ? " — " : null, e.exception ? theirs(e.exception) : null,
      e.session_id ? el("span", { class: "meta id" }, " session " + e.session_id) : null)));
  }

  // -- actions ------------------------------------------------------------------------

  // The urls of the actions on their way to the gateway: a state that arrives meanwhile draws their buttons disabled
  // too, or a second click on the one drawn anew would send the action again.
  const sending = new Set();
  // As the web chat's sends: a POST on a connection that died without a word is never answered, and its button
  // stayed disabled for good. The stream reconnecting does not end one: a request has a connection of its own, and
  // given up then, an answer still on its way (done, or why not) was lost for "may or may not have been done".
  const ACTION_TIMEOUT_MS = 20_000;

  // A button that POSTs to `url`; with `question`, only once the operator confirms it (what cannot be undone).
  // Named `label` and `what` it acts on; it shows `label`, which begins its name, so "click Stop" finds it too.
  function action(label, what, url, cls, title, question) {
    const button = el("button", { type: "button", class: cls || null, title: title || null, "data-action": url,
                                  "aria-label": label + " " + what, disabled: sending.has(url) }, label);
    button.addEventListener("click", async () => {
      if (asOf !== null) { // what shows is from before a drop (see `mark`): nothing is sent, and it says so
        notice(label + " was not sent: " + (connected
          ? "what shows is from before the connection dropped; clear the selection to see the current state first"
          : "the page is not connected to the gateway; it reconnects by itself"), url);
        return;
      }
      // Disabled, a button loses the focus to the page: one reached with the keyboard gets it back once it
      // acts again (the operator cancelled, or the gateway did nothing), or Enter does nothing and Tab starts over.
      const keyed = document.activeElement === button;
      const again = () => {
        button.disabled = false;
        const redrawn = drawn(url);  // drawn disabled while the action was on its way
        if (redrawn) redrawn.disabled = false;
        if (keyed && (!document.activeElement || document.activeElement === document.body)) {
          (drawn(url) || button).focus();
        }
      };
      button.disabled = true;
      if (question && !confirm(question)) {
        again();
        return;
      }
      hideNotice(); // about an action before this one
      let response;
      const abort = new AbortController();
      sending.add(url);
      const timer = setTimeout(() => abort.abort(), ACTION_TIMEOUT_MS);
      try {
        response = await fetch(url, { method: "POST", headers: auth.headers({ "Content-Type": "application/json" }),
                                      body: "{}", signal: abort.signal });
      } catch {
        response = null;
      } finally {
        clearTimeout(timer);
        sending.delete(url);
      }
      if (response && auth.asksForToken(response)) {
        await auth.askForToken(true);
        again();
        return;
      }
      if (!response) {
        // The request may have reached the gateway and been done, its answer lost with the connection: not "failed".
        const within = abort.signal.aborted ? " within " + ACTION_TIMEOUT_MS / 1000 + " s" : "";
        notice(label + ": no answer from the gateway" + within + ", so it may or may not have been done; check what "
          + "the page shows before pressing it again.", url);
        again();
      } else if (!response.ok) {
        const reason = (await response.json().catch(() => ({}))).error || "HTTP " + response.status;
        // A 503 is an action done here that the database cannot save yet (a stop stands): it did something.
        notice(label + (response.status === 503 ? ": " : " did nothing: ") + reason, url);
        again();
      }
    });
    return button;
  }

  // Each notice says an action failed, or may not have been done: it stays until closed or until the next action
  // is sent. Gone after 8 s, an operator who looked away never read that a Retry may have been done, and pressed
  // it again.
  //
  // The same words again (a second press failing as the first did) changed nothing in the alert, which a screen
  // reader does not read out then, and which looked the same: the press seemed to have done nothing at all. They
  // are taken away first, and shown again once that has reached the screen reader (Angular CDK's LiveAnnouncer
  // waits 100 ms between the two).
  const AGAIN_MS = 100;
  let noticeFrom = null; // the action it is about
  let showing = null; // the timer that shows the same words again
  function notice(text, url) {
    noticeFrom = url;
    const again = $("notice").textContent === text;
    hideNotice();
    const show = () => {
      $("notice").textContent = text;
      $("notice-bar").hidden = false;
    };
    if (!again) {
      show();
      return;
    }
    $("notice").textContent = "";
    showing = setTimeout(show, AGAIN_MS);
  }

  function hideNotice() {
    clearTimeout(showing);
    $("notice-bar").hidden = true;
  }

  $("notice-close").addEventListener("click", () => {
    const keyed = document.activeElement === $("notice-close");
    hideNotice();
    // Hidden, the button loses the focus to the page: the keyboard goes back to the action the notice was about.
    if (keyed) drawn(noticeFrom)?.focus();
  });

  // -- the live state -----------------------------------------------------------------

  // Gone (the gateway restarting, the network down), the page keeps the last picture, said to be one: it
  // showed on as if live, a turn "running" for minutes more that the restart had ended. `onDrop` runs at the
  // end of each connection, and of each try that failed: only the end of one that brought a state moves the times.
  function stale() {
    const dropped = connected; // a state came over it: the latest state was current until now
    connected = false;
    if (dropped) {
      const now = Date.now() / 1000 - skew;
      if (pictured && asOf === null) asOf = now;
      if (held) heldUntil = now; // the latest, to be drawn as of this drop: not as of an earlier one still shown
      document.querySelectorAll(".since").forEach(tick);
    }
    mark();
  }

  // What the page says of the picture it shows: live, or from before a drop, while not connected or connected
  // again with the current state held for a selection ("Not connected" there too read as the status' contradiction).
  // Its buttons would act on that picture, and on a network gone their request hangs unanswered: they are marked
  // disabled, the line saying why as their description, until a state from a connection open now is drawn.
  // aria-disabled, not disabled: a disabled button loses the focus, and the keyboard its place.
  function mark() {
    const old = asOf !== null;
    $("stale").hidden = !old;
    $("paused").hidden = !held || (old && connected); // connected, the line says it
    if (!old) return; // buttons drawn while live carry no mark
    $("stale").textContent = connected
      ? "Connected again, but what shows is still how things stood at " + when(asOf)
        + ": clear the selection to see the current state (it shows by itself within 30 s)."
      : "Not connected: what shows is how things stood at " + when(asOf) + "; it may have changed since.";
    document.querySelectorAll("button[data-action]").forEach((button) => {
      button.setAttribute("aria-disabled", "true");
      button.setAttribute("aria-describedby", "stale");
    });
  }

  // Drawn anew at each state (several a second while busy), the text an operator selected (a turn id, an error
  // to copy) went with the nodes it was in: nothing could be copied. While there is a selection the page is held:
  // the latest state waits, and is drawn once the selection is cleared, or after HOLD_MS, whichever comes first.
  const HOLD_MS = 30_000;
  let held = null; // the state waiting to be drawn, while text is selected
  let heldUntil = null; // once the connection it came over dropped: the gateway time it was current until
  let holdTimer = null;

  const selecting = () => { const selection = document.getSelection(); return Boolean(selection?.toString()); };

  function show(state) {
    // Not connected, it is a held state, the latest until its connection dropped: the page stays as of that drop.
    asOf = connected ? null : heldUntil;
    held = heldUntil = null;
    clearTimeout(holdTimer);
    holdTimer = null;
    draw(state);
    pictured = true;
    mark();
  }

  function arrived(state) {
    connected = true;
    skew = Date.now() / 1000 - state.now; // as it arrives: a held one is drawn later, its `now` older by then
    if (!selecting()) {
      show(state);
      return;
    }
    held = state;
    heldUntil = null;
    holdTimer ??= setTimeout(() => show(held), HOLD_MS);
    mark();
  }

  document.addEventListener("selectionchange", () => { if (held && !selecting()) show(held); });

  SwitchboardLive.listen(api("events"), auth, {
    ready: "state",
    onEvent: (type, data) => { if (type === "state") arrived(data); },
    onDrop: stale,
  });
})();
