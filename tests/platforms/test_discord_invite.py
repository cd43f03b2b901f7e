"""The invite link docs/platforms/discord.md gives a bot the permissions the adapter's calls need."""

import re
from pathlib import Path

DOC = Path(__file__).resolve().parents[2] / "docs" / "platforms" / "discord.md"

NEEDED = {  # Discord's permission bits
    "View Channels": 1 << 10,  # on_message for the channels it is asked in
    "Send Messages": 1 << 11,  # replies, notices, the progress card
    "Attach Files": 1 << 15,  # send_file: a message with the file attached (403 Missing Permissions without)
    "Read Message History": 1 << 16,  # the message a user replied to; the lookup of a post whose answer was lost
    "Send Messages in Threads": 1 << 38,  # the same inside threads
}


def test_the_invite_link_asks_for_every_permission_the_bot_uses_and_its_table_sums_to_it():
    text = DOC.read_text(encoding="utf-8")
    asked = int(re.search(r"oauth2/authorize\?\S*permissions=(\d+)", text).group(1))
    table = re.search(r"^\| permission \| value \| why \|\n\|[-|]+\|\n((?:\|.*\|\n)+)", text, re.M).group(1)
    rows = {row.split("|")[1].strip(): int(row.split("|")[2]) for row in table.splitlines()}
    assert sum(rows.values()) == asked, "the table's permissions do not add up to the link's"
    assert [name for name, bit in NEEDED.items() if not asked & bit] == [], "the link lacks these"
    assert rows == NEEDED
    assert f"`permissions={asked}`" in text  # the sentence below the link names the same number
