"""The YAML reader of configuration files and ``--set`` values: PyYAML's safe loader, minus two
of YAML 1.1's silent surprises and one value without end.

- A key written twice in one mapping is an error; PyYAML keeps the last value.
- A plain number with a leading 0 is an error: YAML 1.1 reads ``0755`` as octal 493, YAML 1.2
  and most readers as 755, and no setting is a file mode. Quoted, it stays text.
- An alias inside the node its anchor names (``&x [*x]``) is an error: PyYAML builds a list or
  mapping that holds itself, and whatever walks the configuration recursed until Python gave up.
- A value YAML reads as a type it is no valid value of (a bare ``2024-02-30``, a date to YAML 1.1
  but none on the calendar; ``!!int abc``) is an error with its line: PyYAML raised Python's own
  ValueError (or KeyError), which reached the operator as a traceback.

Messages do not echo the value: the loader does not know which keys hold secrets.
"""

from __future__ import annotations

import json
import re

import yaml

OCTAL = ("a number written with a leading 0, which YAML 1.1 reads as octal (0755 as 493): write it without the"
         " leading 0, or in quotes if it is text")
_OCTAL = re.compile(r"[-+]?0[0-7_]+")  # PyYAML's own octal pattern


class StrictLoader(yaml.SafeLoader):
    """SafeLoader that refuses duplicate keys, octal numbers and values that hold themselves."""

    def __init__(self, stream) -> None:
        super().__init__(stream)
        self._open_anchors: list[str] = []  # of the collections being composed, outermost first

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
        return super().construct_yaml_int(node)


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
