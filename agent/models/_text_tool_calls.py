"""Tool calls a server left in an answer's text.

A self-hosted server turns what the model writes into ``tool_calls`` only with a parser that knows the model's
format: vLLM's ``--tool-call-parser`` (hermes for Qwen and Hermes, llama3_json for Llama), Ollama's and LM
Studio's templates. Without one, or with the wrong one, the calls arrive as the answer's ``content``, with
``finish_reason: stop``: ``<tool_call>{"name": …, "arguments": {…}}</tool_call>`` (Qwen, Hermes), a bare
``{"name": …, "parameters": {…}}`` (Llama 3.1), a ```json fence or ``<tools>…</tools>`` (Qwen2.5-Coder), Mistral's
``[TOOL_CALLS][{"name": …, "arguments": {…}}]`` or, from its v11 tokenizer on, ``[TOOL_CALLS]name[ARGS]{…}`` (with
``[CALL_ID]id`` before ``[ARGS]`` where the model writes the call's id: Mistral Small 3.2, Magistral, Devstral). Taken
as the answer, the chat read that JSON as the reply and no tool ran.
"""

from __future__ import annotations

import ast
import html
import json
import re
import unicodedata
import warnings
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

_BLOCK = re.compile(r"<tool_call>(.*?)(?:</tool_call>|\Z)", re.DOTALL)
"""Hermes' block; the last may be left open, its end being the model's stop."""

_WRAPPERS = (re.compile(r"<tools>(.*)</tools>", re.DOTALL), re.compile(r"```(?:json)?[ \t]*\n(.*?)\n?```", re.DOTALL))

_PYTHON_TAG = "<|python_tag|>"
"""Llama 3.1's mark before a call, which servers without its parser leave in the text."""

_ARGUMENT_KEYS = ("arguments", "parameters")

_MISTRAL = "[TOOL_CALLS]"
"""The mark Mistral's models begin their calls with; before each, from its v11 tokenizer on."""

_ARGS = "[ARGS]"
_CALL_ID = "[CALL_ID]"

_MISTRAL_CALL = re.compile(r"\s*([A-Za-z0-9_.-]+)(?:\[CALL_ID\]([^\s\[\]]*))?\[ARGS\]\s*")
"""One call of Mistral's v11 form, after its mark: the tool's name, the call's id where the model writes one (its
v11 tokenizer encodes ``[CALL_ID]`` when the call has an id, v13 never), before its arguments' JSON object."""

_MISTRAL_ID = "id"
"""Mistral Nemo writes each call of the list form with the 9-character id its template sends back."""


class TextCall(tuple[str, str]):
    """A call read from the text: (name, arguments as JSON text), and ``id``, the one the model wrote for it (Mistral's
    forms) or None. Equal to the bare pair: the id labels the call, it is not what the call does."""

    id: str | None

    def __new__(cls, name: str, arguments: str, call_id: str | None = None) -> TextCall:
        call = super().__new__(cls, (name, arguments))
        call.id = call_id
        return call


def offered_names(tools: Sequence[Mapping[str, Any]]) -> frozenset[str]:
    """The names of the tools a request offers (OpenAI's ``{"type": "function", "function": {"name"}}``)."""
    names = set()
    for tool in tools:
        function = tool.get("function") if isinstance(tool, Mapping) else None
        name = function.get("name") if isinstance(function, Mapping) else None
        if isinstance(name, str):
            names.add(name)
    return frozenset(names)


