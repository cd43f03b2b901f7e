"""Test doubles for code built on the agent runtime; public, documented, loopback-only."""

from agent.testing.clock import FakeClock
from agent.testing.fake_openai import FakeOpenAIServer
from agent.testing.turns import inside_turn

__all__ = ["FakeClock", "FakeOpenAIServer", "inside_turn"]
