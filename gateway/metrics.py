"""Prometheus metrics of one gateway, served at ``/metrics`` (see docs/console.md for the list).

Each gateway has its own `prometheus_client.CollectorRegistry`, never the process-wide
default one, so several gateways in one process (tests, embedding) do not collide.
Counters and histograms are fed as things happen: by the gateway's events
(`gateway.events`) and by agent hooks (``subagent_stop``, ``model_call``). Gauges are
read when Prometheus scrapes: the outbox's pending and failed parts and the dead
letters from the store, children by state from the lifecycle's host view, the
seconds since each platform last handed the gateway an event, whether each
platform's connection is up, whether the state database can be written, whether its
log is checkpointed off the event loop (`gateway.store.checkpointer.ended`), whether another
process holds its write lock (`gateway.store.write_lock`), and the messages waiting to be answered and
whether the gateway is catching up after its start (`gateway.backlog.GatewayBacklog`, which ``/healthz`` shows too), and
whether each model server is taken for down (`model_servers_up`), and each model's calls held there (`models_held`).

Each group of those reads is guarded on its own (`LiveReads`): one that raises (a read while a
full disk keeps the store from writing again what it rolled back, a failing device, one still under
way after `gateway.backlog.READ_WAIT`) gives its gauges as that group last read them (left out
until it first reads), logs once until it reads again, makes ``switchboard_storage_up`` 0 when
SQLite refused it, and shows in ``switchboard_live_read_up`` and ``switchboard_live_read_age_seconds``.
Were the whole page a 500 instead, the gauge that says the database is down could never be read at
the moment it is; were the group left out, its series went stale for Prometheus in that scrape, its
graphs gapped and every ``absent()`` alert on it fired.

Labels are bounded: platform, kind, outcome, role, state, status, model, server (a model server's base URL, of the
configuration), group (of the gauges read at each scrape). Never a chat,
user, session or message id. A model's name is what the provider answered as, so it is
bounded too: the first `MAX_MODELS` names seen, then ``other`` (`GatewayMetrics.model_label`).
The turns and deliveries of each platform are on the page at zero from the start, each kind
and outcome: Prometheus sees no increase in a series that first appears at 1, so an alert on
``increase(...{outcome="failed"}[…]) > 0`` missed the first failure of each process.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import math
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Histogram, exposition, generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from agent import Clock, HookRegistry, TurnResult
from agent.models import _outage
from gateway.backlog import GatewayBacklog
from gateway.events import GatewayListener
from gateway.live_reads import LiveReads
from gateway.store import checkpointer
from lifecycle import HostView, SubagentState
from platforms.connection import ConnectionState
from platforms.messages import scalar_text

if TYPE_CHECKING:
    from gateway.session_registry import SessionRegistry
    from gateway.sessions import GatewaySession, RunningTurn, WorkItem
    from gateway.store import GatewayStore, OutboxRow

log = logging.getLogger("gateway.metrics")

CONTENT_TYPE = getattr(exposition, "CONTENT_TYPE_PLAIN_0_0_4", CONTENT_TYPE_LATEST)
"""The classic text format every Prometheus reads (our names need none of the newer escaping)."""
TURN_BUCKETS = (0.5, 1, 2, 5, 10, 20, 30, 60, 120, 300, 600, 1800)
CHILD_BUCKETS = (1, 5, 10, 30, 60, 120, 300, 600, 1800, 3600)
MODEL_CALL_BUCKETS = (0.25, 0.5, 1, 2, 5, 10, 20, 30, 60, 120, 300)
"""A model call's answer takes from a fraction of a second (a short reply) to minutes (a long one, retries)."""
MAX_DEPTH = 8
"""How deep the gauge of children looks into orchestrators' own children."""
MAX_MODELS = 20
"""Model names kept as label values; later ones count as `OTHER_MODEL`. The name is the one the
provider's reply gives (``gpt-4o-2024-08-06`` for ``gpt-4o``, a router's pick): a provider that
puts a new one in each reply would otherwise add series without end, until Prometheus chokes."""
MAX_MODEL_NAME = 100
OTHER_MODEL = "other"
TURN_KINDS = ("message", "completion")
TURN_OUTCOMES = ("done", "stopped", "superseded", "shutdown", "failed")
"""As `gateway.replies.outcome` tells them."""
DELIVERY_KINDS = ("reply", "completion", "notice", "interim", "command")
DELIVERY_OUTCOMES = ("sent", "failed")


