// The Markdown the web chat page shows: a small, safe subset, built as DOM nodes from text, never
// as HTML, so nothing the model writes can run here. Plain JavaScript, no build step, no third-party
// code; loaded before chat.js, it defines `SwitchboardMarkdown.render(text, into)`,
// `SwitchboardMarkdown.renderer(text)` and `SwitchboardMarkdown.DIRECTION` (the direction controls, to drop).
"use strict";

window.SwitchboardMarkdown = (() => {
  // Code blocks, lists, quotes, headings, rules, tables, inline code, bold, italics, strikethrough, links
  // (reference links and addresses between <> too), backslash escapes, entity references: `text` into `into`.
  function render(text, into) {
    const piece = renderer(text);
    let built;
    while (!(built = piece()));
    into.replaceChildren(built);
  }

  // `render`, a piece at a time, for a page to render while it has nothing else to do and answer a key between two
  // pieces: at one go, an answer of 50 KB held the page for 80 ms. Each call of the function returned reads a line
  // of `text` or builds one of its blocks (a paragraph, a heading, a code block, a list item's block, a table's row),
  // and returns null, then at the last the whole text's nodes (a DocumentFragment), nothing shown before. A line
  // read later may define the label of a link above it: nothing is built until every line is read.
  function renderer(text) {
    const own = named([...text.matchAll(NAME)].map((m) => m[1]));
    const pieces = (function* () {
      const { root, refs } = yield* parse(text);
      const built = document.createDocumentFragment();
      yield* blocks(root.children, built, refs);
      isolate(built);
      return built;
    })();
    return () => {
      characters = own; // the entity references of this text, whatever another text rendered in between
      const { done, value } = pieces.next();
      return done ? value : null;
    };
  }

  function* blocks(children, into, refs) {
    for (const [i, node] of children.entries()) {
      if (node.code) {
        const code = node.code.join("\n");
        block(node.indented ? code.replace(/(?:\n[ \t]*)+$/, "") : code, into); // blank lines end it, not its code
      } else if (node.items) into.append(yield* list(node, refs));
      else if (node.quote) {
        const quote = document.createElement("blockquote");
        yield* blocks(node.children, quote, refs);
        into.append(quote);
      } else if (node.heading) {
        const heading = document.createElement("h" + node.heading);
        inline(node.text, heading, INLINE, refs);
        into.append(heading);
      } else if (node.rule) into.append(document.createElement("hr"));
      else if (node.rows) into.append(yield* table(node, refs));
      else {
        // Each paragraph (a run of lines without a blank one) loses what markdown-it trims off its ends.
        const prose = node.prose.join("\n").replace(/[^\n]+(?:\n[^\n]+)*/g, (run) => trim(run));
        // A line break ends the text before a block; the text's own blank lines show, as typed.
        if (prose) inline(i + 1 < children.length ? prose + "\n" : prose.replace(/\n+$/, ""), into, INLINE, refs);
      }
      yield;
    }
  }

  function* list(node, refs) {
    const el = document.createElement(node.ordered ? "ol" : "ul");
    if (node.ordered && node.start !== 1) el.start = node.start;
    if (node.loose) el.className = "loose";
    for (const item of node.items) {
      const li = document.createElement("li");
      yield* blocks(item.children, li, refs);
      el.append(li);
    }
    return el;
  }

  // A row's cells beyond the header's show, as on the other platforms (GFM drops them), under empty header cells:
  // a short row's missing cells up to the header's are empty, as in markdown-it, but none is added past them (a row
  // of a thousand pipes over a thousand rows would be a million cells).
  function* table(node, refs) {
    const el = document.createElement("table");
    const widest = node.rows.reduce((most, cells) => Math.max(most, cells.length), 0);
    for (const [r, cells] of node.rows.entries()) {
      const row = (r ? el.tBodies[0] || el.createTBody() : el.createTHead()).insertRow();
      const count = r ? Math.max(node.aligns.length, cells.length) : widest;
      for (let k = 0; k < count; k++) {
        const cell = document.createElement(r ? "td" : "th");
        if (node.aligns[k]) cell.className = node.aligns[k];
        inline(cells[k] ?? "", cell, INLINE, refs, true);
        row.append(cell);
      }
      yield;
    }
    return el;
  }

  // The text as a tree of blocks, and its link reference definitions (label -> address), read line by
  // line as CommonMark reads them, for what a model writes: text (its lines, without their indentation,
  // and blank lines kept as typed), code blocks, headings, rules, tables, and lists and quotes, whose
  // items and quotes hold blocks of their own (text, code, lists, quotes...).
  //
  // - A list item is `-`, `*` or `+`, or a number of up to nine digits and `.` or `)`, then a space or
  //   a tab, up to three spaces in; the lines indented as far as its text belong to it, and so does a
  //   line that carries on its text's last line (a wrapped sentence, however indented). Items with the
  //   same marker (bullet character, or number delimiter) make one list, numbered from the first
  //   item's number; a blank line between items, or between two blocks of an item, spaces the list
  //   out. Within a paragraph, only a bullet or `1.` with text after it starts a list (`2024. was
  //   ...` within a sentence is text); after a heading, a rule (`- - -`, `***`) or a line underlining
  //   a title (`===`), any item does. A rule, a heading or a quote (`>`) ends a list even on a line
  //   that would carry on its text. An item that holds nothing ends at a blank line.
  // - A quote is `>` up to three spaces in, its lines each starting with one (`>>` for a quote within);
  //   a line without it still carries on the quote's last sentence; a blank line ends it.
  // - A heading is `#` to `######` then a space (its closing #s dropped), or a paragraph underlined
  //   with `===` (level 1) or `---` (2); a rule is a line of three or more `-`, `*` or `_`.
  // - A table is a line holding a `|` above a line of one `---` (`:--`, `:-:`, `--:` to align it) for
  //   each of its cells; each line after it is a row, up to a blank line or another block.
  // - A fence (``` or ~~~, or longer) opens a code block at the start of a line, up to three spaces
  //   into the list item it is in: ``` within a sentence is text. Only a line of as many of the same
  //   character or more, alone, closes it (a ```` block shows the ``` lines of the Markdown it
  //   quotes); the end of its list item, or of the text, does too. Its lines lose the fence's
  //   indentation, as the other platforms show them.
  // - Lines four spaces in (beyond their list item's text) that do not carry on a paragraph are a
  //   code block too, without those four spaces.
  // - Indentation is counted in columns, a tab running to the next multiple of four, as CommonMark
  //   counts it: `-\tfoo` is an item, its text four columns in, and `> \t```` opens a fence two
  //   columns into its quote, the tab starting two columns in.
  // - A definition is a line of its own (`[label]: address`, not within a paragraph nor a code
  //   block); it shows as nothing, unless its address is not a web or mail one: then no link uses it
  //   and it shows as typed.
  function* parse(text) {
    const refs = new Map();
    const root = { children: [], col: 0, blanks: 0, paragraph: false };
    const open = [root]; // the text, then each list item or quote open within the one before
    for (let line of text.split(/\r\n?|\n/)) { // a CR, a LF or both end a line, as in CommonMark
      yield; // a piece of `renderer`'s
      let at = 0; // the column `line` starts at, in the line as typed: a tab's width depends on it
      let matched = 1; // how many of the open containers the line continues
      for (; matched < open.length; matched++) {
        if (open[matched].quote) {
          const quoted = spaced(line, at);
          const mark = quoted.match(QUOTE); // a quote's line carries its `>`; a blank one ends it
          if (!mark) break;
          [line, at] = afterQuote(quoted, at, mark[0].length);
        } else if (blank(line)) {
          if (!open[matched].children.length) break; // but ends one that holds nothing yet, as in Markdown
          line = ""; // a blank line continues every item
        } else if (indentOf(line, at) >= open[matched].col) {
          line = dedent(line, at, open[matched].col);
          at += open[matched].col;
        } else break;
      }
      const all = matched === open.length;
      const tip = open[open.length - 1];
      const leaf = tip.children[tip.children.length - 1];
      if (all && leaf && leaf.fence) {
        const close = spaced(line, at).match(FENCE);
        if (close && indentOf(line, at) <= 3 && close[2][0] === leaf.fence[0] &&
            close[2].length >= leaf.fence.length && blank(close[3])) {
          leaf.fence = ""; // closed: a code block, no longer a fence
        } else leaf.code.push(dedent(line, at, Math.min(leaf.indent, indentOf(line, at))));
        continue;
      }
      if (all && leaf && leaf.indented && (blank(line) || indentOf(line, at) >= 4)) {
        leaf.code.push(dedent(line, at, 4));
        continue;
      }
      while (leaf && leaf.indented && leaf.code.length && blank(leaf.code[leaf.code.length - 1])) {
        leaf.code.pop(); // the blank lines after an indented block are not its code: they show after it
        tip.blanks++;
      }
      let container = open[matched - 1];
      let paragraph = all && tip.paragraph; // what follows the text's last line may carry it on
      let lazy = !all && tip.paragraph; // a less indented line may carry on a list item's text
      let started = false;
      while (!blank(line)) {
        line = spaced(line, at);
        const indent = indentOf(line, at);
        const fence = indent <= 3 && line.match(FENCE);
        const rule = indent <= 3 && RULE.test(line);
        const item = !rule && indent <= 3 && open.length <= MAX_DEPTH && line.match(ITEM);
        const quote = open.length <= MAX_DEPTH && line.match(QUOTE);
        if (quote) {
          closeTo(open, matched);
          const next = { children: [], quote: true, blanks: 0, paragraph: false };
          add(container, next);
          open.push(next);
          matched = open.length;
          container = next;
          paragraph = lazy = false;
          [line, at] = afterQuote(line, at, quote[0].length);
          started = true;
          continue; // its text may open a block of its own (a list, a quote within it)
        } else if (lazy && (rule || HEADING.test(line))) {
          lazy = false; // it ends the list, as in Markdown, and shows as typed after it
          break;
        } else if (indent >= 4) {
          if (paragraph || lazy) break;
          closeTo(open, matched);
          add(container, { code: [dedent(line, at, 4)], indented: true });
        } else if (fence && !(fence[2][0] === "`" && fence[3].includes("`"))) {
          closeTo(open, matched);
          add(container, { code: [], fence: fence[2], indent });
        } else if (item && !(paragraph && (blank(line.slice(item[0].length)) ||
                                           (item[2].length > 1 && Number(item[2].slice(0, -1)) !== 1)))) {
          closeTo(open, matched);
          const [, lead, marker] = item;
          const rest = line.slice(lead.length + marker.length);
          const after = at + lead.length + marker.length; // the column after the marker
          const gap = indentOf(rest, after);
          const width = gap && gap <= 4 ? gap : 1; // more: its text is a code block
          const ordered = marker.length > 1;
          const kind = ordered ? marker.slice(-1) : marker;
          let owner = container.children[container.children.length - 1];
          if (owner && owner.items && owner.kind === kind) {
            if (container.blanks) owner.loose = true; // a blank line between two of its items
            container.blanks = 0;
          } else {
            owner = { items: [], ordered, kind, start: ordered ? Number(marker.slice(0, -1)) : 1, loose: false };
            add(container, owner);
          }
          const col = lead.length + marker.length + width;
          const next = { children: [], col, blanks: 0, paragraph: false, list: owner };
          owner.items.push(next);
          open.push(next);
          matched = open.length;
          container = next;
          paragraph = lazy = false;
          line = dedent(rest, after, width);
          at = after + width;
          started = true;
          continue; // its text may open a block of its own (a fence, a nested list)
        } else {
          const definition = !paragraph && !lazy && !container.rows && line.match(DEFINITION);
          const target = definition && (definition.groups.angled ?? definition.groups.bare);
          const label = definition && normalized(definition.groups.label); // "" when only spaces: text
          const address = definition && unescaped(target);
          if (!label || !SAFE_HREF.test(address)) break;
          closeTo(open, matched);
          // The first definition of a label wins.
          if (!refs.has(label)) refs.set(label, { href: encoded(address), title: definition.groups.title });
          container.paragraph = false;
        }
        line = "";
        started = true;
      }
      if (blank(line)) {
        if (!started) {
          closeTo(open, matched);
          container.blanks++;
          container.paragraph = false;
          container.rows = null; // a blank line ends a table
        }
        continue;
      }
      if (lazy && !started) {
        const text = tip.children[tip.children.length - 1];
        text.prose.push(unindented(line));
        text.deep = false;
        continue;
      }
      closeTo(open, matched);
      const before = container.children[container.children.length - 1];
      // A paragraph's line loses its indentation only as text: four columns in, `# x` or `---` carries
      // the paragraph on, neither a heading nor a rule. A line carrying a paragraph on keeps it here, as markdown-it
      // keeps what is beyond its list item's: a code span carried on to it holds it, and text drops it (`shown`).
      const heading = line.match(HEADING);
      // A table's next row, whatever it holds: a line of only no-break spaces (say) ends it, as in markdown-it.
      if (container.rows && trim(line)) container.rows.push(cells(line));
      else if (container.paragraph && before.prose && !before.deep &&
               opensTable(before.prose[before.prose.length - 1], line)) {
        const header = cells(before.prose.pop()); // the paragraph's last line is the table's header
        const aligns = cells(line).map((cell) => ALIGNS[(cell.startsWith(":") ? 1 : 0) + (cell.endsWith(":") ? 2 : 0)]);
        add(container, { rows: [header], aligns });
        container.rows = container.children[container.children.length - 1].rows;
      } else if (heading) {
        add(container, { heading: heading[1].length, text: trim(unclosed(line.slice(heading[0].length))) });
      } else if (container.paragraph && before.prose && UNDERLINE.test(line)) {
        // The paragraph's lines underlined with === or --- are a heading.
        const lines = before.prose.splice(before.prose.lastIndexOf("") + 1);
        const text = trim(lines.map((l) => untrailed(l)).join("\n"));
        add(container, { heading: unindented(line)[0] === "=" ? 1 : 2, text });
      } else if (RULE.test(line)) add(container, { rule: true });
      else if (before && before.prose) {
        if (container.blanks && container.list) container.list.loose = true;
        pad(before.prose, container.blanks).push(line);
        before.deep = indentOf(line, at) >= 4; // code but for the paragraph it carries on: it heads no table
        container.blanks = 0;
        container.paragraph = true;
      } else {
        add(container, { prose: [unindented(line)] });
        container.paragraph = true;
      }
    }
    return { root, refs };
  }

  // `node` as the container's next block: the blank lines before it show as typed after a text, or
  // before one; between two blocks of a list item, they space its list out.
  function add(container, node) {
    const before = container.children[container.children.length - 1];
    if (container.blanks && before && container.list) container.list.loose = true;
    if (before && before.prose) pad(before.prose, container.blanks);
    else if (node.prose) node.prose = pad([], container.blanks).concat(node.prose);
    container.blanks = 0;
    container.paragraph = false;
    container.rows = null;
    container.children.push(node);
  }

  // Closes the list items a line does not continue: their trailing blank lines come after their list.
  function closeTo(open, length) {
    while (open.length > length) {
      const item = open.pop();
      open[open.length - 1].blanks += item.blanks;
    }
  }

  function pad(lines, blanks) {
    for (; blanks > 0; blanks--) lines.push("");
    return lines;
  }

  // A blank line and a line's indentation are spaces and tabs only, as in CommonMark: a no-break space
  // (U+00A0), an em space or an ideographic one is text, though JavaScript's \s and trim() take them all.
  const blank = (line) => /^[ \t]*$/.test(line);
  const unindented = (line) => line.replace(/^[ \t]+/, "");
  // What markdown-it trims off a paragraph's, a heading's or a table cell's ends, and folds into one space
  // in a link label: Unicode spaces and line breaks, as JavaScript's trim() does but for U+FEFF, which
  // markdown-it-py keeps (its mdTrim).
  const SPACE = /[\t-\r \u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]/;
  const SPACES = new RegExp(SPACE.source + "+", "g");
  // Scanned, not matched: /\s+$/ tries each space of a long run in turn, in time growing as its square.
  function trim(text) {
    let start = 0;
    let end = text.length;
    while (start < end && SPACE.test(text[start])) start++;
    while (end > start && SPACE.test(text[end - 1])) end--;
    return text.slice(start, end);
  }

  // `line` without the spaces and tabs it ends with, scanned as `trim` is.
  function untrailed(line) {
    let end = line.length;
    while (end > 0 && (line[end - 1] === " " || line[end - 1] === "\t")) end--;
    return line.slice(0, end);
  }

  // A heading's text without its closing #s (a run of them, alone or after a space or a tab, that only spaces
  // and tabs follow) and the spaces and tabs it ends with. Scanned, as `trim` is: /[ \t]+#+[ \t]*$/ tried
  // each space of a long run in turn, a second for a heading of 32,000 characters, the page frozen meanwhile.
  function unclosed(text) {
    const spaceOrTab = (i) => text[i] === " " || text[i] === "\t";
    let end = text.length;
    while (end > 0 && spaceOrTab(end - 1)) end--;
    let start = end;
    while (start > 0 && text[start - 1] === "#") start--;
    if (start === end || (start > 0 && !spaceOrTab(start - 1))) return text.slice(0, end); // no closing #s
    while (start > 0 && spaceOrTab(start - 1)) start--;
    return text.slice(0, start);
  }

  const past = (space, col) => space === " " ? col + 1 : col + 4 - col % 4; // the column after a space or tab

  // The columns of `line`'s indentation when it starts at column `at` (a tab's width depends on it).
  function indentOf(line, at = 0) {
    let col = at;
    for (let i = 0; line[i] === " " || line[i] === "\t"; i++) col = past(line[i], col);
    return col - at;
  }

  // `line`, starting at column `at`, without its first `n` columns of indentation (fewer if it has
  // fewer); the columns a tab has beyond the cut are left as spaces, a tab it does not reach stays.
  function dedent(line, at, n) {
    let col = at;
    let i = 0;
    for (; col < at + n && (line[i] === " " || line[i] === "\t"); i++) col = past(line[i], col);
    return " ".repeat(Math.max(0, col - at - n)) + line.slice(i);
  }

  // `line`, starting at column `at`, with a block's indentation of up to three columns as spaces, which
  // the patterns for block markers count: a tab there, past a quote's `> `, is narrower than four.
  function spaced(line, at) {
    const indent = indentOf(line, at);
    return indent <= 3 ? " ".repeat(indent) + line.replace(/^[ \t]+/, "") : line;
  }

  // The line after a quote's `>` (its `length` characters from column `at`), and its column: a space
  // after the `>` is the quote's, and so is one column of a tab.
  function afterQuote(line, at, length) {
    line = line.slice(length);
    at += length;
    return line[0] === " " || line[0] === "\t" ? [dedent(line, at, 1), at + 1] : [line, at];
  }

  const MAX_DEPTH = 20; // lists nested deeper show their markers as typed, as the gateway's parser does

  const FENCE = /^( *)(`{3,}|~{3,})(.*)$/;
  const ITEM = /^( *)([-+*]|\d{1,9}[.)])(?:[ \t]|$)/;
  const RULE = /^ {0,3}([-*_])(?:[ \t]*\1){2,}[ \t]*$/;
  const HEADING = /^ {0,3}(#{1,6})(?:[ \t]+|$)/;
  const UNDERLINE = /^ {0,3}(?:=+|-+)[ \t]*$/;
  const QUOTE = /^ {0,3}>/;
  // A table: a line with a | above a line of one `---` (`:--`, `--:`, `:-:`) per column, between |s,
  // spaces and tabs around them, up to three columns in.
  const DELIMITER = /^ {0,3}(?:\|[ \t]*)?(?::?-+:?[ \t]*\|[ \t]*)*:?-+:?[ \t]*\|?[ \t]*$/;
  const ALIGNS = ["", "left", "right", "center"];
  const opensTable = (header, line) => header.includes("|") && DELIMITER.test(line) && !/^ {0,3}-[ \t]/.test(line) &&
    cells(header).length === cells(line).length;
  // A row's cells: split at each | not escaped (\| is a | in the cell), the row's outer |s dropped.
  function cells(line) {
    const out = trim(line).split(/(?<!\\)\|/).map((cell) => trim(cell.replaceAll("\\|", "|")));
    if (out.length > 1 && out[0] === "") out.shift();
    if (out.length > 1 && out[out.length - 1] === "") out.pop();
    return out;
  }
  // A web or mail address, the only ones linked, its scheme in any case (schemes are caseless: RFC 3986).
  const SAFE_HREF = /^(?:https?:\/\/|mailto:)/i;
  // The same, for a pattern within INLINE (no flag of its own): `http` as [Hh][Tt][Tt][Pp].
  const caseless = (word) => word.replace(/[a-z]/g, (c) => `[${c.toUpperCase()}${c}]`);
  const SAFE_SCHEME = "(?:" + caseless("http") + "[Ss]?:\\/\\/|" + caseless("mailto") + ":)";
  // A link's title, between "", '' or () (then holding no other `(`), as in CommonMark: a backslash escapes its
  // closing mark, and it may hold a line break but no blank line. Each character fits one way only: no backtracking.
  const within = (close) => "(?:[^" + close + "\\\\\\n]|\\\\.|\\\\?\\n(?!\\n))*";
  const TITLE = "(?<title>\"" + within("\"") + "\"|'" + within("'") + "'|\\(" + within("()") + "\\))";
  // `[label]: address "title"`, the address ended by a space or a control character, as in CommonMark.
  const DEFINITION = new RegExp(/^ {0,3}\[(?<label>(?:[^\[\]\\]|\\.){1,999})\]:[ \t]*/.source +
    /(?:<(?<angled>(?:[^<>\n\\]|\\.)*)>|(?<bare>[^\x00-\x20\x7f]+))/.source +
    "(?:[ \\t]+" + TITLE + ")?[ \\t]*$");
  // A label matches its definition's whatever its case and spacing, as in Markdown.
  const normalized = (label) => trim(label).replace(SPACES, " ").toLowerCase().toUpperCase();

  function block(text, into) {
    const pre = document.createElement("pre");
    const code = document.createElement("code");
    code.textContent = text;
    pre.append(code);
    into.append(pre);
  }

  // A backslash before ASCII punctuation shows it as typed, itself showing as nothing (\*, \_, \`, \[, \\);
  // at the end of a line with more text after it, it is a line break (the next line's indentation goes with
  // it). Before anything else it stays, and in code (a span or a block) it is always the code's own, as in
  // CommonMark.
  const ESCAPE = /(?<escape>\\(?:[!-\/:-@\[-`{-~]|\n(?=[ \t]*[^ \t\n\r\u2028\u2029])[ \t]*))/.source;
  // A run of backticks: the code span it opens, or text (`spanAt`).
  const TICKS = "(?<ticks>`+)";
  // A link's text (`labelEnd`) is followed by its URL, between <> (spaces and escaped <> in it too, not a
  // line break) or not (its brackets belong to it when it opened them, a backslash escapes one, a space
  // or a control character ends it: a no-break space does not, as in CommonMark), and only a web or mail
  // address is linked: a javascript: link stays text as written.
  // A backslash takes the character after it along, as in markdown-it (\) is no closing bracket).
  const URL_CHAR = "(?:[^\\x00-\\x20\\x7f()\\\\]|\\\\[^ ])";
  // Spaces, tabs and a line break (no blank line) may go around the URL, and before its title at least one.
  const GAP = "[ \\t]*(?:\\n[ \\t]*)?";
  const LINK_TAIL = new RegExp("\\]\\(" + GAP +
    "(?:<(?<angled>" + SAFE_SCHEME + "(?:[^<>\\n\\\\]|\\\\[^])*)>|" +
    "(?<href>" + SAFE_SCHEME + "(?:" + URL_CHAR + "|\\(" + URL_CHAR + "*\\))+))" +
    "(?:(?:[ \\t]+(?:\\n[ \\t]*)?|\\n[ \\t]*)" + TITLE + ")?" + GAP + "\\)", "y");
  // [text][label], [label][] and [label]: a link only when the text defines the label.
  const REFERENCE_TAIL = /\](?:\[(?<ref>(?:[^\[\]\\\n]|\\.){0,999})\])?/y;
  // A URL ends as the gateway reads a bare one (platforms/formatting/bare_urls.py): brackets it
  // opened are part of it (Wikipedia's "Python_(language)"), trailing punctuation is not, a backtick ends it, and
  // so does CJK punctuation (bare_urls._TAKEN): "见https://x.org，然后…" linked the rest of the sentence.
  // BARE_CHARS is a class left open: its last character's adds the punctuation an address does not end with.
  const BARE_CHARS = "[^\\s<>()\"`\\u3000-\\u303f\\uff01-\\uff0f\\uff1a-\\uff20\\uff3b-\\uff40\\uff5b-\\uff65";
  const BARE_URL = caseless("http") + "[Ss]?:\\/\\/(?:" + BARE_CHARS + "]|\\(" + BARE_CHARS + "]*\\))*(?:" + BARE_CHARS +
    ".,;:!?*_~'\\u2026\\u201d\\u2019]|\\(" + BARE_CHARS + "]*\\))";
  // An address between <>, as CommonMark reads one: a scheme of 2 to 32 characters, a colon and no space,
  // control character, < or >, or an e-mail address. Anything else (<b>, <a:b>) is text, as typed.
  const DOMAIN = "[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?";
  const ADDRESS = "[A-Za-z][A-Za-z0-9+.-]{1,31}:[^<>\\x00-\\x20]*|[A-Za-z0-9.!#$%&'*+/=?^_`{|}~-]+@" + DOMAIN +
    "(?:\\." + DOMAIN + ")*";
  const AUTOLINK = "<(?<auto>" + ADDRESS + ")>";
  // Invisible format characters at the end of an address written as itself (a right-to-left mark after it in Hebrew
  // or Arabic, a zero-width space, a word joiner), which Markdown takes in: no part of the page's address, they
  // follow its link, as on the other platforms. In it, they sent the reader to …/a%E2%80%8F. Not a joiner, which ends
  // the word before it, nor a tag character, which ends an emoji (bare_urls._OWN_FORMAT); nor an address of marks only.
  const MARKS_AT_END = /[^\P{Cf}\u200c\u200d\u{e0000}-\u{e007f}]+$/u;
  const MARKS_ONLY = /^[^:]+:\/\/[^\P{Cf}\u200c\u200d\u{e0000}-\u{e007f}]+$/u;
  // An address written as itself shows as the address its link goes to, as the address bar shows it: its direction
  // embeddings, overrides and isolates percent-encoded, as its link holds them. Shown as they are, a right-to-left
  // override showed https://\u202emoc.elgoog.www@evil.example/ as https://elpmaxe.live@www.google.com/ (the link going
  // to evil.example) and turned the text after it round too. The link is an isolate, left to right, besides: an
  // override in the text before it turned the whole address round.
  // The marks too (U+200E, U+200F, U+061C): strong, they turned round what is between them, so that
  // https://5.6.7.8\u200f@1.2.3.4/\u200fx showed as https://5.6.7.8/1.2.3.4@x, going to 1.2.3.4.
  const DIRECTION = /[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;
  const asAddress = (written) => written.replace(DIRECTION, (c) => encodeURI(c));
  // A link's label shows no direction control to turn it round, as on the other platforms
  // (platforms/formatting/bare_urls.py, `link_face`): [\u202e/moc.elgoog.www//:sptth](…) showed
  // https://www.google.com/ for a link to evil.example, and a right-to-left mark in [https://5.6.7.8\u200f@1.2.3.4/](…)
  // showed https://5.6.7.81.2.3.4@/. A label reading as an address (`ADDRESS_FACE`) shows them percent-encoded and is
  // laid out left to right, as an address written as itself is; another label's are dropped.
  const ADDRESS_FACE = /^\s*https?:\/\//i;
  // Nor does its title, shown as the pointer rests on it: in [x](https://evil.example "\u202e/moc.elgoog//:sptth")
  // it showed https://google.com/; a title reading as an address shows them percent-encoded, as a label does.
  const facedTitle = (title) => ADDRESS_FACE.test(title) ? asAddress(title) : title.replace(DIRECTION, "");
  function faced(link) {
    const label = link.textContent;
    const address = ADDRESS_FACE.test(label);
    if (address) link.dir = "ltr"; // an isolate
    if (label.search(DIRECTION) < 0) return;
    const texts = document.createTreeWalker(link, NodeFilter.SHOW_TEXT);
    for (let text; (text = texts.nextNode());) {
      text.data = address ? asAddress(text.data) : text.data.replace(DIRECTION, "");
    }
  }
  // An embedding, override or isolate opened in the text before a link turned its label round too ("here now" as
  // "won ereh" after \u202e, opened on its line or in a style before it): in a text holding one (its entity
  // references read), every link is an isolate, as the other platforms isolate a link after one still open
  // (bare_urls.isolated). Only there: the others are laid out as they were. In the direction of the text around it,
  // as it was laid out before, its words still deciding the text's direction (a `dir` would leave them out of its
  // dir="auto"); a property set from script, which the page's style-src allows.
  const OPENS = /[\u202a\u202b\u202d\u202e\u2066-\u2068]/;
  function isolate(built) {
    if (!OPENS.test(built.textContent)) return;
    for (const link of built.querySelectorAll("a:not([dir])")) link.style.unicodeBidi = "isolate";
  }
  // Emphasis, for the common cases of CommonMark's rules: a run opens before a non-space and closes
  // after one (`2 * 3 * 4` stays as typed), next to punctuation as `flanks` says, `_` never within a
  // word (`snake_case_names` stays too), none across a blank line; a code span
  // or an address between <> in it is one piece, whatever it holds, and each may hold the others; so is a
  // run of backticks opening no code span (`piece`). A `<` opening no such address is one character; a line
  // break is one too, but not a blank line.
  const IN = "\\\\.|<(?:" + ADDRESS + ")>|<(?!(?:" + ADDRESS + ")>)|\\n(?!\\n)";
  // Each style as its opening marks, a piece of what it holds and its closing marks, tried in this order at its
  // first character (`***`, then `**`, then `*`). What it holds is read piece by piece (at most one kind of
  // piece fits at a position), its closing marks tried before each piece but the first, as a lazy regular
  // expression reads it: one expression did, but it read on to the end of the line from each opener without a
  // closer, in time growing as the square of the line (" _a" again and again, half a second for 30,000).
  // Bold may hold italics (`inner`), and italics bold, each a piece of it, read the same way.
  const style = (name, open, piece, close, inner) => ({ name, open: new RegExp(open, "y"),
    piece: new RegExp("(?:" + IN + "|" + piece + ")", "y"), close: new RegExp(close, "y"), inner });
  // Whitespace as markdown-it reads it around emphasis: not JavaScript's \s, which also holds U+2028, U+2029
  // and U+FEFF, letters to markdown-it.
  const EM_SPACES = "\\t\\n\\v\\f\\r \\u00a0\\u1680\\u2000-\\u200a\\u202f\\u205f\\u3000";
  const EM_SPACE = "[" + EM_SPACES + "]";
  const opens = (marks, mark) => marks + "(?![" + EM_SPACES + mark + "])"; // before a non-space
  const closes = "(?<!" + EM_SPACE + ")"; // after one
  const STYLES = {
    "*": [style("both", opens("\\*\\*\\*", "*"), "[^*`\\\\<\\n]", closes + "\\*\\*\\*(?!\\*)"),
          style("bold", opens("\\*\\*", "*"), "(?<=" + EM_SPACE + ")\\*(?=" + EM_SPACE + ")|[^*`\\\\<\\n]",
                closes + "\\*\\*",
                style("em", opens("\\*", "*"), "[^*`\\\\<\\n]", closes + "\\*")), // within bold: its ** may follow
          style("em", opens("\\*", "*"), "[^*`\\\\<\\n]", closes + "\\*(?!\\*)",
                style("bold", opens("\\*\\*", "*"), "[^*`\\\\<\\n]", closes + "\\*\\*"))],
    "_": [style("bold", "(?<!\\w)" + opens("__", "_"), "_(?=\\w)|[^_`\\\\<\\n]", closes + "__(?!\\w)"),
          style("em", "(?<!\\w)" + opens("_", "_"), "_(?=\\w)|[^_`\\\\<\\n]", closes + "_(?!\\w)")],
    "~": [style("strike", opens("~~", "~"), "~(?!~)|[^~`\\\\<\\n]", "(?<![" + EM_SPACES + "~])~~(?!~)")],
  };
  // The other tokens, none starting with a style's character: which of them, or of the styles, comes first is
  // which starts first. A `[` may open a link (`linked`).
  const INLINE = new RegExp([ESCAPE, TICKS, AUTOLINK, "(?<link>\\[)", "(?<bare>" + BARE_URL + ")"].join("|"), "g");
  // A link within a link cannot be followed: an address between <> in one is its text.
  const INLINE_IN_LINK = new RegExp([ESCAPE, TICKS, AUTOLINK].join("|"), "g");
  // An address as markdown-it writes a link's, the one the other platforms link to: percent-encoded as by
  // encodeURI (a backslash is no slash), the %XX escapes it holds kept, a lone surrogate as U+FFFD.
  const encoded = (address) => address.replace(/%[0-9A-Fa-f]{2}|[^%]+|%/g,
    (part) => part.length === 3 && part[0] === "%" ? part : encodeURI(wellFormed(part)));
  // A browser without toWellFormed (before Chrome 111, Firefox 119) would throw on every link: the same, by hand.
  const wellFormed = typeof String.prototype.toWellFormed === "function" ? (text) => text.toWellFormed()
    : (text) => text.replace(/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g, "\uFFFD");

  // A link's address as markdown-it reads it before encoding it: a backslash before ASCII punctuation
  // escapes it, and an entity reference (`&amp;`, `&#38;`, `&#x26;`) is its character; one naming no
  // character, or one no text may hold (`&#0;`), stays as typed.
  const UNESCAPE = /\\([!-\/:-@\[-`{-~])|&([A-Za-z#][A-Za-z0-9]{1,31});/g;
  function unescaped(address) {
    if (!address.includes("\\") && !address.includes("&")) return address;
    return address.replace(UNESCAPE, (all, escaped, name) => escaped ?? (name[0] === "#" ? numbered(name)
      : characters.get(name)) ?? all);
  }

  // Text as markdown-it's entity rule reads it (not code's, nor an address's): a reference naming one of HTML's
  // characters (`&amp;`, `&copy;`) is it, an unknown name (`&nosuch;`) stays as typed; one of up to seven digits
  // or six hex ones is its character, or U+FFFD for one no text may hold (`&#0;`); a longer one stays as typed.
  const ENTITY = /&(?:([A-Za-z][A-Za-z0-9]{1,31})|#([0-9]{1,7}|[Xx][0-9A-Fa-f]{1,6}));/g;
  const decoded = (text) => !text.includes("&") ? text : text.replace(ENTITY, (all, name, number) =>
    name ? characters.get(name) ?? all : numbered("#" + number) ?? "\uFFFD");

  function numbered(name) {
    const digits = name.match(/^#(?:([0-9]{1,8})|[Xx]([0-9A-Fa-f]{1,8}))$/);
    const code = digits && (digits[1] ? parseInt(digits[1], 10) : parseInt(digits[2], 16));
    const text = (code >= 0x09 && code <= 0x0d && code !== 0x0b) || (code >= 0x20 && code < 0x7f) ||
      (code > 0x9f && code <= 0x10ffff && !(code >= 0xd800 && code <= 0xdfff) &&
       !(code >= 0xfdd0 && code <= 0xfdef) && (code & 0xfffe) !== 0xfffe);
    return text ? String.fromCodePoint(code) : undefined; // as markdown-it's isValidEntityCode
  }

  // The characters of HTML's named references among `names` (name -> text), from the browser's own table
  // of them, in one parse however many: each in an attribute of its own, where `&notit;` is no `&not`
  // followed by `it;`, as in markdown-it. A name is letters and digits only, so the parsed document
  // holds nothing else, and a document from DOMParser runs nothing.
  const NAME = /&([A-Za-z][A-Za-z0-9]{1,31});/g;
  // Those of the text being rendered, read once by `render` for all its texts and links' addresses.
  let characters = new Map();
  function named(names) {
    const unique = [...new Set(names)];
    if (!unique.length) return new Map();
    const html = unique.map((name) => `<p title="&${name};"></p>`).join("");
    const parsed = [...new DOMParser().parseFromString(html, "text/html").body.children];
    return new Map(unique.map((name, i) => [name, parsed[i].title === `&${name};` ? undefined : parsed[i].title]));
  }
  // Whether the run of marks at `start`..`end` of `text` may open emphasis, and whether it may close it, by
  // CommonMark's flanking rules as markdown-it applies them: the characters just before and after the whole run
  // (a text's start and end count as spaces) decide. Next to a letter a run flanks that side, next to a space it
  // does not, and next to punctuation (or a symbol) only if a space or punctuation is on its other side:
  // `**Note:**next` is no bold, the second run being followed by a letter and preceded by punctuation. An `_` run
  // flanking both sides, within a word, opens or closes only on the side of punctuation: `snake_case_names`.
  // Beside Chinese, Japanese and Korean the gateway reads runs by the CJK-friendly amendment to CommonMark
  // (platforms/formatting/flanking.py), and so does the page, or `**注意：**这里` showed its asterisks here
  // only: a CJK character on a run's other side counts as punctuation would, and CJK punctuation beside it asks
  // for no space on the other. Characters are whole code points, as in Python (`𠮷`, an emoji).
  const EMPHASIS_SPACE = new RegExp(EM_SPACE);
  const PUNCTUATION = /[\p{P}\p{S}]/u;
  // flanking.py's CJK characters (East Asian wide, full-width or half-width, but emoji and unassigned ones; Hangul;
  // ideographic variation selectors), as its Unicode version lists them: browsers know no East Asian width.
  // tests/scenarios/test_web_chat_markdown_cjk.py checks the list against flanking.py's.
  const CJK = new RegExp("[" +
    "\\u1100-\\u11ff\\u20a9\\u2329-\\u232a\\u2630-\\u2637\\u268a-\\u268f\\u2e80-\\u2e99\\u2e9b-\\u2ef3\\u2f00-\\u2fd5" +
    "\\u2ff0-\\u303e\\u3041-\\u3096\\u3099-\\u30ff\\u3105-\\u312f\\u3131-\\u318e\\u3190-\\u31e5\\u31ef-\\u321e" +
    "\\u3220-\\u3247\\u3250-\\ua48c\\ua490-\\ua4c6\\ua960-\\ua97c\\uac00-\\ud7a3\\ud7b0-\\ud7c6\\ud7cb-\\ud7fb" +
    "\\uf900-\\ufa6d\\ufa70-\\ufad9\\ufe10-\\ufe19\\ufe30-\\ufe52\\ufe54-\\ufe66\\ufe68-\\ufe6b\\uff01-\\uffbe" +
    "\\uffc2-\\uffc7\\uffca-\\uffcf\\uffd2-\\uffd7\\uffda-\\uffdc\\uffe0-\\uffe6\\uffe8-\\uffee\\u{16fe0}-\\u{16fe4}" +
    "\\u{16ff0}-\\u{16ff6}\\u{17000}-\\u{18cda}\\u{18cff}-\\u{18d20}\\u{18d80}-\\u{18df2}\\u{18e00}-\\u{19191}" +
    "\\u{191a0}-\\u{191d2}\\u{1aff0}-\\u{1aff3}\\u{1aff5}-\\u{1affb}\\u{1affd}-\\u{1affe}\\u{1b000}-\\u{1b128}" +
    "\\u{1b132}\\u{1b150}-\\u{1b152}\\u{1b155}\\u{1b164}-\\u{1b168}\\u{1b170}-\\u{1b2fb}\\u{1d300}-\\u{1d356}" +
    "\\u{1d360}-\\u{1d376}\\u{1f1ae}\\u{1f200}\\u{1f202}\\u{1f210}-\\u{1f219}\\u{1f21b}-\\u{1f22e}" +
    "\\u{1f230}-\\u{1f231}\\u{1f237}\\u{1f23b}\\u{1f240}-\\u{1f248}\\u{1f260}-\\u{1f265}\\u{1f7da}" +
    "\\u{20000}-\\u{2a6df}\\u{2a700}-\\u{2b81e}\\u{2b820}-\\u{2cead}\\u{2ceb0}-\\u{2ebe0}\\u{2ebf0}-\\u{2ee5d}" +
    "\\u{2f800}-\\u{2fa1d}\\u{30000}-\\u{3134a}\\u{31350}-\\u{33479}\\u{3d000}-\\u{3fc3f}\\u{e0100}-\\u{e01ef}]", "u");
  // The code point ending at `at` (a pair's two halves are one), or undefined at the text's start.
  const codeBefore = (text, at) => at > 1 && text.codePointAt(at - 2) > 0xffff ? text.codePointAt(at - 2)
    : text.codePointAt(at - 1);
  // Whether the character `code` is a space (as are a text's start and end), punctuation, CJK; ASCII's, beside
  // most runs, sorted once.
  function sortOf(code) {
    if (code === undefined) return [true, false, false];
    const c = String.fromCodePoint(code);
    return [EMPHASIS_SPACE.test(c), PUNCTUATION.test(c), code >= 0x1100 && CJK.test(c)];
  }
  const ASCII_SORTS = Array.from({ length: 128 }, (_, code) => sortOf(code));
  const sort = (code) => code < 128 ? ASCII_SORTS[code] : sortOf(code);
  function flanks(text, start, end) {
    const mark = text[start];
    while (start > 0 && text[start - 1] === mark && text[start - 2] !== "\\") start--;
    while (text[end] === mark) end++;
    let before = codeBefore(text, start);
    // A variation selector but the emoji one (U+FE0F) after a CJK character takes that character's part.
    const selected = before >= 0xfe00 && before <= 0xfe0e ? codeBefore(text, start - 1) : undefined;
    if (sort(selected)[2]) before = selected;
    const [lastSpace, lastPunct, lastCjk] = sort(before);
    const [nextSpace, nextPunct, nextCjk] = sort(text.codePointAt(end));
    const left = !nextSpace && (!nextPunct || nextCjk || lastSpace || lastPunct || lastCjk);
    const right = !lastSpace && (!lastPunct || lastCjk || nextSpace || nextPunct || nextCjk);
    if (mark !== "_") return { open: left, close: right };
    return { open: left && (!right || lastPunct), close: right && (!left || nextPunct) };
  }
  const STYLE_TAGS = { both: ["em", "strong"], bold: ["strong"], em: ["em"], strike: ["s"] };

  // The style opening at `at` in the text `read` reads (its name and the length of its marks) and where it ends,
  // or null. The first style whose marks are there, may open (`flanks`) and are closed decides.
  function styled(read, at) {
    for (const style of STYLES[read.text[at]] ?? []) {
      const end = opened(style, read, at);
      if (end < 0) continue;
      style.open.lastIndex = at;
      style.open.test(read.text);
      return { name: style.name, marks: style.open.lastIndex - at, end };
    }
    return null;
  }

  // Where `style`, opening at `at`, ends (the end of its closing marks), or -1: its marks are not there, it holds
  // nothing or it is not closed. `read.walks` keeps, per style, where a walk from each position read ends: the
  // openers of a line share the walks, so each finds its closer, or that it has none, in time growing as the
  // line, not its square.
  function opened(style, read, at) {
    style.open.lastIndex = at;
    if (!style.open.test(read.text) || !flanks(read.text, at, style.open.lastIndex).open) return -1;
    const first = piece(style, read, style.open.lastIndex); // it holds something
    if (first < 0) return -1;
    if (!read.walks.has(style)) read.walks.set(style, new Int32Array(read.text.length + 1));
    return closed(style, read, first, read.walks.get(style));
  }

  // Reads `style`'s pieces from `from` up to its closing marks, or up to what no piece may hold: the end of
  // the closing marks, or -1. Every position read on the way leads to the same answer, kept in `walk` (0 for
  // a position not read yet).
  function closed(style, read, from, walk) {
    const steps = [];
    let at = from;
    let end = walk[at];
    while (!end) {
      style.close.lastIndex = at;
      if (style.close.test(read.text) && flanks(read.text, at, style.close.lastIndex).close) {
        end = style.close.lastIndex;
        break;
      }
      const next = piece(style, read, at);
      if (next < 0) end = -1;
      else {
        steps.push(at);
        at = next;
        end = walk[at];
      }
    }
    walk[at] = end;
    for (const position of steps) walk[position] = end;
    return end;
  }

  // Where the piece of `style` at `at` ends, or -1: a code span whatever it holds, or a run of backticks opening
  // none; the style it may hold; or one of its pattern's.
  function piece(style, read, at) {
    if (read.text[at] === "`") return spanAt(read, at)[0];
    if (style.inner) {
      const end = opened(style.inner, read, at);
      if (end > 0) return end;
    }
    style.piece.lastIndex = at;
    return style.piece.test(read.text) ? style.piece.lastIndex : -1;
  }

  // Where the link text opening at `at` (a `[`) ends, its `]`, or -1: it holds brackets in pairs (one deep),
  // escaped ones and code spans, whatever those hold, as CommonMark reads it (`[a `]` b]` is one text), no line
  // break (but in a code span) and not nothing.
  function labelEnd(read, at) {
    const text = read.text;
    let depth = 0;
    for (let i = at + 1; i < text.length;) {
      const c = text[i];
      if (c === "`") i = spanAt(read, i)[0];
      else if (c === "\\") {
        if (i + 1 === text.length || LINE_END.test(text[i + 1])) return -1;
        i += 2;
      } else if (c === "[") {
        if (depth) return -1;
        depth = 1;
        i++;
      } else if (c === "]") {
        if (!depth) return i > at + 1 ? i : -1;
        depth = 0;
        i++;
      } else if (c === "\n") return -1;
      else i++;
    }
    return -1;
  }
  const LINE_END = /[\n\r\u2028\u2029]/; // what a backslash does not take along in a link's text, as `.` does not

  // The link whose text opens at `at` (a `[`), as a token (see `nextToken`), or null: [text](url), or
  // [text][label], [label][] and [label] when the text defines labels (`refs`).
  function linked(read, at, refs) {
    const end = labelEnd(read, at);
    if (end < 0) return null;
    const label = read.text.slice(at + 1, end);
    LINK_TAIL.lastIndex = end;
    const link = LINK_TAIL.exec(read.text);
    if (link) return { index: at, end: LINK_TAIL.lastIndex, groups: { ...link.groups, label } };
    if (!refs.size) return null;
    REFERENCE_TAIL.lastIndex = end;
    const reference = REFERENCE_TAIL.exec(read.text); // its `]` at least
    return { index: at, end: REFERENCE_TAIL.lastIndex, groups: { text: label, ref: reference.groups.ref } };
  }

  // A text's code spans, as CommonMark and markdown-it read them: a run of backticks opens one that the next run
  // of as many closes (not a longer run, nor a shorter one), within its paragraph (the text's blank lines end
  // it), whatever is between them: a backslash there is the code's own. A run that no such run follows is text,
  // all its backticks. The runs are indexed by length once per text, so that each finds its closing run, or
  // that none follows, without reading on: reading on from each run that opens nothing reads the text to its
  // end again and again, in time growing as its square for "\\``a" again and again (the run of one backtick an
  // escape leaves, and no such run after it), nearly so for runs of growing length ("`" * k for k = 1 to 240).
  function spans(text) {
    const starts = [];
    const ends = [];
    const paragraphs = [];
    const byLength = new Map(); // a run's length -> the runs that long, in order
    let paragraph = 0;
    for (const run of text.matchAll(/`+|\n\n/g)) {
      if (run[0][0] === "\n") {
        paragraph++;
        continue;
      }
      const length = run[0].length;
      if (!byLength.has(length)) byLength.set(length, []);
      byLength.get(length).push(starts.length);
      starts.push(run.index);
      ends.push(run.index + length);
      paragraphs.push(paragraph);
    }
    // What opens at `at`, a backtick: the first of its run, or the one after a backslash escaping the first (the
    // rest of the run is read from there). [the span's end, where its code starts, where its code ends], or [the
    // run's end] when it opens none.
    return (at) => {
      const run = following(starts, at) - 1;
      const same = byLength.get(ends[run] - at) ?? [];
      const closer = same[following(same, run)];
      return closer !== undefined && paragraphs[closer] === paragraphs[run] ? [ends[closer], ends[run], starts[closer]]
        : [ends[run]];
    };
  }

  // The index of the first of the `sorted` numbers greater than `n` (their length if none is).
  function following(sorted, n) {
    let low = 0;
    let high = sorted.length;
    while (low < high) {
      const middle = (low + high) >> 1;
      if (sorted[middle] > n) high = middle;
      else low = middle + 1;
    }
    return low;
  }

  // What the backtick at `at` of the text `read` reads opens (see `spans`), its runs indexed at the first asked.
  const spanAt = (read, at) => (read.spans ??= spans(read.text))(at);

  // A code span's code as markdown-it shows it: its line breaks as spaces, and one space off each end when both
  // ends are spaces and not all of it is (` `` ` is ``, `   ` three spaces).
  function code(text) {
    const spaced = text.replaceAll("\n", " ");
    return spaced[0] === " " && spaced[spaced.length - 1] === " " && /[^ ]/.test(spaced) ? spaced.slice(1, -1)
      : spaced;
  }

  // Text as shown: a line without the indentation it carries a paragraph on with, as markdown-it shows it, and
  // its entity references read.
  const shown = (text) => decoded(text.includes("\n") ? text.replace(/\n[ \t]+/g, "\n") : text);

  const NONE = { index: Infinity };

  // The next token of `read`'s text from `token.lastIndex` on, as { index, end, groups }, or NONE. A `[`
  // opening no link, and a run of backticks opening no code span, are text, as typed: the search reads on.
  function nextToken(read, token, refs) {
    for (let m; (m = token.exec(read.text));) {
      if (m.groups.ticks !== undefined) {
        const span = spanAt(read, m.index);
        if (span.length > 1) return { index: m.index, end: span[0], groups: { code: span } };
        token.lastIndex = span[0];
      } else if (m.groups.link !== undefined) {
        const link = linked(read, m.index, refs);
        if (link) return link;
        token.lastIndex = m.index + 1;
      } else return { index: m.index, end: m.index + m[0].length, groups: m.groups };
    }
    return NONE;
  }

  // `text`'s inline Markdown into `into`; in a table `cell`, a `<br>` in its text is a line break (`appendShown`).
  function inline(text, into, token = INLINE, refs = new Map(), cell = false) {
    const read = { text, walks: new Map(), spans: null };
    // The token's next match, kept while it is ahead: whether one matches at a position does not depend on
    // where the search began, and searching again after each style would read on to it each time.
    let next = { index: -1 };
    let last = 0;
    for (let at = 0; ;) {
      if (next.index < at) {
        token.lastIndex = at; // one regular expression for every call: the calls within this one move it
        next = nextToken(read, token, refs);
      }
      let start = at;
      let style = null;
      while (start < Math.min(next.index, text.length) && !(style = styled(read, start))) start++;
      if (!style) {
        if (next === NONE) break;
        start = next.index;
      }
      if (start > last) appendShown(into, text.slice(last, start), cell);
      if (style) {
        const tags = STYLE_TAGS[style.name];
        let inner = document.createElement(tags[0]);
        into.append(inner);
        if (tags[1]) inner.append(inner = document.createElement(tags[1]));
        inline(text.slice(start + style.marks, style.end - style.marks), inner, token, refs, cell);
        last = at = style.end;
        continue;
      }
      const m = next;
      last = at = m.end;
      const { escape, code: span, auto, label, href, angled, bare, title } = m.groups;
      const reference = m.groups.text;
      let node;
      let marks = "";
      // An e-mail address between <> is a mailto: link; an address only a web or mail one is.
      const address = auto && (auto.includes(":") ? auto : "mailto:" + auto);
      if (escape) {
        into.append(escape[1] === "\n" ? "\n" : escape.slice(1));
        continue;
      } else if (auto && (!SAFE_HREF.test(address) || token === INLINE_IN_LINK)) {
        into.append(SAFE_HREF.test(address) ? auto : text.slice(m.index, m.end)); // any other as typed, brackets too
        continue;
      } else if (bare && MARKS_ONLY.test(bare)) {
        into.append(bare); // "https://" and marks: no address, as "https://" alone is none
        continue;
      } else if (span) {
        node = document.createElement("code");
        node.textContent = code(text.slice(span[1], span[2]));
      } else if (reference !== undefined && !refs.has(normalized(m.groups.ref || reference))) {
        // Not a defined label: its brackets show as typed, what they hold is read as any text.
        into.append("[");
        inline(reference, into, token, refs, cell);
        into.append("]");
        if (m.groups.ref !== undefined) inline("[" + m.groups.ref + "]", into, token, refs, cell);
        continue;
      } else {
        node = document.createElement("a");
        const defined = reference !== undefined && refs.get(normalized(m.groups.ref || reference));
        marks = (auto || bare)?.match(MARKS_AT_END)?.[0] ?? "";
        const cut = (written) => written.slice(0, written.length - marks.length);
        node.href = defined ? defined.href : auto ? encoded(cut(address)) : bare ? cut(bare)
          : encoded(unescaped(href ?? angled));
        // A property, never markup: markdown-it's title attribute, its escapes and entity references read.
        const titled = defined ? defined.title : title;
        if (titled && titled.length > 2) node.title = facedTitle(unescaped(titled.slice(1, -1)));
        if (label || reference) {
          inline(label || reference, node, INLINE_IN_LINK, undefined, cell);
          faced(node);
        } else {
          node.textContent = asAddress(cut(auto || bare));
          node.dir = "ltr"; // an isolate (`asAddress`)
        }
        node.rel = "noopener noreferrer";
        node.target = "_blank";
      }
      into.append(node);
      if (marks) into.append(marks);
    }
    if (last < text.length) appendShown(into, text.slice(last), cell);
  }

  // A `<br>` (`<br/>`, `<br />`, any case), with the spaces and tabs around it: models write one to start a line in
  // a table cell, where Markdown has no other way, and GitHub and the other platforms (platforms/formatting/tables.py)
  // show a line break. It is an element made here, never the model's HTML: any other tag, or a `<br>` elsewhere,
  // escaped (`\<br>`), as entity references (`&lt;br&gt;`) or in code, shows as typed.
  const BREAK = /[ \t]*<br[ \t]*\/?>[ \t]*/i;

  // `text` as shown (`shown`) after what `into` holds; in a table `cell`, each `<br>` typed in it a line break.
  function appendShown(into, text, cell) {
    if (!cell) return into.append(shown(text));
    for (const [n, piece] of text.split(BREAK).entries()) {
      if (n) into.append(document.createElement("br"));
      if (piece) into.append(shown(piece));
    }
  }

  return { render, renderer, DIRECTION };
})();
