"""The YAML reader of configuration files and ``--set`` values: PyYAML's safe loader, minus three
of YAML 1.1's silent surprises and the values without end it builds.

- A key written twice in one mapping is an error; PyYAML keeps the last value.
- A plain number with a leading 0 is an error: YAML 1.1 reads ``0755`` as octal 493, YAML 1.2
  and most readers as 755, and no setting is a file mode. Quoted, it stays text.
- So is a plain number with a colon: YAML 1.1 reads ``1:30`` as base 60 (90), YAML 1.2 as text;
  an ``allowed_users`` entry ``12:30`` let user 750 in.
- An alias inside the node its anchor names (``&x [*x]``) is an error: PyYAML builds a list or
  mapping that holds itself, and whatever walks the configuration recursed until Python gave up.
- Merges (``<<: *defaults``) copy out at most `MAX_MERGED` values, each key merged into a mapping
  once: PyYAML before 6.0.4 (which ``PyYAML>=6.0`` allows) copied a mapping merged twice
  (``<<: [*a, *a]``) twice, so that a few hundred bytes of merges nested twenty deep took minutes
  and gigabytes; and any PyYAML copies a mapping of thousands of keys into each of thousands of
  mappings that merge it, from a file of kilobytes, before the loader could count what it built.
- A value YAML reads as a type it is no valid value of (a bare ``2024-02-30``, a date to YAML 1.1
  but none on the calendar; ``!!int abc``) is an error with its line: PyYAML raised Python's own
  ValueError (or KeyError), which reached the operator as a traceback.
- A double-quoted escape pair of UTF-16 halves (``"\\ud83d\\ude00"``, as JSON and some editors write
  😀) is the one character it stands for, in keys and values alike: PyYAML kept the two halves, which
  no log, file or platform can encode. A half without its other stays, for the rules that refuse it.

Messages do not echo the value: the loader does not know which keys hold secrets.
"""

from __future__ import annotations

import json
import re

import yaml

OCTAL = ("a number written with a leading 0, which YAML 1.1 reads as octal (0755 as 493): write it without the"
         " leading 0, or in quotes if it is text")
MAX_MERGED = 1_000_000
"""As `gateway.config.loader.MAX_VALUES`, for the values merges copy (counted before they are built)."""
BASE_60 = ("a number written with a colon, which YAML 1.1 reads as base 60 (1:30 as 90): quote it if it is text,"
           " or write the number meant")
_OCTAL = re.compile(r"[-+]?0[0-7_]+")  # PyYAML's own octal pattern
_PAIR = re.compile("[\ud800-\udbff][\udc00-\udfff]")


