"""A start with a big backlog: the gateway was down for an hour on a busy day.

The inbox of a state directory is filled through the gateway's own store (a gateway that never
started, on a clock an hour back, records ``CHATS`` chats' messages as a platform would have handed
them over: one chat with a long backlog first, then the others), as a SIGKILL leaves it. A second
gateway then starts on it, with a model that takes ``MODEL_SECONDS`` a call and counts its calls
in flight. Prints the time from the start to the first answer of a chat other than the long one,
to the last answer, the most model calls at once, the process's peak resident memory (and how much
the start and the replay added to it), and whether the answers said they came late.

Run: .venv/bin/python bench/restart_backlog_bench.py [chats] [messages-per-chat] [long-chat-messages] [model-ms]
"""

from __future__ import annotations

import asyncio
import resource
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agent import ModelRequest, ModelResponse  # noqa: E402
from gateway.app import Gateway  # noqa: E402
from gateway.host import AgentHost  # noqa: E402
from gateway.testing import RecordingAdapter, make_config  # noqa: E402
from platforms.base import Inbound  # noqa: E402

MODEL_SECONDS = 0.2
"""How long the model takes a call: set from the command line."""
DOWN_SECONDS = 3600.0


class PastClock:
    """The system clock, ``DOWN_SECONDS`` back: what the earlier process recorded, it recorded an hour ago."""

    def time(self) -> float:
        return time.time() - DOWN_SECONDS

    def monotonic(self) -> float:
        return time.monotonic()

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)


class CountingModel:
    name = "counting"
    context_window = 128_000
    supports_vision = False

    def __init__(self) -> None:
        self.in_flight = self.most = self.calls = 0

    async def complete(self, request: ModelRequest) -> ModelResponse:
        self.in_flight += 1
        self.calls += 1
        self.most = max(self.most, self.in_flight)
        try:
            await asyncio.sleep(MODEL_SECONDS)
        finally:
            self.in_flight -= 1
        return ModelResponse(text="answer")


def message(chat: str, n: int) -> Inbound:
    return Inbound("chat", chat, None, f"user-{chat}", "alice", f"message {n} of {chat}", f"{chat}-ev-{n}",
                   is_private=True, sent_at=time.time() - DOWN_SECONDS)


async def main(chats: int, per_chat: int, long_chat: int) -> None:
    tmp = Path(tempfile.mkdtemp(prefix="backlog-bench-"))
    config = make_config(tmp)
    earlier = Gateway(AgentHost(config), [RecordingAdapter()], clock=PastClock())  # never started: killed
    inbox = earlier.store.inbox
    for n in range(long_chat):
        inbox.accept(message("long", n), f"t-long-{n}")
    for n in range(per_chat):
        for c in range(chats):
            inbox.accept(message(f"c{c}", n), f"t-c{c}-{n}")
    await earlier.store.durable()
    await earlier.stop(grace=0)
    total = long_chat + chats * per_chat

    chat, model = RecordingAdapter(), CountingModel()
    gateway = Gateway(AgentHost(config, model=model), [chat])
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    began = time.monotonic()
    await gateway.start()
    started = time.monotonic() - began

    def answers(other_than_long: bool = False) -> int:
        return sum(1 for m in chat.messages if m.kind == "reply" and m.text == "answer"
                   and not (other_than_long and m.outbound.chat_id == "long"))

    await chat.wait_for(lambda: answers(other_than_long=True) >= 1, timeout=600)
    first = time.monotonic() - began
    await chat.wait_for(lambda: answers() >= total, timeout=3600)
    last = time.monotonic() - began
    rss_peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
    late = sum(1 for m in chat.messages if m.text.startswith("⏱"))
    await gateway.stop(grace=0)
    print(f"{total} messages in {chats + (1 if long_chat else 0)} chats ({long_chat} in one, {per_chat} in each other),"
          f" model {MODEL_SECONDS:.2f} s a call")
    print(f"start returned after {started:.2f} s; first answer of another chat {first:.2f} s; last answer {last:.2f} s")
    print(f"model calls {model.calls}, most at once {model.most}; late notes {late}; peak RSS {rss_peak / 1024:.0f} MiB"
          f" ({(rss_peak - rss_before) / 1024:.0f} MiB above the state before the start)")


if __name__ == "__main__":
    args = [int(a) for a in sys.argv[1:]]
    chats, per_chat, long_chat, model_ms = args + [300, 10, 100, 200][len(args):]
    MODEL_SECONDS = model_ms / 1000
    asyncio.run(main(chats, per_chat, long_chat))
