"""A misspelt ``platforms:`` at the top level. Unknown keys inside it are errors, and so is a platform written
outside it, but the section's own name misspelt was a warning: the gateway started with every platform in it
silently off."""

from __future__ import annotations

import pytest

from gateway.cli import EXIT_CONFIG, main
from gateway.config import ConfigError

TELEGRAM = "  telegram: {enabled: true, token: '123456:AAE', allow_all: true}\n"


@pytest.mark.parametrize("name", ["platfroms", "platform", "Platforms"])
def test_a_misspelt_platforms_section_is_an_error_that_names_it(load, name):
    with pytest.raises(ConfigError) as info:
        load(f"{name}:\n{TELEGRAM}")
    assert info.value.errors == [f'{name}: unknown key (did you mean "platforms"?); a misspelt section here would'
                                 " silently leave something off"]
    assert info.value.warnings == []


def test_other_misspelt_sections_stay_warnings(load):
    # A file written for a newer version still loads (docs/configuration.md, "Errors and warnings").
    config, warnings = load("sever: {port: 9000}\ndisplay: {platfroms: {}}\n")
    assert warnings == ['sever: unknown key (did you mean "server"?)',
                        'display.platfroms: unknown key (did you mean "platforms"?)']
    assert config.server.port == 8080


def test_a_command_stops_with_the_configuration_status(write, capsys):
    # `ask`, which loads the file as `run` does, and ends by itself when it is not stopped (the offline demo model).
    path = write(f"platfroms:\n{TELEGRAM}")
    assert main(["--config", str(path), "ask", "hi"]) == EXIT_CONFIG
    err = capsys.readouterr().err
    assert 'error: platfroms: unknown key (did you mean "platforms"?)' in err
    assert "the configuration has errors" in err


def test_a_near_miss_beside_the_platforms_section_stays_a_warning(load):
    # A mapping kept for its YAML anchor (docs/configuration.md: anchors and merges work) leaves no platform off
    # when the section itself is there: it loaded, warned about, before a misspelt section became an error.
    config, warnings = load("platform_defaults: &telegram {enabled: true, token: '123456:AAE', allow_all: true}\n"
                            "platforms:\n  telegram: *telegram\n")
    assert warnings == ['platform_defaults: unknown key (did you mean "platforms"?)']
    assert config.platforms.telegram.enabled