class StrictLoader(yaml.SafeLoader):
    """SafeLoader that refuses duplicate keys, octal numbers and values that hold themselves."""

    def __init__(self, stream) -> None:
        super().__init__(stream)
        self._open_anchors: list[str] = []  # of the collections being composed, outermost first
        self._merged = 0  # pairs merged into mappings so far, over the whole document

    def compose_node(self, parent, index):
        if self.check_event(yaml.AliasEvent) and (anchor := self.peek_event().anchor) in self._open_anchors:
            raise yaml.composer.ComposerError(
                f"while composing the node anchored &{anchor}", None,
                f"found an alias to it inside it (*{anchor}): a value that holds itself never ends",
                self.peek_event().start_mark)
        return super().compose_node(parent, index)

    def compose_sequence_node(self, anchor):
        return self._composing(anchor, super().compose_sequence_node)

    def compose_mapping_node(self, anchor):
        return self._composing(anchor, super().compose_mapping_node)

    def _composing(self, anchor, compose):
        self._open_anchors.append(anchor)
        try:
            return compose(anchor)
        finally:
            self._open_anchors.pop()

    def construct_object(self, node, deep=False):
        try:
            return super().construct_object(node, deep)
        except yaml.YAMLError:
            raise
        except (ValueError, TypeError, KeyError, IndexError, AttributeError, OverflowError):
            raise yaml.constructor.ConstructorError(None, None, _unreadable(node.tag), node.start_mark) from None

    def flatten_mapping(self, node):
        """PyYAML's merge (``<<``) with each key merged once, and at most `MAX_MERGED` merged in all.

        As YAML says, and PyYAML before 6.0.4 did: a key of ``node``'s own wins over a merged one,
        and of the mappings merged, the one earlier in the list wins (6.0.4 let the later one win,
        unless the key was one character long)."""
        merge, taken = [], set()
        index = 0
        while index < len(node.value):
            key_node, value_node = node.value[index]
            if key_node.tag == "tag:yaml.org,2002:merge":
                del node.value[index]
                for source in self._merge_sources(node, value_node):
                    self.flatten_mapping(source)
                    effective = {}  # of the source's pairs, the one it holds for each key
                    for pair in source.value:  # its own keys come after those it merged, and win
                        effective[self._merge_key(pair[0])] = pair
                    for key, pair in effective.items():
                        if key not in taken:
                            taken.add(key)
                            merge.append(pair)
                            self._merged += 1
                    if self._merged > MAX_MERGED:
                        raise yaml.constructor.ConstructorError(
                            None, None, f"its merges (<<) copy out over {MAX_MERGED:,} values", key_node.start_mark)
            elif key_node.tag == "tag:yaml.org,2002:value":
                key_node.tag = "tag:yaml.org,2002:str"
                index += 1
            else:
                index += 1
        if merge:
            node.value = merge + node.value

    @staticmethod
    def _merge_sources(node, value_node) -> list:
        """The mappings ``<<`` names, as PyYAML checks them."""
        if isinstance(value_node, yaml.MappingNode):
            return [value_node]
        if not isinstance(value_node, yaml.SequenceNode):
            raise yaml.constructor.ConstructorError(
                "while constructing a mapping", node.start_mark,
                f"expected a mapping or list of mappings for merging, but found {value_node.id}", value_node.start_mark)
        if bad := next((s for s in value_node.value if not isinstance(s, yaml.MappingNode)), None):
            raise yaml.constructor.ConstructorError(
                "while constructing a mapping", node.start_mark,
                f"expected a mapping for merging, but found {bad.id}", bad.start_mark)
        return value_node.value

    def _merge_key(self, key_node) -> object:
        """The key ``key_node`` stands for, as the mapping will hold it (the node itself if unhashable)."""
        key = self.construct_object(key_node, deep=True)
        try:
            hash(key)
        except TypeError:
            return ("node", id(key_node))
        return key

    def construct_scalar(self, node):
        return _PAIR.sub(_joined, super().construct_scalar(node))

    def construct_mapping(self, node, deep=False):
        if not isinstance(node, yaml.MappingNode):
            return super().construct_mapping(node, deep)  # which says it is none
        seen = set()
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue  # `<<: *defaults` may legitimately repeat keys it merges in
            key = self.construct_object(key_node, deep=True)
            try:
                duplicate = key in seen
                seen.add(key)
            except TypeError:
                continue  # unhashable key: the base class reports it
            if duplicate:
                raise yaml.constructor.ConstructorError(
                    "while constructing a mapping", node.start_mark, f"found duplicate key {_written(key)}",
                    key_node.start_mark,
                )
        return super().construct_mapping(node, deep)

    def construct_yaml_int(self, node):
        if _OCTAL.fullmatch(node.value):
            raise yaml.constructor.ConstructorError(None, None, OCTAL, node.start_mark)
        if ":" in node.value:
            raise yaml.constructor.ConstructorError(None, None, BASE_60, node.start_mark)
        return super().construct_yaml_int(node)

    def construct_yaml_float(self, node):
        if ":" in node.value:
            raise yaml.constructor.ConstructorError(None, None, BASE_60, node.start_mark)
        return super().construct_yaml_float(node)


def _joined(pair: re.Match) -> str:
    return pair.group().encode("utf-16", "surrogatepass").decode("utf-16")


_KINDS = {"int": "an integer", "float": "a number", "bool": "a boolean", "timestamp": "a date"}


def _unreadable(tag: str) -> str:
    """Why the value tagged ``tag`` cannot be read, without the value (it may be a secret)."""
    name = tag.removeprefix("tag:yaml.org,2002:")
    return (f"this value reads as {_KINDS.get(name, f'!!{name}')}, and is not a valid one: write a valid one, or"
            " quote it if it is text")


def _written(key: object) -> str:
    """A mapping key as YAML wrote it (JSON-ish), as `gateway.config.validate.show` would."""
    return json.dumps(key if isinstance(key, (str, int, float, bool, type(None))) else str(key), ensure_ascii=False)


StrictLoader.add_constructor("tag:yaml.org,2002:int", StrictLoader.construct_yaml_int)
StrictLoader.add_constructor("tag:yaml.org,2002:float", StrictLoader.construct_yaml_float)
