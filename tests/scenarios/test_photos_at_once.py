"""Photos from many chats at once: each is decoded to be fitted for the model (up to 40 million
pixels, about 550 MB at its peak), so the process decodes at most `MAX_DECODES` at a time, whatever
the number of chats, and every photo still reaches the model. Telegram through aiogram against
FakeTelegram, the model behind FakeOpenAIServer."""

from __future__ import annotations

import threading

from agent import _image_fit, images
from agent._image_fit import MAX_DECODES
from agent.testing import FakeOpenAIServer
from gateway.testing import make_config, start_gateway
from platforms.fakes.telegram import FakeTelegram
from platforms.telegram import TelegramAdapter
from tests.pictures import picture
from tests.polling import until

CHATS = [41, 42, 43, 44, 45]


class Decodes:
    """Counts the decodes running at once, each held until `release`; and the turns that asked for one."""

    def __init__(self, monkeypatch) -> None:
        self.running = self.most = self.asked = 0
        self._lock, self._go = threading.Lock(), threading.Event()
        run, decode = images.run_decoding, _image_fit._fit

        async def asked(call):
            self.asked += 1
            return await run(call)

        def decoding(*args):
            with self._lock:
                self.running += 1
                self.most = max(self.most, self.running)
            try:
                self._go.wait()
                return decode(*args)
            finally:
                with self._lock:
                    self.running -= 1

        monkeypatch.setattr(images, "run_decoding", asked)
        monkeypatch.setattr(_image_fit, "_fit", decoding)

    async def all_waiting(self, count: int) -> None:
        """Until ``count`` turns asked for a decode and `MAX_DECODES` of them are decoding, held here
        (the others queued for a decode thread, in none)."""
        await until(lambda: self.asked == count and self.running == MAX_DECODES)

    def release(self) -> None:
        self._go.set()


async def test_photos_from_five_chats_at_once_are_decoded_at_most_two_at_a_time_and_all_reach_the_model(
        tmp_path, monkeypatch) -> None:
    decodes = Decodes(monkeypatch)
    async with FakeTelegram() as fake, FakeOpenAIServer(api_key="sk-test", default_text="Nice picture.") as openai:
        model = {"provider": "openai", "name": "fake-model", "base_url": openai.base_url, "api_key": "sk-test",
                 "supports_vision": True}
        config = make_config(tmp_path, platforms={"telegram": {"allow_all": True}}, model=model)
        adapter = TelegramAdapter(fake.token, api_base=fake.base_url, polling_timeout=10)
        gateway = await start_gateway(config, [adapter])
        try:
            for chat in CHATS:
                fake.push_photo(chat, picture("PNG", (300, 200)), caption=f"what is in chat {chat}'s picture?")
            await decodes.all_waiting(len(CHATS))
            assert decodes.running == MAX_DECODES == 2  # the other three wait for their turn, not decoding
            decodes.release()
            await fake.wait_for(lambda: all(fake.messages[str(chat)] for chat in CHATS), timeout=10)
        finally:
            decodes.release()  # a failed check must not leave the decodes held for ever
            await gateway.stop(grace=0)
    assert decodes.most == MAX_DECODES
    seen = sorted(
        (user["content"][0]["text"], [part["type"] for part in user["content"][1:]])
        for user in ([m for m in request["messages"] if m["role"] == "user"][-1] for request in openai.requests))
    assert seen == [(f"what is in chat {chat}'s picture?", ["image_url"]) for chat in CHATS]
