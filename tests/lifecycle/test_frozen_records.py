"""The lifecycle's records are built by `agent._frozen.fast_init` and keep their dataclass signatures."""

import dataclasses
import inspect

import pytest

from lifecycle import ChildJob, ChildSnapshot, ChildSpec, JournalRecord, SubagentLaunchRequest, SubagentResult


@pytest.mark.parametrize("cls", [ChildJob, ChildSnapshot, ChildSpec, JournalRecord, SubagentLaunchRequest, SubagentResult])
def test_the_lifecycle_records_keep_their_signatures(cls):
    names = [f.name for f in dataclasses.fields(cls)]
    assert list(inspect.signature(cls).parameters) == names