def calls_in_text(text: str, offered: frozenset[str], quoted: str = "") -> tuple[str | None, list[TextCall]] | None:
    """(what the answer says beside the calls, or None; each call) when ``text`` holds nothing but calls of
    ``offered`` tools in one of the forms above (Hermes' blocks may follow some words, which are then the answer's
    text, as vLLM's hermes parser keeps them); else None. A JSON example inside an explanation, a name no tool has or
    JSON that does not parse leaves the answer as text; so does a call ``quoted``, the latest user message, holds
    (`_pasted`): the user pasted it to show or ask about it, and the model repeating it is no call of its own."""
    if not offered or "{" not in text:
        return None
    text = text.strip()
    said, calls = None, None
    start = text.find("<tool_call>")
    if start >= 0:
        said, rest, sources, at = text[:start].strip() or None, text[start:], [], 0
        if said is not None and said.count("```") % 2:  # within a code block left open: an example shown
            return None
        for block in _BLOCK.finditer(rest):
            if rest[at:block.start()].strip():
                return None
            sources.append(block[1])
            at = block.end()
        if rest[at:].strip():
            return None
        calls = _calls(sources, offered)
    elif text.startswith(_MISTRAL):
        calls = _mistral(text, offered)
    else:
        text = text.removeprefix(_PYTHON_TAG).strip()
        for wrapper in _WRAPPERS:
            if (wrapped := wrapper.fullmatch(text)) is not None:
                text = wrapped[1]
                break
        calls = _calls(_objects(text), offered)
    if calls is None or _pasted(calls, quoted):
        return None
    return said, calls


def _mistral(text: str, offered: frozenset[str]) -> list[TextCall] | None:
    """The calls of ``text``, which begins with Mistral's mark."""
    rest = text[len(_MISTRAL):].lstrip()
    if rest.startswith(("[", "{")):  # before its v11 tokenizer: a JSON list of calls
        return _calls(_objects(rest), offered, extra_keys=(_MISTRAL_ID,))
    # Read call by call, not split at each mark: an argument's text may hold the mark itself (a note about it).
    decoder, calls, at = json.JSONDecoder(), [], 0
    while True:
        call = _MISTRAL_CALL.match(rest, at)
        try:
            arguments, end = decoder.raw_decode(rest, call.end()) if call is not None else (None, at)
        except (ValueError, RecursionError):
            return None
        item = {"name": call[1], "arguments": arguments, _MISTRAL_ID: call[2]} if isinstance(arguments, dict) else None
        if (found := _call(item, offered, extra_keys=(_MISTRAL_ID,))) is None:
            return None
        calls.append(found)
        at = end
        while at < len(rest) and rest[at].isspace():
            at += 1
        if at == len(rest):
            return calls
        if not rest.startswith(_MISTRAL, at):
            return None
        at += len(_MISTRAL)


def _pasted(calls: list[TextCall], quoted: str) -> bool:
    """Whether ``quoted`` holds any of ``calls`` as a call: the same tool with the same arguments as JSON values,
    however written (keys in another order, other spacing, ``\\u00e9`` for ``é``, composed or not (NFC), an ``id``
    beside them, in another of the forms above, as OpenAI's ``{"function": {"name", "arguments": "…"}}``,
    Anthropic's ``{"name", "input"}`` or Gemini's ``{"name", "args"}``, within a JSON string of a pasted log line, its
    quotes escaped once or twice (``{\\"name\\": …``) or as HTML's ``&quot;``, or as Python writes a dict,
    ``{'name': …}``). Compared as text, a model that laid the call out again, as it may, ran what the user only
    showed.

    A text whose reads come to more than `_READ_PER_CHARACTER` and `_READ_AT_LEAST` allow (JSON nested deep and left
    open, a paste made to be slow) counts as holding the calls: the answer stays text, rather than the event loop held
    for seconds."""
    return _Look(calls, quoted).holds()


