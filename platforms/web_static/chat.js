// The Switchboard web chat page. Plain JavaScript, no build step, no third-party code.
//
// Messages are sent with POST /chat/api/messages, each with its own idempotency key: a
// send that fails (network, 5xx) is retried with the same key until the gateway has it,
// also after a reload (unconfirmed sends wait in sessionStorage). What the chat shows
// comes from GET /chat/api/events (Server-Sent Events, read with fetch so the token can
// travel in a header): a "history" event with the conversation from the gateway's
// durable store, then live events. Every (re)connect starts with a fresh history, so a
// dropped connection loses nothing; messages are merged by id, so nothing shows twice.
"use strict";

(() => {
  const $ = (id) => document.getElementById(id);
  const list = $("messages");
  const input = $("input");
  const working = $("working");
  const status = $("status");
  const shown = new Map(); // message id -> element
  const TOKEN_KEY = "switchboard.token";
  const TYPING_LAPSE_MS = 8000; // the gateway repeats "typing" every few seconds while a turn runs

  // -- identity: the token and the chat ----------------------------------------------

  const fragment = new URLSearchParams(location.hash.slice(1));
  if (fragment.has("token")) {
    sessionStorage.setItem(TOKEN_KEY, fragment.get("token"));
    fragment.delete("token");
    // Out of the address bar and the history at once.
    history.replaceState(null, "", location.pathname + location.search + (fragment.toString() ? "#" + fragment : ""));
  }
  const chat = (() => {
    const named = new URLSearchParams(location.search).get("chat");
    if (named && /^[A-Za-z0-9_-]{1,64}$/.test(named)) return named;
    let id = localStorage.getItem("switchboard.chat");
    if (!id) {
      id = randomId();
      localStorage.setItem("switchboard.chat", id);
    }
    return id;
  })();
  const PENDING_KEY = "switchboard.pending." + chat;

  function randomId() {
    // crypto.randomUUID needs a secure context; getRandomValues works on plain http too.
    const bytes = crypto.getRandomValues(new Uint8Array(16));
    return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
  }

  function headers(extra) {
    const token = sessionStorage.getItem(TOKEN_KEY);
    return Object.assign(token ? { Authorization: "Bearer " + token } : {}, extra || {});
  }

  // -- rendering ----------------------------------------------------------------------

  // A small, safe subset of Markdown: fenced code, inline code, bold, links. Built as DOM
  // nodes from text, never as HTML, so nothing the model writes can run here.
  function render(text, into) {
    into.replaceChildren();
    const parts = text.split(/```[^\n]*\n?/);
    parts.forEach((part, i) => {
      if (i % 2 === 1) {
        const pre = document.createElement("pre");
        const code = document.createElement("code");
        code.textContent = part.replace(/\n$/, "");
        pre.append(code);
        into.append(pre);
      } else if (part) {
        inline(part, into);
      }
    });
  }

  function inline(text, into) {
    const token = /(`[^`\n]+`)|(\*\*[^*\n]+\*\*)|(https?:\/\/[^\s<>()"]+[^\s<>()".,;:!?])/g;
    let last = 0;
    for (const m of text.matchAll(token)) {
      if (m.index > last) into.append(text.slice(last, m.index));
      let node;
      if (m[1]) {
        node = document.createElement("code");
        node.textContent = m[1].slice(1, -1);
      } else if (m[2]) {
        node = document.createElement("strong");
        node.textContent = m[2].slice(2, -2);
      } else {
        node = document.createElement("a");
        node.href = m[3];
        node.textContent = m[3];
        node.rel = "noopener noreferrer";
        node.target = "_blank";
      }
      into.append(node);
      last = m.index + m[0].length;
    }
    if (last < text.length) into.append(text.slice(last));
  }

  function upsert(message) {
    let el = shown.get(message.id);
    const nearBottom = list.scrollHeight - list.scrollTop - list.clientHeight < 80;
    if (!el) {
      el = document.createElement("article");
      el.dataset.id = message.id;
      el.append(document.createElement("div"));
      el.firstChild.className = "text";
      shown.set(message.id, el);
      list.append(el);
    }
    el.className = "msg " + message.role + " kind-" + message.kind;
    el.dataset.kind = message.kind;
    el.dataset.role = message.role;
    el.classList.toggle("pending", Boolean(message.pending));
    el.classList.toggle("failed", Boolean(message.failed));
    el.classList.toggle("edited", Boolean(message.edited));
    if (message.failed) el.title = message.failed;
    else el.removeAttribute("title");
    if (el.dataset.text !== message.text) {
      el.dataset.text = message.text;
      render(message.text, el.firstChild);
    }
    if (nearBottom || message.role === "user") list.scrollTop = list.scrollHeight;
  }

  function edit(id, text) {
    const el = shown.get(id);
    if (!el) return; // older than the history the page holds: nothing to show
    el.classList.add("edited");
    el.dataset.text = text;
    render(text, el.firstChild);
  }

  function remove(id) {
    const el = shown.get(id);
    if (el) el.remove();
    shown.delete(id);
  }

  function showHistory(messages) {
    list.replaceChildren();
    shown.clear();
    for (const message of messages) upsert(confirmedUnlessPending(message));
    for (const send of pending()) upsert(ownMessage(send)); // not confirmed yet: still shown, still retried
  }

  let typingTimer = null;
  function setWorking(on) {
    working.hidden = !on;
    clearTimeout(typingTimer);
    if (on) typingTimer = setTimeout(() => setWorking(false), TYPING_LAPSE_MS);
  }

  function setState(state, text) {
    document.body.dataset.state = state;
    status.textContent = text;
  }

  // -- sending ------------------------------------------------------------------------

  function pending() {
    try {
      return JSON.parse(sessionStorage.getItem(PENDING_KEY) || "[]");
    } catch {
      return [];
    }
  }

  function savePending(sends) {
    sessionStorage.setItem(PENDING_KEY, JSON.stringify(sends));
  }

  function ownMessage(send, extra) {
    return Object.assign({ id: "user:" + send.key, role: "user", kind: "user", text: send.text, pending: true }, extra);
  }

  function send(text) {
    const item = { key: randomId(), text };
    savePending([...pending(), item]);
    upsert(ownMessage(item));
    deliver(item, 0);
  }

  async function deliver(item, attempt) {
    let response;
    try {
      response = await fetch("/chat/api/messages", {
        method: "POST",
        headers: headers({ "Content-Type": "application/json" }),
        body: JSON.stringify({ chat, text: item.text, key: item.key }),
      });
    } catch {
      response = null; // offline or the gateway is restarting: the same key again, later
    }
    if (response && asksForToken(response)) {
      askForToken(true).then(() => deliver(item, 0));
      return;
    }
    if (!response || response.status >= 500 || response.status === 401) {
      setTimeout(() => deliver(item, attempt + 1), Math.min(500 * 2 ** attempt, 10000));
      return;
    }
    savePending(pending().filter((p) => p.key !== item.key));
    if (response.ok) {
      const el = shown.get("user:" + item.key);
      if (el) el.classList.remove("pending");
    } else {
      const reason = (await response.json().catch(() => ({}))).error || "HTTP " + response.status;
      upsert(ownMessage(item, { pending: false, failed: "Not sent: " + reason }));
    }
  }

  $("composer").addEventListener("submit", (event) => {
    event.preventDefault();
    const text = input.value;
    if (!text.trim()) return;
    input.value = "";
    send(text);
  });
  input.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      $("composer").requestSubmit();
    }
  });
  for (const button of document.querySelectorAll("button.command")) {
    button.addEventListener("click", () => send(button.dataset.command));
  }
  $("stop").addEventListener("click", () => send("/stop"));

  // -- the token ----------------------------------------------------------------------

  function asksForToken(response) {
    return response.status === 401 && (response.headers.get("WWW-Authenticate") || "").startsWith("Bearer");
  }

  let asking = null;
  $("login").addEventListener("cancel", (event) => event.preventDefault()); // Escape: nothing works without it
  function askForToken(rejected) {
    if (!asking) {
      sessionStorage.removeItem(TOKEN_KEY);
      setState("login", "sign in");
      $("login-error").hidden = !rejected || !$("token").value;
      $("login").showModal();
      asking = new Promise((resolve) => {
        $("login-form").addEventListener("submit", () => {
          sessionStorage.setItem(TOKEN_KEY, $("token").value.trim());
          asking = null;
          resolve();
        }, { once: true });
      });
    }
    return asking;
  }

  // -- receiving ----------------------------------------------------------------------

  // What this page sent stays marked pending until its own POST is answered, whatever the stream says.
  const confirmedUnlessPending = (message) =>
    Object.assign(message, { pending: pending().some((p) => "user:" + p.key === message.id) });

  const handlers = {
    history: (data) => showHistory(data.messages),
    user: (data) => upsert(confirmedUnlessPending(data)),
    message: (data) => upsert(data),
    edit: (data) => edit(data.id, data.text),
    delete: (data) => remove(data.id),
    typing: () => setWorking(true),
    idle: () => setWorking(false),
  };

  async function listen() {
    let delay = 500;
    for (;;) {
      let received = false;
      try {
        const response = await fetch("/chat/api/events?chat=" + encodeURIComponent(chat), {
          headers: headers({ Accept: "text/event-stream" }),
          cache: "no-store",
        });
        if (asksForToken(response)) {
          await askForToken(true);
          continue;
        }
        if (!response.ok || !response.body) {
          // Refused for another reason (not an allowed user, another host): say why, keep trying slowly.
          const reason = (await response.json().catch(() => ({}))).error || "HTTP " + response.status;
          setState("refused", "not connected: " + reason);
          await new Promise((resolve) => setTimeout(resolve, 10000));
          continue;
        }
        const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
        let buffer = "";
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          buffer += value;
          let end;
          while ((end = buffer.indexOf("\n\n")) >= 0) {
            const block = buffer.slice(0, end);
            buffer = buffer.slice(end + 2);
            const event = parse(block);
            if (!event || !handlers[event.type]) continue;
            handlers[event.type](event.data);
            if (event.type === "history") {
              received = true;
              delay = 500;
              setState("connected", "connected");
            }
          }
        }
      } catch {
        // fall through: reconnect below
      }
      setWorking(false);
      setState("reconnecting", "reconnecting…");
      await new Promise((resolve) => setTimeout(resolve, received ? 200 : delay));
      delay = Math.min(delay * 2, 10000);
    }
  }

  function parse(block) {
    let type = "message";
    const data = [];
    for (const line of block.split("\n")) {
      if (line.startsWith(":")) continue; // keep-alive
      const colon = line.indexOf(":");
      const field = colon < 0 ? line : line.slice(0, colon);
      const value = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
      if (field === "event") type = value;
      else if (field === "data") data.push(value);
    }
    return data.length ? { type, data: JSON.parse(data.join("\n")) } : null;
  }

  for (const item of pending()) deliver(item, 0); // sends a reload interrupted
  listen();
  input.focus();
})();
