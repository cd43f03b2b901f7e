"""``platforms.web.trusted_proxies``: which peers may set the signing-in proxy's user header, and the warning
when nothing says so on an address other hosts can reach."""

from __future__ import annotations

import pytest

from gateway.config import ConfigError

OFF_LOOPBACK = "server: {host: 0.0.0.0, console: false}\nplatforms:\n  web: "
PROXIED = "{enabled: true, user_header: X-Forwarded-User, allowed_users: [alice]"


def test_a_proxy_header_off_loopback_without_trusted_proxies_or_a_token_is_warned_about(load):
    _, warnings = load(OFF_LOOPBACK + PROXIED + "}")
    assert warnings == [
        'platforms.web: the X-Forwarded-User header is taken from any client that reaches server.host ("0.0.0.0"):'
        " one that gets around the signing-in proxy can send it with the name of a user in allowed_users and chat"
        " as them; set platforms.web.trusted_proxies to the proxy's address (or set platforms.web.token)"]
    for enough in (", trusted_proxies: [10.0.0.5, '10.1.0.0/16', '::1']}", ", token: s3cret-token}"):
        config, warnings = load(OFF_LOOPBACK + PROXIED + enough)
        assert warnings == []
    assert config.platforms.web.token == "s3cret-token"
    _, warnings = load("platforms:\n  web: " + PROXIED + "}")  # on loopback only this machine reaches it
    assert warnings == []


def test_trusted_proxies_are_addresses_or_networks_and_need_a_user_header(load):
    config, _ = load(OFF_LOOPBACK + PROXIED + ", trusted_proxies: ['10.0.0.5', 'fd00::/8']}")
    assert config.platforms.web.trusted_proxies == ("10.0.0.5", "fd00::/8")
    for bad, why in (("proxy.example.com", ""), ("10.0.0.5/24", " (its host bits are set)")):
        with pytest.raises(ConfigError) as info:
            load(OFF_LOOPBACK + PROXIED + f", trusted_proxies: ['10.0.0.0/8', '{bad}']}}")
        assert info.value.errors == [
            "platforms.web.trusted_proxies[1]: expected an IP address or network such as 10.0.0.5 or 10.0.0.0/24,"
            f" got '{bad}'{why}"]
    with pytest.raises(ConfigError) as info:
        load("platforms:\n  web: {enabled: true, trusted_proxies: [10.0.0.5]}")
    assert info.value.errors == [
        "platforms.web.trusted_proxies: needs platforms.web.user_header, the header it says who may set"]


def test_a_zone_in_trusted_proxies_is_an_error_not_a_check_left_out(load):
    # A connection's address comes without its zone (aiohttp's request.remote): fe80::1%eth0 let in fe80::1 from
    # every link, whatever interface the entry named.
    with pytest.raises(ConfigError) as info:
        load(OFF_LOOPBACK + PROXIED + ", trusted_proxies: ['fe80::1%eth0']}")
    assert info.value.errors == [
        "platforms.web.trusted_proxies[0]: expected an IP address or network such as 10.0.0.5 or 10.0.0.0/24,"
        " got 'fe80::1%eth0' (a zone such as %eth0 is not checked: give the address without it)"]