class _Look:
    """One look through a user's message for calls (`_pasted`): the calls looked for, the texts left to read (the
    message, strings read within it, its unescaped forms) and the work left."""

    def __init__(self, calls: list[TextCall], quoted: str) -> None:
        self.wanted = {(name, canonical) for name, arguments in calls
                       if (canonical := _canonical(arguments)) is not None}
        self.names = {name for name, _ in self.wanted}
        # A call's name as a dict holds it (quotes escaped, as in a string within it, or not): a dict naming a tool
        # only as a key or a word (``{'memory': 512}``, data) is no call and holds none.
        self.named = re.compile(_PYTHON_NAMED.format("|".join(map(re.escape, sorted(self.names))))) if self.names \
            else None
        self.left = _READ_PER_CHARACTER * len(quoted) + _READ_AT_LEAST
        self.texts = [(quoted, _UNESCAPES)]

    def holds(self) -> bool:
        while self.texts:
            text, unescapes = self.texts.pop()
            unread: list[str] = []
            if (self._json(text, unescapes, unread) or self._python(text, unescapes)
                    or self._unescaped(text, unread, unescapes)):
                return True
        return False

    def _json(self, text: str, unescapes: int, unread: list[str]) -> bool:
        """Whether ``text`` holds a call as JSON, or its reads came to the work left; what no read took to ``unread``.

        An object is read at each brace before a key that no object read before holds (its own objects are its
        value's), so a read that fails also reads what follows it."""
        decoder, base, doc, start, read = json.JSONDecoder(), 0, text, _OBJECT.search(text), 0
        while start is not None:
            at = start.start()
            if at - base > _REBASED_AFTER:
                base, doc = at, text[at:]
            try:
                value, end = decoder.raw_decode(doc, at - base)
            except (ValueError, RecursionError) as exc:  # no JSON here: one may begin at a later brace, also within
                # A JSONDecodeError says how far it read; a RecursionError may have read all that follows.
                reached = exc.pos + base if isinstance(exc, json.JSONDecodeError) else len(text)
                self.left -= _READ_COST + reached - at
                start = _OBJECT.search(text, at + 1)
            else:
                end += base
                self.left -= _READ_COST + end - at
                unread.append(text[read:at])
                read = end
                if self._within(value, _named_before(text, at), unescapes):
                    return True
                start = _OBJECT.search(text, end)
            if self.left <= 0:
                return True
        unread.append(text[read:])
        return False

    def _python(self, text: str, unescapes: int) -> bool:
        """`_json` for a dict as Python writes it (``{'name': 'memory', 'arguments': {'pinned': True}}``, pasted
        from a REPL), read by `ast.literal_eval` to its closing brace: one that holds a tool's ``'name'`` pair
        (`_PYTHON_NAMED`) or follows its name (`_named_before`); no other is or holds a call."""
        start = _PYTHON_OBJECT.search(text)
        while start is not None:
            at = start.start()
            self.left -= _READ_COST
            end, named = self._python_end(text, at), _named_before(text, at)
            if end is None:
                start = _PYTHON_OBJECT.search(text, at + 1)
            elif named not in self.names and (self.named is None or self.named.search(text, at, end) is None):
                # No call in it, nor in the dicts it holds: evaluated, a paste of code or data took seconds, and a
                # large one naming a tool (a ``'memory'`` key) came to the work left, refusing the model's own call.
                start = _PYTHON_OBJECT.search(text, end)
            else:
                self.left -= _READ_COST + _LITERAL_COST * (end - at)
                if self.left <= 0:
                    return True
                try:
                    with warnings.catch_warnings():  # an escape Python has not (``'\\d'``) warns: not for the log
                        warnings.simplefilter("ignore")
                        value = ast.literal_eval(text[at:end])
                except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):  # code, not a literal
                    start = _PYTHON_OBJECT.search(text, at + 1)
                else:
                    if self._within(value, named, unescapes):
                        return True
                    start = _PYTHON_OBJECT.search(text, end)
            if self.left <= 0:
                return True
        return False

    def _python_end(self, text: str, at: int) -> int | None:
        """Where the brace at ``at`` closes, its strings aside, within `_PYTHON_AT_MOST` characters; else None."""
        depth, until = 0, min(len(text), at + _PYTHON_AT_MOST)
        for token in _PYTHON_TOKEN.finditer(text, at, until):
            self.left -= _TOKEN_COST
            if token[0] == "{":
                depth += 1
            elif token[0] == "}":
                depth -= 1
                if not depth:
                    self.left -= token.end() - at
                    return token.end()
        self.left -= until - at
        return None

    def _unescaped(self, text: str, unread: list[str], unescapes: int) -> bool:
        """Whether unescaping ``text`` came to the work left; its unescaped forms are to be read, when it has not been
        unescaped `_UNESCAPES` times and the pieces of it no JSON read took, ``unread``, have escaped quotes.

        Those within JSON read are its strings', which are read unescaped as they are: a log of JSON lines whose
        messages hold JSON, read twice, came to the work allowed. The whole is unescaped, not those pieces: a JSON
        read may take a piece of the escaped text (``{}``, arguments of none)."""
        if not unescapes:
            return False
        if any('\\"' in piece for piece in unread):
            self.left -= len(text) + _ESCAPE_COST * text.count("\\")
            self.texts.append((_JSON_ESCAPE.sub(_json_unescaped, text), unescapes - 1))
        if any(_HTML_QUOTE.search(piece) is not None for piece in unread):
            self.left -= len(text) + _ENTITY_COST * text.count("&")
            self.texts.append((html.unescape(text), unescapes - 1))
        return self.left <= 0

    def _within(self, value: Any, named: str | None, unescapes: int) -> bool:
        """Whether ``value``, read at a brace after the tool's name ``named``, is or holds one of the calls, or its
        reading came to the work left; the strings within it that may hold calls are left to read."""
        if named in self.names and isinstance(value, dict):
            canonical = _canonical(value)
            self._written(canonical)
            if (named, canonical) in self.wanted:
                return True
        strings: list[str] = []
        for found in _calls_within(value, self.names, strings):
            # Each canonical text is written anew: calls nested in calls' arguments write theirs again.
            self._written(found[1])
            if found in self.wanted or self.left <= 0:
                return True
        self.texts.extend((string, unescapes) for string in strings)
        return False

    def _written(self, canonical: str | None) -> None:
        """Counts the work of writing ``canonical``: one not all ASCII may have been composed, read, written again."""
        if canonical is not None:
            self.left -= len(canonical) * (1 if canonical.isascii() else _COMPOSED_COST)


