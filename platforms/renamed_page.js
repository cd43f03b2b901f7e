/*
 * Put inline into the web chat's and the console's pages, right after their stylesheet's link, by
 * platforms/web_pages.py (`page_routes`), which allows it by its hash in the page's Content-Security-Policy.
 *
 * A proxy may publish a page under another name without a trailing slash (/talk for the gateway's /chat):
 * there the links to its files resolve against the proxy's root (/chat/static/…), where nothing answers, or
 * another gateway's page does. The gateway, asked for /chat, cannot tell; the page can, and goes on to /talk/,
 * where they resolve under /talk/. It reads the stylesheet's link as platforms/web_pages.py wrote it: chat/static/
 * at /chat, static/ at /chat/. Inline: no file of its own could be found from here. The name as read, not as spelt: /ch%61t
 * is the gateway's /chat. Once: a proxy that takes the slash off again (/talk/ to /talk) sends the page back,
 * where it stays, rather than round and round.
 */
(() => {
  const href = document.currentScript.previousElementSibling.getAttribute("href");
  const folder = href.slice(0, href.lastIndexOf("/") + 1);
  const path = location.pathname;
  let name = path.slice(path.lastIndexOf("/") + 1);
  let back = null; // the address this tab last went on from
  try {
    back = sessionStorage.getItem("switchboard.slashed");
    sessionStorage.removeItem("switchboard.slashed");
    name = decodeURIComponent(name);
  } catch {
    // No storage (unguarded), or a name not UTF-8 decoded (as spelt).
  }
  if (name && folder && folder !== name + "/static/" && back !== path) {
    try {
      sessionStorage.setItem("switchboard.slashed", path);
    } catch {
      // No room: unguarded.
    }
    stop(); // this page no further: its scripts, fetched from elsewhere, could run meanwhile
    location.replace(path + "/" + location.search + location.hash);
  }
})();
