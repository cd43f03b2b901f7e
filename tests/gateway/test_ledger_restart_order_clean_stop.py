"""A completion turn a clean stop cut short keeps its place (it runs again first in its chat) but is charged no
death of the next process until it has begun again there, and is charged one from then: one killed while it starts
did not die of that turn, whose results, with ``inbox.max_attempts: 1``, were sent as they are instead of through
the model."""

from agent.models.scripted import ScriptedModel
from gateway.ledger import COMPLETION_PREFIX
from gateway.ledger_failures import UNDELIVERABLE
from gateway.testing import RecordingAdapter, make_config
from tests.gateway.ledger_restarts import delegating, parent, started_again, stopped
from tests.gateway.test_dead_letters import killed_now


class KilledAtStart(RecordingAdapter):
    """Keeps, as it starts, the state a SIGKILL then would leave (`killed_now`): the gateway's start has begun
    its run, and no turn has run again yet."""

    def __init__(self, tmp_path) -> None:
        super().__init__()
        self._tmp_path = tmp_path
        self.restore = lambda: None

    async def start(self, sink, commands=()) -> None:
        self.restore = killed_now(self._tmp_path)
        await super().start(sink, commands)


async def cut_short_by_a_clean_stop(tmp_path, gateways):
    """A clean stop while a completion turn ran, "second" waiting behind it; the config (``inbox.max_attempts``
    1: one death charged to the turn gives it up)."""
    config = make_config(tmp_path, display={"busy_input_mode": "queue", "interim_assistant_messages": True},
                         inbox={"max_attempts": 1})
    gateway, chat, _ = await delegating(gateways, config)
    await chat.say("second")
    await stopped(gateway, tmp_path, crash=False)  # the completion turn is cut short, its mark left for the next start
    return config


async def restarted(tmp_path, gateways, config):
    """Started once more: its chat, and what its model had read when it was asked each message."""
    gateway, chat, read = await started_again(gateways, config, 2)
    [row] = gateway.store.delegations.recent(1)
    assert row.status == "delivered"
    return chat, read


async def test_a_completion_turn_cut_short_by_a_clean_stop_is_not_charged_a_death_before_it_runs_again(
        tmp_path, gateways):
    config = await cut_short_by_a_clean_stop(tmp_path, gateways)
    killed = KilledAtStart(tmp_path)
    gateway = await gateways(config, [killed], model=ScriptedModel({"parent": parent(True)}))
    await gateway.stop(grace=0)
    killed.restore()  # that start was killed as its platform started

    chat, read = await restarted(tmp_path, gateways, config)
    assert chat.texts() == ["results", "re: second"]  # through the model, first, once each
    assert any(text.startswith(COMPLETION_PREFIX) for text in read["second"])


async def test_a_completion_turn_cut_short_by_a_clean_stop_is_charged_a_death_once_it_runs_again(
        tmp_path, gateways):
    config = await cut_short_by_a_clean_stop(tmp_path, gateways)
    model = ScriptedModel({"parent": parent(True)})
    gateway = await gateways(config, [RecordingAdapter()], model=model)
    await model.reached("completion")  # begun again
    await stopped(gateway, tmp_path, crash=True)

    chat, read = await restarted(tmp_path, gateways, config)
    texts = chat.texts()
    assert texts[0].startswith(UNDELIVERABLE) and "found it" in texts[0]  # given up on, sent as it is, first
    assert texts[1:] == ["re: second"]
