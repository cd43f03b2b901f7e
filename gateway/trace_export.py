"""Spans to an OTLP collector that may be down: one line when it stops taking them, one when it
takes them again.

The OTLP exporter logs every failed attempt, each with its own retry delay in the text
("retrying in 1.66s"), so the repeat filter (`gateway.log_repeats`) cannot fold them: a
collector down for a day wrote thousands of lines, and they pushed everything else out of the
console's recent warnings. `OutageReportingExporter` holds back the lines the exporter logs
while it exports and says instead, once, that traces are not getting through and why (the
first line held back), then, once, that they are again and how many spans were dropped
meanwhile: those of the exports that failed, and those the span processor's full queue dropped.
Exports run on the span processor's own thread: a collector that is down never slows a turn.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

log = logging.getLogger("gateway.telemetry")
_PROCESSOR = logging.getLogger("opentelemetry.sdk._shared_internal")
"""The batch span processor's logger."""
QUEUE_FULL = "Queue full, dropping %s."
"""What it logs at every span it drops, its queue full: spans come faster than exports take them."""


class _HeldBack(logging.Filter):
    """On the exporter's logger: keeps the records a thread logs between `hold` and `release`."""

    def __init__(self) -> None:
        super().__init__()
        self._local = threading.local()

    def hold(self) -> None:
        self._local.held = []

    def release(self) -> list[str]:
        held, self._local.held = self._local.held, None
        return held

    def filter(self, record: logging.LogRecord) -> bool:
        held = getattr(self._local, "held", None)
        if held is None:
            return True
        held.append(record.getMessage())
        return False


class OutageReportingExporter(SpanExporter):
    """``exporter`` (sending to ``shown_as``, the collector as the log names it) with its failures
    reported once per outage instead of once per attempt."""

    def __init__(self, exporter: SpanExporter, shown_as: str) -> None:
        self._exporter = exporter
        self._shown_as = shown_as
        self._logger = logging.getLogger(type(exporter).__module__)
        self._held = _HeldBack()
        self._logger.addFilter(self._held)
        # Ahead of the processor's own filter, which lets one line of a kind through every 20 s.
        _PROCESSOR.filters.insert(0, self._queue_full)
        self._lock = threading.Lock()
        """Over `_dropped`, which the queue also adds to, on the thread that ends a span."""
        self._dropped: int | None = None
        """Spans dropped since the collector stopped taking them; None while it takes them."""

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        self._held.hold()
        try:
            result = self._exporter.export(spans)
            problem = None
        except Exception as exc:  # an exporter bug must not end the processor's thread
            result, problem = SpanExportResult.FAILURE, f"{type(exc).__name__}: {exc}"
        finally:
            held = self._held.release()
        with self._lock:
            dropped = self._dropped
            self._dropped = None if result is SpanExportResult.SUCCESS else (dropped or 0) + len(spans)
        if result is SpanExportResult.SUCCESS:
            if dropped is not None:
                log.info("traces reach %s again; %d spans were dropped while they did not", self._shown_as, dropped)
        elif dropped is None:
            log.warning("traces could not be sent to %s (%s); spans are dropped until it takes them again,"
                        " which is logged", self._shown_as, problem or (held[0] if held else "the export failed"))
        return result

    def _queue_full(self, record: logging.LogRecord) -> bool:
        """Whether the processor's ``record`` goes on to be logged: while an outage is reported, a span
        its full queue drops is counted in it instead. A collector that does not answer holds each
        export for the exporter's timeout, so the queue fills: its drops were missing from the count."""
        if record.msg != QUEUE_FULL:
            return True
        with self._lock:
            if self._dropped is None:
                return True
            self._dropped += 1
            return False

    def shutdown(self) -> None:
        self._logger.removeFilter(self._held)
        _PROCESSOR.removeFilter(self._queue_full)
        self._exporter.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return self._exporter.force_flush(timeout_millis)
