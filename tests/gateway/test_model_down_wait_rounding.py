"""A wait told as "up to" is never said shorter than it is: rounded up at the unit it is said in."""

import pytest

from gateway.replies import down_waiting_text


@pytest.mark.parametrize(("seconds", "said"), [
    (7.3, "8 seconds"), (8.0000001, "8 seconds"), (60, "a minute"), (80, "2 minutes"), (90, "2 minutes"),
    (479.9999999, "8 minutes"), (600, "10 minutes"), (3601, "2 hours"),
])
def test_the_wait_left_is_rounded_up(seconds, said):
    assert f"waiting up to {said} for it;" in down_waiting_text(seconds)
