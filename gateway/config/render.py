"""The effective configuration as YAML, and the secrets it holds.

Both walk the settings dataclasses by their field metadata, so a new secret
field is masked and registered for log redaction without touching this module.
A password written into a URL (``http://user:password@host``) of any setting
counts as a secret too, and so does a user name standing alone (a token:
``https://tk-…@proxy/v1``) and the value of a query or fragment parameter named
like a credential (``?api-key=…``, ``&token=…``, ``sig``, ``secret``,
``password``…): HTTP clients log the URLs they request. Which parts are
credentials follows `gateway.config.secret_values.shown_url`, so what is shown
without them and what the log masks agree.
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Mapping
from pathlib import Path

import yaml

from gateway.config.secret_values import CREDENTIAL_NAMES, MIN_LENGTH, env_secret_values, url_credentials
from gateway.config.sections import Config

MASK = "***"
_URL_PASSWORD = re.compile(r"(\b[A-Za-z][A-Za-z0-9+.-]*://[^\s/?#@:]*:)([^\s/?#@]+)@")
"""``scheme://user:`` and the password after it, wherever a URL appears in a string."""
_URL_USER_ALONE = re.compile(r"(\b[A-Za-z][A-Za-z0-9+.-]*://)([^\s/?#@:]+)@")
"""``scheme://`` and a user name with no password after it: a token more often than a name."""
_QUERY_CREDENTIAL = re.compile(
    rf"([?&#][^\s=&#]*(?:{CREDENTIAL_NAMES})[^\s=&#]*=)([^\s&#]+)", re.IGNORECASE)
"""``?name=``, ``&name=`` or ``#name=`` of a query or fragment parameter named like a credential, and
its value."""
_URL = re.compile(r"\b[A-Za-z][A-Za-z0-9+.-]*://[^\s\"'<>]+")


def render_effective_config(config: Config, env: Mapping[str, str] | None = None) -> str:
    """YAML that loads back into ``config``, except that set secrets read ``"***"``, and so
    does any other string holding a secret's value (a token pasted into the wrong key), also
    one of ``env`` (`os.environ` when None) that a secret setting falls back to.

    Unset secrets stay null, so the output shows which credentials are missing.
    """
    secrets = frozenset(s for s in config_secrets(config, env) if len(s) >= MIN_LENGTH)
    plain = _as_written(_plain(config, mask=True), secrets)
    return yaml.safe_dump(plain, sort_keys=False, allow_unicode=True, default_flow_style=False)


def config_secrets(config: Config, env: Mapping[str, str] | None = None) -> list[str]:
    """Every secret value that is set, for `gateway.logging.register_secret`; with the value of each
    variable of ``env`` (`os.environ` when None) a secret setting falls back to (``$OPENAI_API_KEY``)."""
    found: list[str] = []
    _plain(config, mask=False, found=found)
    return list(dict.fromkeys(found + sorted(env_secret_values(os.environ if env is None else env))))


def _as_written(obj: object, secrets: frozenset[str]) -> object:
    """``obj`` as a config file must spell it: a string holding a secret masked, and a literal ``${``
    escaped as ``$${``, which the loader would otherwise expand (keys are never expanded)."""
    if isinstance(obj, dict):
        return {key: _as_written(value, secrets) for key, value in obj.items()}
    if isinstance(obj, list):
        return [_as_written(item, secrets) for item in obj]
    if isinstance(obj, str) and any(secret in obj for secret in secrets):
        return MASK
    if isinstance(obj, str):
        return obj.replace("${", "$${")
    return obj


def _plain(obj: object, *, mask: bool, found: list[str] | None = None) -> object:
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        out = {}
        for f in dataclasses.fields(obj):
            if f.metadata.get("internal"):
                continue
            value = getattr(obj, f.name)
            if f.metadata.get("secret") and value not in (None, ""):
                if found is not None:
                    found.append(str(value))
                out[f.name] = MASK if mask else value
            else:
                out[f.name] = _plain(value, mask=mask, found=found)
        return out
    if isinstance(obj, Mapping):
        return {key: _plain(value, mask=mask, found=found) for key, value in obj.items()}
    if isinstance(obj, (tuple, list)):
        return [_plain(item, mask=mask, found=found) for item in obj]
    if isinstance(obj, Path):
        return str(obj)
    if isinstance(obj, str) and "://" in obj:
        if found is not None:
            found.extend(value for url in _URL.findall(obj) for value in sorted(url_credentials(url)))
        for pattern in (_URL_PASSWORD, _URL_USER_ALONE, _QUERY_CREDENTIAL):
            obj = pattern.sub(lambda m: _credential(m, mask=mask, found=found), obj)
    return obj


def _credential(match: re.Match[str], *, mask: bool, found: list[str] | None) -> str:
    """The match with its second group, the credential, masked (and collected into ``found`` unless
    shorter than `MIN_LENGTH`: a user name such as ``git`` masked all over the log would mangle words)."""
    if found is not None and len(match.group(2)) >= MIN_LENGTH:
        found.append(match.group(2))
    return f"{match.group(1)}{MASK if mask else match.group(2)}{match.string[match.end(2):match.end()]}"
