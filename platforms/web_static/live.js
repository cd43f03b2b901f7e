// What the web chat and the operator console share. Plain JavaScript, no build step, no
// third-party code; loaded before each page's own script, it defines `SwitchboardLive`.
//
// - The keys of the page's storage, each its gateway's own (`scoped`): one origin may hold two gateways, and one
//   gateway two addresses.
// - The access token: taken from a "#token=…" link (and out of the address bar at once), kept
//   in this tab's sessionStorage, sent as "Authorization: Bearer …". A 401 that asks for a
//   Bearer token opens the page's sign-in dialog (#login, #login-form, #token, #login-error),
//   saying whether the token refused was the link's or the one typed.
// - The connection state: body[data-state] and the #status line.
// - A Server-Sent Events stream read with fetch (EventSource cannot send a header), opened
//   again after any drop, with backoff, or at once when the browser is back online. Each page's
//   stream starts with a whole snapshot, so a
//   reconnect loses nothing. A stream that goes quiet for longer than the server's keep-alives
//   allow counts as dropped, and so does a 5xx answer (the gateway restarting, or a proxy that
//   cannot reach it).
"use strict";

window.SwitchboardLive = (() => {
  const $ = (id) => document.getElementById(id);
  const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

  // Where the gateway publishes this page (/chat/, /a/chat/): this script is its static/live.js, at every address of
  // the page (/a/chat, /a/chat/, /a/chat/static/index.html).
  // As read, not as spelt: /ch%61t/ is /chat/, whose token and conversation it keeps.
  const base = ((path) => {
    try {
      return decodeURIComponent(path);
    } catch {
      return path; // not UTF-8 once decoded: as spelt
    }
  })(new URL("..", document.currentScript.src).pathname);

  // The gateway's own name, which it puts into its page (platforms/web_pages.py, SCOPE_META): the same at every
  // address it is published at. None in a page that carries none (the console's, a page of an older gateway).
  const named = document.querySelector('meta[name="switchboard-scope"]')?.content || null;

  // The page's own key for `name` in `storage` (sessionStorage or localStorage): its gateway's. A proxy may publish two
  // gateways under two prefixes of one origin (/a/chat, /b/chat), whose pages share its storage: under the same keys,
  // signing in to one signed the other out (its token sent to the other, refused, dropped) and a draft typed in one
  // showed in the other. Scoped by the page's address, one gateway published at two (/chat/ and /support/, or an old
  // address bookmarked) was two conversations, its token, drafts and refused messages split between them: scoped by the
  // gateway's name where the page carries one, by its address (`base`) where it does not.
  // What a page kept before, under its address (from a page without the name) or under `name` alone (before the keys
  // were its own), it takes over once, so an upgrade signs nobody out and loses nothing typed: moved, or copied
  // where `shared` (every gateway of the origin kept its conversation under that one chat id, and each keeps it; the
  // address's copy stays for a page without the name). Moved, it is taken out first: a storage without room for two
  // copies (a refused paste of megabytes) refused the copy, and the page showed none of what it had kept. Only this
  // address's: the keys of another may be another gateway's.
  // The gateway's key there already (made at another of its addresses: a tab that used both before the upgrade), what
  // this address kept joins it where `merge(kept, own)` says how (a refused message, its text's only copy): left
  // under its address, it was never shown again. No room for both: it stays there, for a later load.
  function scoped(storage, name, shared = false, merge = null) {
    const key = name + "@" + (named || base);
    const olds = named ? [name + "@" + base, name] : [name];
    let old = null;
    let before = null;
    try {
      const kept = storage.getItem(key);
      if (kept !== null) {
        const own = merge && named ? storage.getItem(olds[0]) : null;
        if (own !== null) {
          storage.setItem(key, merge(kept, own));
          storage.removeItem(olds[0]);
        }
        return key;
      }
      old = olds.find((o) => storage.getItem(o) !== null) ?? null;
      if (old === null) return key;
      before = storage.getItem(old);
      if (!shared) storage.removeItem(old);
      storage.setItem(key, before);
    } catch {
      // No room for it under its new key (or no storage): this load keeps to the old one, for a later one to move.
      try {
        if (before !== null && storage.getItem(old) === null) storage.setItem(old, before);
      } catch {
        // Nothing more to do: the storage refuses what it just held.
      }
      return before === null ? key : old;
    }
    return key;
  }

  function setState(state, text) {
    document.body.dataset.state = state;
    // Written again, the same words are a new line of the status region, read out again: at each try of a
    // long outage's reconnecting, every 10 s.
    if ($("status").textContent !== text) $("status").textContent = text;
  }

  // The token kept under `name` (scoped): { headers(extra), asksForToken(response), askForToken(rejected) }.
  function access(name) {
    const tokenKey = scoped(sessionStorage, name);
    const fragment = new URLSearchParams(location.hash.slice(1));
    let linked = fragment.get("token"); // until refused: a refusal then blames the link, not what was typed
    const typedRefused = $("login-error").textContent;
    if (fragment.has("token")) {
      sessionStorage.setItem(tokenKey, fragment.get("token"));
      fragment.delete("token");
      // Out of the address bar and the history at once.
      history.replaceState(null, "", location.pathname + location.search + (fragment.toString() ? "#" + fragment : ""));
    }
    let asking = null;
    // Escape: nothing works without it. Chromium lets a page refuse it once or twice in a row only, then closes the
    // dialog all the same (as Android's back does): the page said "sign in" with no dialog left to sign in with.
    $("login").addEventListener("cancel", (event) => event.preventDefault());
    // Closed, not signed in: open again (unless the next ask opened it meanwhile).
    $("login").addEventListener("close", () => asking && !$("login").open && $("login").showModal());
    return {
      headers(extra) {
        const token = sessionStorage.getItem(tokenKey);
        // A header carries Latin-1 only and fetch throws on anything else (a pasted zero-width space,
        // a curly quote): such a token cannot be right, so it is left out and the 401 asks again.
        const sendable = token && !/[^\u0020-\u00ff]/.test(token);
        return Object.assign(sendable ? { Authorization: "Bearer " + token } : {}, extra || {});
      },
      asksForToken(response) {
        return response.status === 401 && (response.headers.get("WWW-Authenticate") || "").startsWith("Bearer");
      },
      askForToken(rejected) {
        if (!asking) {
          const tried = sessionStorage.getItem(tokenKey);
          sessionStorage.removeItem(tokenKey);
          setState("login", "sign in");
          const error = $("login-error");
          error.hidden = !rejected || !(tried || $("token").value);
          // Worded for a link that was wrong all along and for one whose token a restart has since changed.
          const linkRefused = "The token in the link is not accepted; it may have been changed.";
          error.textContent = tried && tried === linked ? linkRefused : typedRefused;
          // The refusal is the field's to say: the dialog opens with the focus there, and a screen reader reads the
          // field, which it heard as at first, nothing telling the token had been refused. Not while hidden: a hidden
          // paragraph the field names is read all the same.
          for (const [name, value] of [["aria-invalid", "true"], ["aria-describedby", error.id]]) {
            if (error.hidden) $("token").removeAttribute(name);
            else $("token").setAttribute(name, value);
          }
          linked = null;
          $("login").showModal();
          asking = new Promise((resolve) => {
            $("login-form").addEventListener("submit", () => {
              sessionStorage.setItem(tokenKey, $("token").value.trim());
              asking = null;
              resolve();
            }, { once: true });
          });
        }
        return asking;
      },
    };
  }

  // Read `url` (or what `url()` returns, asked at each connection) as Server-Sent Events for as long as
  // the page is open, calling `onEvent(type, data)` for each. The first event of type `ready` on a
  // connection shows it connected; `onDrop()` runs each time a connection ends, before the next one is tried.
  // `onEvent` returning false asks for the stream again at once (`url()` then says how): no drop, nothing said.
  async function listen(url, auth, { ready, onEvent, onDrop }) {
    let delay = 500;
    let silence = 0; // ms without a byte that count as a drop; 0 until a server has said its keep-alive interval
    // The browser tells when the network goes and comes back. Gone, the stream is dropped at once (on a phone it
    // died with the network, unnoticed until the keep-alives' silence); back, the next connection is tried at
    // once, not at the end of its backoff (10 s after a long outage). "Offline" may be wrong (a gateway on this
    // very machine still answers): connections are tried all the same, and one that opens says "connected".
    let current = null; // the AbortController of the connection open or being opened
    let wake = () => {}; // ends the wait before the next connection
    addEventListener("offline", () => {
      current.abort();
      wake(); // tried again at once, to say "offline" where it said "reconnecting…"
    });
    addEventListener("online", () => wake());
    for (;;) {
      let received = false;
      let again = false; // onEvent asked for the stream again
      // A connection that died without a word (a proxy that hangs, a NAT mapping forgotten) reports no error,
      // ever: only the keep-alives it no longer brings tell. A request may be sent on such a connection too.
      const abort = new AbortController();
      current = abort;
      let quiet = null;
      const heard = () => {
        clearTimeout(quiet);
        if (silence) quiet = setTimeout(() => abort.abort(), silence);
      };
      try {
        heard();
        const response = await fetch(typeof url === "function" ? url() : url, {
          headers: auth.headers({ Accept: "text/event-stream" }), cache: "no-store", signal: abort.signal });
        clearTimeout(quiet);
        if (auth.asksForToken(response)) {
          await auth.askForToken(true);
          continue;
        }
        if (response.status >= 500) {
          // Away, not refusing: the gateway stopping or starting (503), or the proxy in front of it finding it
          // gone (502, 504). A drop, tried again on the backoff: a restart must not cost a page 10 s more.
          if (response.body) response.body.cancel().catch(() => {});
          throw new Error("HTTP " + response.status);
        }
        if (!response.ok || !response.body) {
          // Refused for another reason (not an allowed user, another host): say why, keep trying slowly.
          const reason = (await response.json().catch(() => ({}))).error || "HTTP " + response.status;
          setState("refused", "not connected: " + reason);
          await sleep(10000);
          continue;
        }
        // 2.5 intervals: a keep-alive comes after one quiet interval; one late or lost is no drop yet.
        silence = 2500 * Number(response.headers.get("Switchboard-Keep-Alive")) || 0;
        heard();
        const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
        let buffer = "";
        while (!again) {
          const { value, done } = await reader.read();
          if (done) break;
          heard();
          buffer += value;
          let end;
          while ((end = buffer.indexOf("\n\n")) >= 0) {
            const event = parse(buffer.slice(0, end));
            buffer = buffer.slice(end + 2);
            if (!event) continue;
            if (onEvent(event.type, event.data) === false) {
              again = true;
              abort.abort();
              break;
            }
            if (event.type === ready && !received) {
              received = true;
              delay = 500;
              setState("connected", "connected");
            }
          }
        }
      } catch {
        // fall through: reconnect below
      } finally {
        clearTimeout(quiet);
      }
      if (again) continue;
      if (onDrop) onDrop();
      if (navigator.onLine) setState("reconnecting", "reconnecting…");
      else setState("offline", "offline: reconnecting once the network is back…");
      await new Promise((resolve) => {
        wake = resolve;
        setTimeout(resolve, received ? 200 : delay);
      });
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

  return { access, listen, scoped, setState };
})();
