"""What `switchboard run` says once it runs: one line per thing it serves, at a URL to open (the web chat, the
console, the webhook routes), or what to enable when there is nothing to talk through; never a token."""

from __future__ import annotations

from gateway.serve import served
from gateway.testing import make_config
from tests.gateway.cli_process import Running, write_config

WEB_TOKEN = "web-page-token-0123456789"


def test_run_names_the_web_chat_the_console_and_the_webhook_routes(tmp_path):
    config = write_config(tmp_path / "switchboard.yaml", {
        "state_dir": str(tmp_path / "state"), "server": {"port": 0},
        "platforms": {"web": {"enabled": True, "token": WEB_TOKEN},
                      "webhook": {"enabled": True, "routes": {"hook": {"secret": "s3cret-0"}}}}})
    with Running(tmp_path, "--config", str(config)) as gateway:
        gateway.started()
        base = gateway.url
        gateway.wait_for(f"web chat at {base}/chat$")
        gateway.wait_for(f"operator console at {base}/console$")
        gateway.wait_for(f"webhook routes at {base}/webhooks/<route> \\(hook\\)$")
    assert not any(WEB_TOKEN in line or "s3cret-0" in line for line in gateway.lines)


def test_run_with_nothing_to_talk_through_says_what_to_enable(tmp_path):
    config = write_config(tmp_path / "switchboard.yaml", {
        "state_dir": str(tmp_path / "state"), "server": {"port": 0, "console": False}})
    with Running(tmp_path, "--config", str(config)) as gateway:
        gateway.started()
        gateway.wait_for(f"set platforms.web.enabled: true in {config} for the web chat at {gateway.url}/chat")
    assert not any("operator console at" in line for line in gateway.lines)


def test_urls_are_ones_a_browser_here_opens(tmp_path):
    config = make_config(tmp_path, platforms={"web": {"enabled": True}})
    assert served(config, "0.0.0.0", 8080, {"web"})[:2] == [
        "web chat at http://127.0.0.1:8080/chat", "operator console at http://127.0.0.1:8080/console"]
    assert served(config, "::1", 8080, {"web"})[0] == "web chat at http://[::1]:8080/chat"