class GatewayMetrics(GatewayListener):
    """Subscribe it to the gateway's events and register its `hooks`; `exposition` is the page."""

    def __init__(self, *, store: GatewayStore, sessions: SessionRegistry, children: HostView,
                 platforms: Iterable[str], clock: Clock,
                 connections: Callable[[], Mapping[str, ConnectionState]] = dict) -> None:
        """``connections``: each platform's connection now (`Gateway.connections`)."""
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        self.turns = Counter("switchboard_turns", "Turns that ended, by platform, kind (message or completion)"
                             " and outcome (done, stopped, superseded, shutdown, failed).",
                             ["platform", "kind", "outcome"], registry=r)
        self.turn_seconds = Histogram("switchboard_turn_duration_seconds", "Seconds turns ran, by platform and kind.",
                                      ["platform", "kind"], buckets=TURN_BUCKETS, registry=r)
        self.child_runs = Counter("switchboard_subagent_runs", "Children that finished, by role and status"
                                  " (completed, failed, error, interrupted, timeout).", ["role", "status"], registry=r)
        self.child_seconds = Histogram("switchboard_subagent_duration_seconds", "Seconds finished children ran.",
                                       ["role", "status"], buckets=CHILD_BUCKETS, registry=r)
        self.deliveries = Counter("switchboard_deliveries", "Outbox parts settled, by platform, kind and outcome"
                                  " (sent or failed).", ["platform", "kind", "outcome"], registry=r)
        self.limited = Counter("switchboard_platform_rate_limited", "Platform answers asking the gateway to"
                                    " slow down (HTTP 429 and the like).", ["platform"], registry=r)
        self.lookups = Counter("switchboard_outbox_lookups", "Parts the outbox looked up on the platform before"
                               " sending them again, by outcome (found: not sent twice; not_found; unknown).",
                               ["platform", "outcome"], registry=r)
        self.inbound_events = Counter("switchboard_inbound_events", "Events platforms handed the gateway.",
                                      ["platform"], registry=r)
        self.duplicates = Counter("switchboard_inbound_duplicates", "Events dropped as redeliveries of one seen"
                                  " before.", ["platform"], registry=r)
        self.tokens = Counter("switchboard_model_tokens", "Model tokens used, by model, role (parent, leaf,"
                              " orchestrator, compactor) and type (input or output).", ["model", "role", "type"],
                              registry=r)
        self.cost = Counter("switchboard_model_cost_usd", "Model cost in US dollars, as providers report it.",
                            ["model", "role"], registry=r)
        self.model_calls = Counter("switchboard_model_calls", "Model calls, by model, role and outcome (ok, or the"
                                   " kind of failure).", ["model", "role", "outcome"], registry=r)
        self.model_seconds = Histogram("switchboard_model_call_duration_seconds", "Seconds model calls that answered"
                                       " took, by model and role, retries included.", ["model", "role"],
                                       buckets=MODEL_CALL_BUCKETS, registry=r)
        self._clock = clock
        self._started = clock.monotonic()
        self._last_inbound: dict[str, float] = {}
        self._children: dict[tuple[object, tuple[str, ...]], Any] = {}
        """Each metric's child per label values (see `_child`)."""
        self._models: set[str] = set()
        self._models_capped = False
        self._odd_cost_logged = False
        self._platforms = sorted(set(platforms))
        for platform in self._platforms:  # present from the first scrape, at zero
            self.inbound_events.labels(platform)
            self.duplicates.labels(platform)
            self.limited.labels(platform)
            for kind in TURN_KINDS:
                for outcome in TURN_OUTCOMES:
                    self._child(self.turns, platform, kind, outcome)
            for kind in DELIVERY_KINDS:
                for outcome in DELIVERY_OUTCOMES:
                    self._child(self.deliveries, platform, kind, outcome)
        self.backlog = GatewayBacklog(store, self._platforms, clock)
        """What the gateway has still to work off, read for this page and ``/healthz``."""
        r.register(_Live(self, store, sessions, children, connections))

    def exposition(self) -> bytes:
        """The registry in Prometheus' text format (`CONTENT_TYPE`), without the ``_created`` series."""
        return generate_latest(_WithoutCreated(self.registry))

    def hooks(self, hooks: HookRegistry) -> None:
        hooks.register("subagent_stop", self._child_stopped)
        hooks.register("model_call", self._model_called)

    def inbound_ages(self) -> dict[str, float]:
        """Seconds since each platform last handed the gateway an event (since the start when none has)."""
        now = self._clock.monotonic()
        return {p: now - self._last_inbound.get(p, self._started) for p in self._platforms}

    # -- events ---------------------------------------------------------------------------

    def turn_ended(self, session: GatewaySession, item: WorkItem, running: RunningTurn, result: TurnResult | None,
                   outcome: str, seconds: float) -> None:
        self._child(self.turns, session.platform, item.kind, outcome).inc()
        self._child(self.turn_seconds, session.platform, item.kind).observe(seconds)

    def inbound(self, platform: str, *, duplicate: bool) -> None:
        self._last_inbound[platform] = self._clock.monotonic()
        if platform not in self._platforms:
            self._platforms.append(platform)
        self._child(self.inbound_events, platform).inc()
        if duplicate:
            self._child(self.duplicates, platform).inc()

    def settled(self, row: OutboxRow, status: str) -> None:
        self._child(self.deliveries, row.platform, row.kind, status).inc()

    def rate_limited(self, platform: str, retry_after: float) -> None:
        self.limited.labels(platform).inc()

    def looked_up(self, platform: str, outcome: str) -> None:
        self.lookups.labels(platform, outcome).inc()

    def _child(self, metric: Counter | Histogram, *labels: str) -> Any:
        """``metric.labels(*labels)``, looked up once: labels are bounded, and for each turn, part
        sent, model call and child `labels` would check and convert them again and take the
        metric's lock."""
        key = (metric, labels)
        child = self._children.get(key)
        if child is None:
            child = self._children[key] = metric.labels(*labels)
        return child

    # -- hooks ------------------------------------------------------------------------------

    async def _child_stopped(self, *, child_role: str, child_status: str, duration_ms: int, child_ran_here: bool,
                             child_model: str | None, child_usage: Mapping[str, Any], child_error_kind: str | None,
                             **_: Any) -> None:
        self._child(self.child_runs, child_role, child_status).inc()
        self._child(self.child_seconds, child_role, child_status).observe(duration_ms / 1000)
        if not child_ran_here:
            # Its model calls ran on a worker, where no model_call hook runs: count them once, now,
            # from its outcome, which tells only the calls that answered from the one that ended it.
            name = self.model_label(child_model)
            if calls := child_usage["api_calls"]:
                self._child(self.model_calls, name, child_role, "ok").inc(calls)
            if child_error_kind:
                self._child(self.model_calls, name, child_role, child_error_kind).inc()
            self._used(name, child_role, child_usage["prompt_tokens"], child_usage["completion_tokens"],
                       child_usage["cost_usd"])

    async def _model_called(self, *, role: str, model: str | None, prompt_tokens: int, completion_tokens: int,
                            cost_usd: float | None, duration_seconds: float, error: str | None, **_: Any) -> None:
        name = self.model_label(model)
        self._child(self.model_calls, name, role, error or "ok").inc()
        if error is None:
            # Failures stay out: calls not sent to a server taken for down end at once, time-outs at the limit,
            # and either would drag the quantiles of the answers (`switchboard_model_calls_total` counts them).
            self._child(self.model_seconds, name, role).observe(duration_seconds)
        self._used(name, role, prompt_tokens, completion_tokens, cost_usd)

    def model_label(self, model: str | None) -> str:
        """``model`` as a label value: ``unknown`` when the provider named none; itself when it is one of
        the first `MAX_MODELS` names seen (and at most `MAX_MODEL_NAME` characters); else `OTHER_MODEL`. A lone
        surrogate in it (JSON's ``"\\ud83d"``: half of an emoji) is U+FFFD: kept as it came, the page could not be
        encoded, and every scrape after that call was a 500."""
        name = scalar_text(model) if model else "unknown"
        if name in self._models:
            return name
        if len(self._models) >= MAX_MODELS or len(name) > MAX_MODEL_NAME:
            if len(self._models) >= MAX_MODELS and not self._models_capped:
                self._models_capped = True
                log.warning("metrics: more than %d model names seen (the latest: %.100r); the switchboard_model_*"
                            " metrics count the calls of every further one under model=%r", MAX_MODELS, name,
                            OTHER_MODEL)
            return OTHER_MODEL
        self._models.add(name)
        return name

    def _used(self, model: str, role: str, prompt_tokens: int, completion_tokens: int, cost_usd: float | None) -> None:
        if prompt_tokens:
            self._child(self.tokens, model, role, "input").inc(prompt_tokens)
        if completion_tokens:
            self._child(self.tokens, model, role, "output").inc(completion_tokens)
        if cost_usd is not None and 0 < cost_usd < math.inf:
            self._child(self.cost, model, role).inc(cost_usd)
        elif cost_usd and not self._odd_cost_logged:
            # A NaN made the counter NaN for the life of the process, and a negative cost raised at every call.
            self._odd_cost_logged = True
            log.warning("metrics: model %r reported a cost of %r US dollars; switchboard_model_cost_usd leaves out"
                        " every such cost", model, cost_usd)