_OBJECT = re.compile(r'\{\s*["}]')
"""Where a call's object may begin: at a key, or empty (the arguments of Mistral's ``name[ARGS]{}``); not at a brace
before anything else, which no JSON object is."""

_READ_PER_CHARACTER = 16
_READ_AT_LEAST = 1 << 21
"""Characters `_pasted` reads at most, for each of the text's, and over all beside (some 8,000 reads, tens of
milliseconds): with 65,536, a 30 KB data file of small records (a read each) counted as holding the calls."""

_READ_COST = 256
"""What each read counts for beside the characters it reads: the failure it may raise costs more than a few."""

_REBASED_AFTER = 1024
"""Characters a read may begin past the start of the text it is given: a failed read costs what lies before it there
(`json.JSONDecodeError` counts its lines), so that text is cut to begin near it; read in the whole of a pasted log of
braces, the reads took seconds."""


_UNESCAPES = 2
"""Times a text is unescaped at most: a call within a JSON string within another (``{\\\\\"name\\\\\": …``, a
Python repr of a log line) is escaped twice."""

_JSON_ESCAPE = re.compile(r'\\(["\\/bfnrt])')
"""JSON's escapes, but ``\\uXXXX``: left escaped, the reading of the unescaped text reads it within its string, a
pair of surrogates as one character."""

