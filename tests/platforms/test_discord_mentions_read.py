"""Mentions of other people, roles and channels as the model reads them (`platforms.discord_inbound`): by the
names the message's own payload gives, never as the ids Discord writes; the real discord.py client against
the loopback fake."""

from __future__ import annotations

import platforms.discord  # noqa: F401  (first: imports discord.py without its audioop warning)
from tests.discord_client import fake_discord, running_discord
from tests.platforms.test_discord_catch_up import Sink, dm_seen_once, run, stop

GUILD, CHANNEL, OTHER_CHANNEL, THREAD, USER, BOB, STRANGER = 500, 600, 601, 701, 42, 456, 457
GONE = 999

fake = fake_discord()
running = running_discord()


async def test_a_guild_message_reads_users_roles_channels_and_threads_by_name(fake, running):
    _, got = running
    fake.add_channel(GUILD, OTHER_CHANNEL)
    fake.push_guild_message(GUILD, OTHER_CHANNEL, USER, "a thread", thread_id=THREAD)
    fake.push_guild_message(GUILD, CHANNEL, BOB, "hello", name="bob")
    release = fake.add_role(GUILD, "release team")
    fake.push_guild_message(
        GUILD, CHANNEL, USER, mention_bot=True,
        text=f"ask <@{BOB}> (or <@!{BOB}>) about <#{OTHER_CHANNEL}> and <#{THREAD}>? cc <@&{release}> "
             f"<@&{GONE}> <#{GONE}> @everyone; `<@{BOB}>` and ```\n<#{THREAD}>\n``` are code")
    await fake.wait_for(lambda: got)
    assert got[0].text == f"ask @bob (or @bob) about #channel-601 and #thread-701? cc @release team " \
                          f"<@&{GONE}> <#{GONE}> @everyone; `<@{BOB}>` and ```\n<#{THREAD}>\n``` are code"


async def test_a_dm_reads_the_users_it_names_and_leaves_server_roles_and_channels_as_written(fake, running):
    _, got = running
    # Bob's display name is anyone's choice, his username no one else's: the model reads the one the gateway names
    # senders by, so that "@bob" here is the "[@bob]" of his own messages.
    fake.push_dm(BOB, "hello", name="bob", global_name="*Alice* @everyone")
    fake.push_dm(USER, f"is <@{BOB}> on <#{CHANNEL}> with <@&{GONE}>?")
    await fake.wait_for(lambda: len(got) == 2)
    assert got[1].text == f"is @bob on <#{CHANNEL}> with <@&{GONE}>?"


async def test_an_account_on_a_discriminator_is_read_by_name_and_discriminator(fake, running):
    _, got = running
    fake.push_guild_message(GUILD, CHANNEL, STRANGER, "beep", name="Deploy Bot")
    fake._users[str(STRANGER)]["discriminator"] = "4821"  # a bot's account keeps its name#1234
    fake.push_guild_message(GUILD, CHANNEL, USER, f"what did <@{STRANGER}> say?", mention_bot=True)
    await fake.wait_for(lambda: got)
    assert got[0].text == "what did @Deploy Bot#4821 say?"


async def test_an_edit_reads_mentions_as_a_message_does(fake, running):
    adapter, got = running
    edits: list[str] = []

    async def edited(platform: str, chat: str, thread: str | None, message: str, text: str) -> None:
        edits.append(text)

    adapter.bind_edits(edited)
    fake.push_guild_message(GUILD, CHANNEL, BOB, "hello", name="bob")
    message = fake.push_guild_message(GUILD, CHANNEL, USER, "ask someone", mention_bot=True)
    await fake.wait_for(lambda: got)
    fake.edit_message(CHANNEL, message, f"<@{fake.bot_id}> ask <@{BOB}> in <#{CHANNEL}>")
    await fake.wait_for(lambda: edits)
    assert edits == ["ask @bob in #channel-600"]


async def test_a_forward_reads_this_servers_channels_and_roles_and_the_bot_by_name(fake, running):
    _, got = running
    release = fake.add_role(GUILD, "release team")
    fake.push_guild_message(GUILD, CHANNEL, BOB, "hello", name="bob")
    fake.push_guild_message(GUILD, CHANNEL, USER, "hi", thread_id=THREAD, thread_owner=fake.bot_id)
    await fake.wait_for(lambda: got)
    # discord.py keeps no user of a forwarded message's mentions: only the bot's own is known without them.
    fake.push_guild_message(GUILD, CHANNEL, USER, f"<@{fake.bot_id}> <@{BOB}> see <#{CHANNEL}>, <@&{release}>",
                            thread_id=THREAD, forwarded=True)
    await fake.wait_for(lambda: len(got) == 2)
    assert got[1].text == f"@switchboard <@{BOB}> see #channel-600, @release team"


async def test_a_message_caught_up_after_a_restart_reads_mentions_as_a_live_one_does(fake):
    store, _ = await dm_seen_once(fake)
    fake.push_guild_message(GUILD, CHANNEL, BOB, "hello", name="bob")
    missed = fake.push_dm(USER, f"did <@{BOB}> answer?")  # while the gateway was down: in the history only
    sink = Sink(fake)
    adapter = await run(fake, store, sink)
    try:
        await sink.has(missed)
    finally:
        await stop(adapter)
    assert [e.text for e in sink.events if e.event_id == missed] == ["did @bob answer?"]


async def test_an_escaped_mention_stays_as_written_as_discord_shows_it(fake, running):
    _, got = running
    # Discord shows "\<@&321>" as the id written (its client writes it for "\@release team": how people find an id
    # to give), and reads "\`" as a backtick, which opens no code: "@release team" lost the id the user gave.
    release = fake.add_role(GUILD, "release team")
    fake.push_guild_message(GUILD, CHANNEL, BOB, "hello", name="bob")
    fake.push_guild_message(
        GUILD, CHANNEL, USER, mention_bot=True,
        text=f"ping \\<@&{release}> in \\<#{CHANNEL}>, not \\<@{BOB}>; \\`<@{BOB}>\\` and \\\\`<@{BOB}>`")
    await fake.wait_for(lambda: got)
    assert got[0].text == f"ping \\<@&{release}> in \\<#{CHANNEL}>, not \\<@{BOB}>; \\`@bob\\` and \\\\`<@{BOB}>`"