class _WithoutCreated(Collector):
    """``registry`` less the ``<name>_created`` sample prometheus_client adds to each series of a counter or
    histogram. The classic text format has no place for it: Prometheus stores it as a gauge family of its own,
    one more series per series, named nowhere in the docs. Left out here, not by the process-wide switch
    (`prometheus_client.disable_created_metrics`), which would change an embedding application's own page."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self._registry = registry

    def collect(self) -> Iterator[Any]:
        for family in self._registry.collect():
            created = f"{family.name}_created"
            family.samples = [s for s in family.samples if s.name != created]
            yield family


class _Live(Collector):
    """The gauges read at each scrape, each group on its own (`LiveReads`)."""

    def __init__(self, metrics: GatewayMetrics, store: GatewayStore, sessions: SessionRegistry,
                 children: HostView, connections: Callable[[], Mapping[str, ConnectionState]]) -> None:
        self._metrics, self._store, self._sessions, self._children = metrics, store, sessions, children
        self._connections = connections
        self._reads = LiveReads(log, "/metrics", keep_last=True, clock=metrics._clock.monotonic)
        self._groups: tuple[tuple[str, Callable[[], list[GaugeMetricFamily]]], ...] = (
            ("outbox", self._outbox), ("subagents", self._subagents), ("sessions", self._sessions_now),
            ("platforms", self._platforms), ("backlog", self._backlog))

    def describe(self) -> list:
        return []  # read live: nothing to check for clashes ahead of time

    def collect(self) -> Iterator[GaugeMetricFamily]:
        reads = self._reads
        for group, read in self._groups:
            yield from reads.read(f"the {group}", read, [])
        read_up = GaugeMetricFamily("switchboard_live_read_up", "1 while the group's gauges were read in this scrape,"
                                    " 0 while their read fails or is still under way: they show what it last read"
                                    " (none before it first read).", labels=["group"])
        read_age = GaugeMetricFamily("switchboard_live_read_age_seconds", "Seconds since the group's gauges were"
                                     " last read (0: in this scrape); none before they first were.", labels=["group"])
        now = self._metrics._clock.monotonic()
        for group, _ in self._groups:
            failing = f"the {group}" in reads.failing
            read_up.add_metric([group], 0 if failing else 1)
            if (read_at := reads.read_at.get(f"the {group}")) is not None:
                read_age.add_metric([group], now - read_at if failing else 0)
        yield read_up
        yield read_age
        up = GaugeMetricFamily("switchboard_model_server_up", "1 while a model server the gateway has called is taken"
                               " for up, 0 while it is taken for down after failing calls in a row: calls to it are"
                               " not sent, but one every 10 to 60 s as a probe, until one is answered.",
                               labels=["server"])
        for server, is_up in model_servers_up().items():
            up.add_metric([server], 1 if is_up else 0)
        yield up
        held = GaugeMetricFamily("switchboard_model_held", "Calls of a model at a model server held (not sent, but one"
                                 " every 10 to 60 s as a probe): with reason server_error, 1 while the model is taken"
                                 " for down after failing calls in a row in the server's own words (the server answers"
                                 " other models); with reason rate_limited, the API keys whose calls of it are held"
                                 " after 429s in a row.", labels=["server", "model", "reason"])
        for (server, model), (down, keys) in models_held().items():
            held.add_metric([server, model, "server_error"], 1 if down else 0)
            held.add_metric([server, model, "rate_limited"], keys)
        yield held
        db = self._store.db
        # Last: it counts the reads above that SQLite refused as the database being down too.
        yield GaugeMetricFamily("switchboard_storage_up", "1 while SQLite can write the state database, 0 from a"
                                " write it refused (a full disk, a failing device) until writes have gone through for"
                                f" {db.recovery_seconds:g} s with none refused, and while it refuses the reads of"
                                " this page (see /healthz for why).",
                                value=0 if db.write_error or self._reads.storage_failed else 1)
        yield GaugeMetricFamily("switchboard_wal_checkpointer_up", "1 while the state database's log is checkpointed"
                                " off the event loop, 0 once that task ended (SQLite's commits checkpoint it again,"
                                " stalling every chat for tens of milliseconds now and then; a restart mends it).",
                                value=0 if checkpointer.ended(db) else 1)
        yield GaugeMetricFamily("switchboard_state_db_write_lock_held", "1 while another process holds the state"
                                " database's write lock (a transaction left open in an sqlite3 shell or a database"
                                " browser): nothing is recorded and no message answered until it ends (see /healthz"
                                " for since when).", value=1 if db.write_lock_held_since is not None else 0)

    def _outbox(self) -> list[GaugeMetricFamily]:
        counts = self._metrics.backlog.outbox_counts.now()  # as the scrape read them off the loop (`refresh`)
        dead = self._store.dead_letters.count()
        outbox = GaugeMetricFamily("switchboard_outbox_messages", "Outbox parts pending and failed (kept a week),"
                                   " and inbound events set aside as dead letters (dead).", labels=["status"])
        outbox.add_metric(["pending"], counts["pending"])
        outbox.add_metric(["failed"], counts["failed"])
        outbox.add_metric(["dead"], dead)
        return [outbox]

    def _subagents(self) -> list[GaugeMetricFamily]:
        # UNKNOWN is what a bad handle reads as: no child is ever in it.
        states = {s: 0 for s in SubagentState if not s.terminal and s is not SubagentState.UNKNOWN}
        # Every session's, loaded or not: children on Temporal workers outlive a restart, their chat unloaded.
        for child in live_children(self._children, self._children.sessions_with_children()):
            states[child.state] = states.get(child.state, 0) + 1
        gauge = GaugeMetricFamily("switchboard_subagents", "Children not finished, by state.", labels=["state"])
        for state, n in states.items():
            gauge.add_metric([state.value.lower()], n)
        return [gauge]

    def _sessions_now(self) -> list[GaugeMetricFamily]:
        sessions = list(self._sessions)
        return [GaugeMetricFamily("switchboard_sessions", "Sessions in memory (recently active).", value=len(sessions)),
                GaugeMetricFamily("switchboard_turns_running", "Turns running now.",
                                  value=sum(1 for s in sessions if s.running is not None))]

    def _platforms(self) -> list[GaugeMetricFamily]:
        ages = GaugeMetricFamily("switchboard_last_inbound_age_seconds", "Seconds since the platform last handed the"
                                 " gateway an event (since the start if none yet): a watchdog for connections that"
                                 " died silently.", labels=["platform"])
        for platform, age in self._metrics.inbound_ages().items():
            ages.add_metric([platform], age)
        up = GaugeMetricFamily("switchboard_platform_up", "1 while the platform can hand the gateway events (its"
                               " connection is up, or it has none: webhooks), 0 while reconnecting or down (see"
                               " /healthz for which and why).", labels=["platform"])
        for platform, state in self._connections().items():
            up.add_metric([platform], 1 if state.up else 0)
        return [ages, up]

    def _backlog(self) -> list[GaugeMetricFamily]:
        backlog = self._metrics.backlog.now()
        return [
            GaugeMetricFamily("switchboard_inbox_waiting", "Messages received and not answered yet (their turns running"
                              " or waiting), of the platforms configured.", value=backlog.inbox_waiting),
            GaugeMetricFamily("switchboard_inbox_oldest_seconds", "Seconds the first received of those messages has"
                              " waited (0: none waits).", value=backlog.inbox_oldest_seconds or 0),
            GaugeMetricFamily("switchboard_outbox_oldest_seconds", "Seconds the first journaled outbox part not sent"
                              " yet has waited, of the platforms configured (0: none waits).",
                              value=backlog.outbox_oldest_seconds or 0),
            GaugeMetricFamily("switchboard_catching_up", "1 while messages received before this start wait to be"
                              " answered, or outbox parts journaled before it wait to be sent (see /healthz).",
                              value=1 if backlog.catching_up else 0)]


def model_servers_up() -> dict[str, bool]:
    """Each model server this event loop's models have called (its base URL, without credentials or query): whether
    it is taken for up (`agent.models._outage`). The outages are the agent's, shared by every model on one server;
    it keeps no list of them but this one, read here as it stands."""
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:  # a page made outside the gateway's loop: its models' servers are not known there
        return {}
    return {server: outage.down_since is None for server, outage in _outage._SHARED.get(loop, {}).items()}


def models_held() -> dict[tuple[str, str], tuple[bool, int]]:
    """Each (server, model) this event loop's models have called, the first `MAX_MODELS`: whether the model is
    taken for down there, and how many API keys' calls of it are held over their rate limit (`agent.models._outage`:
    the keys are not told). The models are the configuration's (the parent's, ``delegation.model``, routes)."""
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:  # a page made outside the gateway's loop, as `model_servers_up`
        return {}
    return dict(itertools.islice(_outage.models_held(loop).items(), MAX_MODELS))


def live_children(view: HostView, session_ids: Iterable[str], depth: int = 0) -> Iterator[Any]:
    """Every live child of these sessions, and of those children (orchestrators), in launch order."""
    for sid in session_ids:
        for child in view.children(sid):
            yield child
            if depth < MAX_DEPTH:
                yield from live_children(view, [child.subagent_id], depth + 1)
