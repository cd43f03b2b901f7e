import errno
import sqlite3

import pytest

from platforms.not_recorded import storage_refusal


@pytest.mark.parametrize("exc", [
    OSError(errno.ENOSPC, "No space left on device"),
    OSError(errno.EDQUOT, "Disk quota exceeded"),
    OSError(errno.EFBIG, "File too large"),
    OSError(errno.EIO, "Input/output error"),
    OSError(errno.EROFS, "Read-only file system"),
])
def test_a_disk_that_cannot_be_written_is_a_storage_refusal(exc):
    assert storage_refusal(exc)


@pytest.mark.parametrize("exc", [
    TimeoutError(),
    ConnectionRefusedError(errno.ECONNREFUSED, "Connection refused"),
    ConnectionResetError(errno.ECONNRESET, "Connection reset by peer"),
    FileNotFoundError(errno.ENOENT, "No such file or directory"),
    OSError("no errno"),
])
def test_other_os_errors_are_not_taken_for_storage(exc):
    """Handed over again and again as a full disk would be, they held every later event behind them."""
    assert not storage_refusal(exc)


def test_sqlite_refusals_that_end_are_storage_and_a_broken_statement_is_not():
    full = sqlite3.OperationalError("database or disk is full")
    full.sqlite_errorcode = sqlite3.SQLITE_FULL
    assert storage_refusal(full)
    broken = sqlite3.OperationalError("no such table: x")
    broken.sqlite_errorcode = sqlite3.SQLITE_ERROR
    assert not storage_refusal(broken)