_JSON_UNESCAPED = {"b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}


def _json_unescaped(escape: re.Match[str]) -> str:
    return _JSON_UNESCAPED.get(escape[1], escape[1])


_ESCAPE_COST = 16
"""What each backslash counts for when a text is unescaped: a call of Python's for each escape."""

_HTML_QUOTE = re.compile(r"&(?:amp;)?(?:quot|apos|#0*3[49]|#[xX]0*2[27]);")
"""HTML's escaped quotes (``html.escape`` writes ``&quot;`` and ``&#x27;``; escaped twice, ``&amp;quot;``), where a
text is to be read unescaped."""

_ENTITY_COST = 256
"""What each ``&`` counts for when a text is unescaped as HTML: one not known is looked up by each of its lengths."""

_PYTHON_OBJECT = re.compile(r"\{\s*'")
"""Where a dict as Python writes it may begin, at a key: Python writes a string in single quotes but one holding
them, which no call's keys do."""

_PYTHON_TOKEN = re.compile(r"""'(?:[^'\\\n]|\\.)*'?|"(?:[^"\\\n]|\\.)*"?|[{}]""")
"""A Python string (to its line's end where it is left open, so that each quote after is not read to there again) or
a brace."""

_PYTHON_NAMED = r"""\\*['"]name\\*['"]\s*:\s*(?:[uUrRbB]{{1,2}})?\\*['"](?:{})\\*['"]"""
"""A ``'name': 'memory'`` pair within a dict, its quotes either, escaped or not (``{}``: the names looked for)."""

_PYTHON_AT_MOST = 1 << 16
"""Characters of a Python dict `_pasted` evaluates at most: `ast.literal_eval` takes a second and some 250 MB for a
megabyte."""

_COMPOSED_COST = 4
"""What each character of a canonical text not all ASCII counts for: composing it, then reading and writing it again,
took three times writing it."""

_TOKEN_COST = 24
_LITERAL_COST = 32
"""What each token of a Python dict looked through and each character of one evaluated count for, beside
`_READ_COST` for each look and each evaluation: a character of JSON read is C's; these Python's, and `ast`'s about
thirty times JSON's."""


def _named_before(text: str, at: int) -> str | None:
    """The tool's name where the JSON at ``at`` is the arguments of a call in Mistral's v11 form (``name[ARGS]``,
    ``name[CALL_ID]id[ARGS]``, spacing between any two aside: ``memory [ARGS] {…}`` pasted); else None.

    Looked for within `_NAMED_WITHIN` characters before, by C's string methods: each read walking back over what
    precedes it, a character at a time and unbounded, a message of long runs of spaces or letters took seconds."""
    start = max(0, at - _NAMED_WITHIN)
    before = text[start:at].rstrip()
    if not before.endswith(_ARGS):
        return None
    before = before[:-len(_ARGS)].rstrip()
    mark = before.rfind(_CALL_ID)
    call_id = before[mark + len(_CALL_ID):] if mark >= 0 else None
    if call_id is not None and len(call_id.split()) <= 1 and "[" not in call_id and "]" not in call_id:
        before = before[:mark].rstrip()  # the id `_MISTRAL_CALL` reads, but for spacing around it
    name = before[len(before.rstrip(_NAME_CHARACTERS)):]
    if start > 0 and len(name) == len(before):  # maybe the end of a longer name
        return None
    return name or None


_NAMED_WITHIN = 256
"""A name (OpenAI's are 64 characters at most), an id and spacing."""

_NAME_CHARACTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-"
"""Those of a name `_MISTRAL_CALL` reads."""


def _calls_within(value: Any, names: set[str], strings: list[str]) -> Iterator[tuple[str, str | None]]:
    """(name, canonical arguments) of each object in ``value``, at any depth, whose ``name`` is one of ``names`` and
    that holds arguments (`_PASTED_ARGUMENT_KEYS`) or nothing a call lacking them may hold beside (a tool's
    definition, ``{"name", "description"}``, calls nothing); each string in it that holds a brace is added to
    ``strings``: it may hold calls of its own (a log line's message quoting one, its quotes escaped)."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, dict):
            stack.extend(item.values())
            if isinstance(name := item.get("name"), str) and name in names:
                key = next((key for key in _PASTED_ARGUMENT_KEYS if key in item), None)
                if key is not None or set(item) <= _CALL_WITHOUT_ARGUMENTS:  # else no call: a tool's definition
                    yield name, _canonical(None if key is None else item[key])
        elif isinstance(item, str) and "{" in item:
            strings.append(item)


_PASTED_ARGUMENT_KEYS = (*_ARGUMENT_KEYS, "input", "args")
"""Where a pasted call holds its arguments: as the model writes them, or as Anthropic's ``tool_use`` (``input``) and
Gemini's ``functionCall`` (``args``) do, which a pasted log may show."""

_CALL_WITHOUT_ARGUMENTS = frozenset({"name", "id", "type", "call_id"})
"""The keys of an object that is a call without arguments (of a tool without parameters)."""


def _canonical(arguments: Any) -> str | None:
    """``arguments`` (a call's, as its JSON text or value) as one text for any way of writing the same value, its
    text composed (NFC); JSON text that does not parse as itself; None for a value too deep to write, or not JSON's."""
    if arguments is None:  # as `_call` reads a call without arguments, or with null
        arguments = {}
    elif isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except (ValueError, RecursionError):
            return unicodedata.normalize("NFC", arguments)
    try:
        # Sorted keys and no escapes: the same value written otherwise is the same text; 1 and 1.0, or true and 1,
        # stay apart (Python's == holds them equal).
        text = json.dumps(arguments, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
        if unicodedata.is_normalized("NFC", text):
            return text
        # Composed, then sorted again: "é" composed sorts after "f", decomposed (e and its accent) before.
        return json.dumps(json.loads(unicodedata.normalize("NFC", text)), sort_keys=True, ensure_ascii=False,
                          separators=(",", ":"))
    except (TypeError, ValueError, RecursionError):  # a Python value JSON has not (a set, bytes, keys of two types)
        return None


def _objects(text: str) -> list[str]:
    """``text`` as the JSON values it holds one after another (Llama writes several calls apart by ``;`` or a
    space), each as its text; a single item of text that is no JSON when they cannot be told apart."""
    decoder, values, at, text = json.JSONDecoder(), [], 0, text.strip()
    while at < len(text):
        try:
            _, end = decoder.raw_decode(text, at)
        except (ValueError, RecursionError):
            return [text]
        values.append(text[at:end])
        at = end
        while at < len(text) and (text[at].isspace() or text[at] == ";"):
            at += 1
    return values


def _calls(bodies: list[str], offered: frozenset[str], extra_keys: tuple[str, ...] = ()) -> list[TextCall] | None:
    calls: list[TextCall] = []
    for body in bodies:
        try:
            value = json.loads(body)
        except (ValueError, RecursionError):
            return None
        for item in value if isinstance(value, list) else [value]:
            call = _call(item, offered, extra_keys)
            if call is None:
                return None
            calls.append(call)
    return calls or None


def _call(item: Any, offered: frozenset[str], extra_keys: tuple[str, ...] = ()) -> TextCall | None:
    if not isinstance(item, dict) or not set(item) <= {"name", *_ARGUMENT_KEYS, *extra_keys}:
        return None
    if not isinstance(item.get("name"), str) or item["name"] not in offered:  # a list or object is no set member
        return None
    arguments = next((item[key] for key in _ARGUMENT_KEYS if key in item), None)
    if arguments is None:  # none written, or null, as some templates write for a tool without parameters
        arguments = {}
    # Kept: Mistral's templates send each call's id back with it, and Nemo's refuses one that is not 9 characters.
    call_id = item.get(_MISTRAL_ID) if _MISTRAL_ID in extra_keys else None
    call_id = call_id if isinstance(call_id, str) and call_id else None
    if isinstance(arguments, dict):
        return TextCall(item["name"], json.dumps(arguments, ensure_ascii=False), call_id)
    if isinstance(arguments, str):  # as the API writes them: the session parses them, and says what is wrong
        return TextCall(item["name"], arguments, call_id)
    return None
