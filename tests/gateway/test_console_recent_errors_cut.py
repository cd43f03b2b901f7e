"""The console's recent warnings and errors keep each line cut, as it shows every other error.

The log keeps up to 16,000 characters of a line: a warning quoting the page a proxy answered a model
call with kept all of them, and fifty such lines went to every console page at each change."""

from __future__ import annotations

import logging

from gateway.console.recent_errors import RecentErrors

log = logging.getLogger("gateway.test_recent_errors")
KEY = "sk-proj-Abcdefghijklmnopqrstuvwxyz0123456789"
PAGE = "<p>the upstream server did not answer</p>" * 1000


def test_a_warning_quoting_a_whole_page_is_kept_cut_masked_and_with_its_end() -> None:
    recent = RecentErrors()
    recent.attach()
    try:
        log.warning("model call failed (key %s): 502 %s and the end", KEY, PAGE)
        try:
            raise RuntimeError(PAGE)
        except RuntimeError:
            log.exception("a tool failed")
    finally:
        recent.detach()
    failed, warned = recent.entries()
    assert len(warned["message"]) <= 1000 and len(failed["exception"]) <= 1000
    assert warned["message"].startswith("model call failed (key ***): 502 <p>")
    assert warned["message"].endswith("</p> and the end")  # where a fold says how many more came
    assert failed["exception"].startswith("RuntimeError: <p>the upstream")
