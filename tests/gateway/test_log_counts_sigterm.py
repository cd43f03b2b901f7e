"""A real `switchboard run`, SIGTERM'd within the ten minutes of a refusal's count, tells that count as it stops."""

from __future__ import annotations

import urllib.error
import urllib.request

from tests.gateway.cli_process import Running, write_config

WEB_TOKEN = "web-page-token-0123456789"


def _refused(url: str) -> None:
    try:
        urllib.request.urlopen(url, timeout=10)
    except urllib.error.HTTPError as exc:
        assert exc.code == 401
    else:
        raise AssertionError("not refused")


def test_a_sigterm_within_the_window_tells_the_refusals_counted(tmp_path):
    config = write_config(tmp_path / "switchboard.yaml", {
        "state_dir": str(tmp_path / "state"), "server": {"port": 0},
        "platforms": {"web": {"enabled": True, "token": WEB_TOKEN}}})
    with Running(tmp_path, "--config", str(config)) as gateway:
        gateway.started()
        for _ in range(4):
            _refused(f"{gateway.url}/chat/api/history")
        gateway.wait_for("refused: ")
        assert gateway.stop() == 0
    refused = [line for line in gateway.lines if "refused: " in line]
    assert len(refused) == 2, gateway.lines
    assert "(and 2 more like it in the last " in refused[1], refused
    assert gateway.lines.index(refused[1]) > min(i for i, line in enumerate(gateway.lines) if "shutting down" in line)
