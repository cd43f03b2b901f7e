"""Mentions in a slash command's text (its ``args``) as the command and the model read them
(`platforms.discord_mentions.in_command`): by the names Discord resolves with the interaction, as a message's
mentions are read, never as the ids Discord writes; the real discord.py client against the loopback fake."""

from __future__ import annotations

import platforms.discord  # noqa: F401  (first: imports discord.py without its audioop warning)
from platforms.base import CommandSpec
from tests.discord_client import fake_discord, running_discord

GUILD, CHANNEL, OTHER_CHANNEL, THREAD, USER, BOB = 500, 600, 601, 701, 42, 456
GONE = 999

fake = fake_discord()
running = running_discord(commands=(CommandSpec("new", "Start a new session"),))


async def test_a_slash_commands_text_reads_users_roles_and_channels_by_name(fake, running):
    _, got = running
    fake.add_channel(GUILD, OTHER_CHANNEL)
    fake.push_guild_message(GUILD, OTHER_CHANNEL, USER, "a thread", thread_id=THREAD)
    fake.push_guild_message(GUILD, CHANNEL, BOB, "hello", name="bob")
    release = fake.add_role(GUILD, "release team")
    fake.push_interaction("new", USER, CHANNEL, guild=GUILD,
                          args=f"ask <@{BOB}> (<@!{BOB}>) about <#{OTHER_CHANNEL}> and <#{THREAD}>, cc <@&{release}>")
    await fake.wait_for(lambda: got)
    assert got[0].is_command
    assert got[0].text == "/new ask @bob (@bob) about #channel-601 and #thread-701, cc @release team"


async def test_unknown_ids_code_and_escaped_mentions_stay_as_written(fake, running):
    _, got = running
    fake.push_guild_message(GUILD, CHANNEL, BOB, "hello", name="bob")
    release = fake.add_role(GUILD, "release team")
    fake.push_interaction("new", USER, CHANNEL, guild=GUILD,
                          args=f"<@{GONE}> <@&{GONE}> <#{GONE}> @everyone; `<@{BOB}>`, \\<@&{release}> and <@{BOB}>")
    await fake.wait_for(lambda: got)
    assert got[0].text == f"/new <@{GONE}> <@&{GONE}> <#{GONE}> @everyone; `<@{BOB}>`, \\<@&{release}> and @bob"


async def test_a_command_reads_as_its_text_form_does(fake, running):
    _, got = running
    # A plugin's command reads its words alike whichever way it was used: typed as a message, or as a slash command.
    fake.push_dm(BOB, "hello", name="bob")
    fake.push_dm(USER, f"!new ask <@{BOB}> about it")
    fake.push_interaction("new", USER, args=f"ask <@{BOB}> about it")
    await fake.wait_for(lambda: len(got) == 3)
    assert [event.text for event in got[1:]] == ["!new ask @bob about it", "/new ask @bob about it"]


async def test_a_mention_of_no_snowflake_stays_as_written_and_the_command_is_handed_over(fake, running):
    _, got = running
    fake.push_guild_message(GUILD, CHANNEL, BOB, "hello", name="bob")
    # Read as a number, 4,301 digits were refused (ValueError) after "thinking…": the command was lost, unanswered.
    huge, arabic = "<@" + "1" * 4301 + ">", "<@\u0664\u0665\u0666>"  # <@456> in Arabic-Indic digits: no mention
    fake.push_interaction("new", USER, CHANNEL, guild=GUILD, args=f"{huge} {arabic} <@{BOB}>")
    await fake.wait_for(lambda: got)
    assert got[0].text == f"/new {huge} {arabic} @bob"
