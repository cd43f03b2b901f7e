"""A user a signing-in proxy names ``web``, the name the chat gives everyone without one: their chats are their
own (``web:<chat>``), not those the gateway kept before the proxy was set up, and they are named as any user."""

from __future__ import annotations

import aiohttp

from platforms.base import Accepted, Inbound
from platforms.web import WebChatAdapter
from tests.web_client import serve


async def test_a_user_the_proxy_names_web_has_chats_of_their_own(tmp_path) -> None:
    taken: list[Inbound] = []

    async def take(inbound: Inbound) -> Accepted:
        taken.append(inbound)
        return Accepted(None, f"web|{inbound.chat_id}|", False)

    adapter = WebChatAdapter(user_header="X-User", allow_all=True, history_reader=lambda chat, limit: [],
                             files_dir=tmp_path)
    await adapter.start(take)
    runner, base = await serve(adapter)
    try:
        async with aiohttp.ClientSession() as http:
            for user, key in (("alice", "k-alice-0001"), ("web", "k-webuser-001")):
                async with http.post(f"{base}/chat/api/messages", json={"chat": "c1", "text": "hi", "key": key},
                                     headers={"X-User": user, "Host": "chat.example.com"}) as reply:
                    assert reply.status == 202, await reply.text()
        assert [(m.chat_id, m.user_id, m.user_name) for m in taken] == [
            ("alice:c1", "alice", "alice"), ("web:c1", "web", "web")]
    finally:
        await adapter.stop()
        await runner.cleanup()
