"""Test doubles for code built on the agent runtime; public, documented, loopback-only."""

from agent.testing.fake_openai import FakeOpenAIServer

__all__ = ["FakeOpenAIServer"]
