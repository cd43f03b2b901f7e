// The Markdown the web chat page shows: a small, safe subset, built as DOM nodes from text, never
// as HTML, so nothing the model writes can run here. Plain JavaScript, no build step, no third-party
// code; loaded before chat.js, it defines `SwitchboardMarkdown.render(text, into)`.
"use strict";

window.SwitchboardMarkdown = (() => {
  // Fenced code, inline code, bold, links (reference links too): ``text`` into the element ``into``.
  function render(text, into) {
    into.replaceChildren();
    const { parts, refs } = blocks(text);
    parts.forEach((part, i) => {
      if (part.code !== undefined) block(part.code, into);
      else inline(i + 1 < parts.length ? part.prose + "\n" : part.prose.replace(/\n+$/, ""), into, INLINE, refs);
    });
  }

  // The text as prose and code blocks, and its link reference definitions (label -> address).
  // As in Markdown, a fence (``` or ~~~, or longer) opens a block only at the start of a line, up to three
  // spaces in, or as far into a list item as its text starts (a numbered step's code block, a nested
  // item's): ``` within a sentence is text. Only a line of as many of the same character or more, alone,
  // closes it (a ```` block shows the ``` lines of the Markdown it quotes); a line less indented than its
  // list item ends it with the item, and the end of the text does too. Its code lines lose the fence's
  // indentation, as the other platforms show them. A definition is a line of its own (`[label]: address`,
  // not within a paragraph nor a code block); it shows as nothing, unless its address is not a web or
  // mail one: then no link uses it and it shows as typed.
  function blocks(text) {
    const lines = text.split("\n");
    const parts = [];
    const refs = new Map();
    let prose = [];
    const items = []; // the columns where the text of the list items open here starts
    let paragraph = false; // the line before continues a paragraph: a less indented line may too
    let i = 0;
    while (i < lines.length) {
      const line = lines[i];
      const indent = line.length - line.trimStart().length;
      if (!line.trim()) {
        prose.push(line);
        paragraph = false;
        i++;
        continue;
      }
      const fence = line.match(FENCE);
      const item = line.match(ITEM);
      while (items.length && indent < items[items.length - 1] && !(paragraph && !fence && !item)) items.pop();
      const column = items.length ? items[items.length - 1] : 0;
      const definition = !paragraph && indent <= 3 && line.match(DEFINITION);
      if (fence && indent - column <= 3 && !(fence[2][0] === "`" && fence[3].includes("`"))) {
        const code = [];
        let j = i + 1;
        for (; j < lines.length; j++) {
          const inner = lines[j];
          const inset = inner.length - inner.trimStart().length;
          if (inner.trim() && inset < column) break; // the list item ended, and the block with it
          const close = inner.match(FENCE);
          if (close && inset - column <= 3 && close[2][0] === fence[2][0] && close[2].length >= fence[2].length &&
              !close[3].trim()) {
            j++;
            break;
          }
          code.push(inner.slice(Math.min(indent, inset)));
        }
        parts.push({ prose: prose.join("\n") }, { code: code.join("\n") });
        prose = [];
        paragraph = false;
        i = j;
        continue;
      }
      const target = definition && (definition.groups.angled ?? definition.groups.bare);
      if (definition && SAFE_HREF.test(target)) {
        const label = normalized(definition.groups.label);
        if (label && !refs.has(label)) refs.set(label, target); // the first of a label wins
        i++;
        continue;
      }
      if (item && indent - column <= 3) {
        const [, lead, marker, gap] = item;
        items.push(lead.length + marker.length + (gap.length && gap.length <= 4 ? gap.length : 1));
      }
      prose.push(line);
      paragraph = true;
      i++;
    }
    parts.push({ prose: prose.join("\n") });
    return { parts: parts.filter((p) => p.code !== undefined || p.prose), refs };
  }

  const FENCE = /^( *)(`{3,}|~{3,})(.*)$/;
  const ITEM = /^( *)([-+*]|\d{1,9}[.)])( +|$)/;
  const SAFE_HREF = /^(?:https?:\/\/|mailto:)/;
  const DEFINITION = /^ {0,3}\[(?<label>(?:[^\[\]\\]|\\.){1,999})\]:[ \t]*(?:<(?<angled>[^<>\n]*)>|(?<bare>\S+))(?:[ \t]+(?:"[^"]*"|'[^']*'|\([^()]*\)))?[ \t]*$/;
  // A label matches its definition's whatever its case and spacing, as in Markdown.
  const normalized = (label) => label.trim().replace(/\s+/g, " ").toLowerCase().toUpperCase();

  function block(text, into) {
    const pre = document.createElement("pre");
    const code = document.createElement("code");
    code.textContent = text;
    pre.append(code);
    into.append(pre);
  }

  // A link's text may hold brackets in pairs and code spans; a lone backtick in it opens a code
  // span instead, as in CommonMark. Its URL's brackets belong to it when it opened them, and only a
  // web or mail address is linked: a javascript: link stays text as written.
  const LINK_TEXT = "(?:[^\\[\\]`\\n]|`[^`\\n]+`)";
  const LABEL = "(?:" + LINK_TEXT + "|\\[" + LINK_TEXT + "*\\])+";
  const LINK = "\\[(?<label>" + LABEL + ")\\]" +
    "\\((?<href>(?:https?:\\/\\/|mailto:)(?:[^\\s()<>]|\\([^\\s()<>]*\\))+)\\)";
  // [text][label], [label][] and [label]: a link only when the text defines the label.
  const REFERENCE = "\\[(?<text>" + LABEL + ")\\](?:\\[(?<ref>(?:[^\\[\\]\\\\\\n]|\\\\.){0,999})\\])?";
  // A URL ends as the gateway reads a bare one (platforms/formatting/bare_urls.py): brackets it
  // opened are part of it (Wikipedia's "Python_(language)"), trailing punctuation is not.
  const BARE_URL = /https?:\/\/(?:[^\s<>()"]|\([^\s<>()"]*\))*(?:[^\s<>()".,;:!?*_~'\u2026]|\([^\s<>()"]*\))/.source;
  const CODE = "(?<code>`[^`\\n]+`)";
  const BOLD = "(?<bold>\\*\\*[^*\\n]+\\*\\*)";
  const INLINE = new RegExp([CODE, LINK, BOLD, "(?<bare>" + BARE_URL + ")"].join("|"), "g");
  const INLINE_WITH_REFERENCES = new RegExp([CODE, LINK, REFERENCE, BOLD, "(?<bare>" + BARE_URL + ")"].join("|"), "g");
  const INLINE_IN_LINK = new RegExp(CODE + "|" + BOLD, "g"); // a link within a link cannot be followed

  function inline(text, into, token = INLINE, refs = new Map()) {
    if (token === INLINE && refs.size) token = INLINE_WITH_REFERENCES;
    let last = 0;
    for (const m of text.matchAll(token)) {
      if (m.index > last) into.append(text.slice(last, m.index));
      last = m.index + m[0].length;
      const { code, label, href, bold, bare } = m.groups;
      const reference = m.groups.text;
      let node;
      if (code) {
        node = document.createElement("code");
        node.textContent = code.slice(1, -1);
      } else if (bold) {
        node = document.createElement("strong");
        inline(bold.slice(2, -2), node, token, refs);
      } else if (reference !== undefined && !refs.has(normalized(m.groups.ref || reference))) {
        // Not a defined label: its brackets show as typed, what they hold is read as any text.
        into.append("[");
        inline(reference, into, token, refs);
        into.append("]");
        if (m.groups.ref !== undefined) inline("[" + m.groups.ref + "]", into, token, refs);
        continue;
      } else {
        node = document.createElement("a");
        node.href = reference !== undefined ? refs.get(normalized(m.groups.ref || reference)) : href || bare;
        if (label || reference) inline(label || reference, node, INLINE_IN_LINK);
        else node.textContent = bare;
        node.rel = "noopener noreferrer";
        node.target = "_blank";
      }
      into.append(node);
    }
    if (last < text.length) into.append(text.slice(last));
  }

  return { render };
})();
