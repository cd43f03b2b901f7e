"""The schema versions docs/gateway.md quotes in its error lines are this version's: an operator
comparing the line they got with the docs should not find a number one release old."""

import re
from pathlib import Path

from gateway.store import SCHEMA_VERSION as GATEWAY_SCHEMA
from lifecycle._journal import SCHEMA_VERSION as JOURNAL_SCHEMA

GATEWAY_DOC = Path(__file__).resolve().parents[1] / "docs" / "gateway.md"


def quoted(kind: str) -> list[int]:
    """The versions "this one reads" in each quoted line about a ``kind`` schema."""
    text = re.sub(r"\s+", " ", GATEWAY_DOC.read_text(encoding="utf-8"))
    return [int(n) for n in re.findall(rf"{kind} schema \d+; this one reads (?:up to )?(\d+)\)", text)]


def test_the_gateway_schema_the_docs_quote_is_this_versions():
    versions = quoted("gateway")
    assert versions and set(versions) == {GATEWAY_SCHEMA}


def test_the_journal_schema_the_docs_quote_is_this_versions():
    versions = quoted("lifecycle journal")
    assert versions and set(versions) == {JOURNAL_SCHEMA}
