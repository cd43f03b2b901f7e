"""A logging call whose arguments do not fit its message (a bug in the call) is one masked line: it
never raises into the code that logged, nor prints its arguments, secrets and all, on stderr."""

from __future__ import annotations

import io
import logging

from gateway.log_repeats import RepeatFilter
from gateway.logging import logging_installed, register_secret

SECRET = "b4d-args-secret-7e1d0c"


def test_arguments_that_do_not_fit_are_one_masked_line_not_an_exception(capsys) -> None:
    register_secret(SECRET)
    out = io.StringIO()
    logger = logging.getLogger("tests.bad")
    with logging_installed("INFO", stream=out) as handler:
        # Only ours: pytest's capture handler raises on such a record by design.
        logger.addHandler(handler)
        logger.propagate = False
        try:
            logger.warning("calling %s took %d ms", f"https://h/?t={SECRET}", "many")
            logger.warning("token %s", SECRET, "one too many")
            logger.warning("the next line is fine")
        finally:
            logger.removeHandler(handler)
            logger.propagate = True
    lines = out.getvalue().splitlines()
    assert len(lines) == 3, lines
    assert "calling %s took %d ms" in lines[0] and "the arguments do not fit the message: TypeError" in lines[0]
    assert "test_log_bad_arguments.py:" in lines[0]  # where the bad call is
    assert "https://h/?t=***" in lines[0]
    assert lines[2].endswith("the next line is fine")
    assert SECRET not in out.getvalue() + capsys.readouterr().err


def test_the_repeat_filter_alone_lets_such_a_record_through_to_the_handler() -> None:
    reported: list[logging.LogRecord] = []

    class Handler(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            reported.append(record)

    handler = Handler()
    handler.addFilter(RepeatFilter(30))
    logger = logging.getLogger("tests.bad.repeats")
    logger.addHandler(handler)
    logger.propagate = False
    try:
        logger.warning("%d", "x")  # raised TypeError out of this call
    finally:
        logger.removeHandler(handler)
        logger.propagate = True
    assert len(reported) == 1
