"""`retire_key` names an unknown key id back cut short: it echoed the caller's value whole (``!r``), so a
megabyte-long id, or a list of a million items, came back in full in the error, and in every log line
quoting it."""

import pytest

from lifecycle import SubagentLifecycleError
from lifecycle._routing import ECHO_CHARS


@pytest.mark.parametrize("kid", ["k" * 1_000_000, ["k" * 1000] * 100_000], ids=["long", "huge-list"])
async def test_an_unknown_kid_is_named_back_cut_short(env, kid):
    with pytest.raises(SubagentLifecycleError) as refused:
        await env.service.retire_key(kid)
    message = str(refused.value)
    assert refused.value.code == "UNKNOWN_KEY"
    assert message.startswith("Unknown handle key ") and len(message) < ECHO_CHARS + 40
    assert "…" in message


async def test_a_short_unknown_kid_is_named_back_whole(env):
    with pytest.raises(SubagentLifecycleError, match=r"^Unknown handle key 'nope'\.$"):
        await env.service.retire_key("nope")
