"""A configuration error or warning that quotes a URL shows of it what `shown_url` would: no token
riding as the user name alone, no credential in the fragment (OAuth's ``#access_token=``), as no password
and no query credential. Such a URL typed into the wrong key (or its key mistyped) is quoted whole."""

from __future__ import annotations

import io

import pytest

from gateway.config import config_check
from gateway.config.secret_values import mask

TOKEN = "tk-live0123456789abcdef"
FRAGMENT = "frag0123456789secret"


@pytest.mark.parametrize(
    ("text", "line"),
    [
        (f'server: {{port: "https://{TOKEN}@proxy.example.com/v1"}}',
         'error: server.port: expected an integer ≥ 0 and ≤ 65535, got "https://***@proxy.example.com/v1"'),
        (f'server: {{port: "https://app.example.com/cb#access_token={FRAGMENT}&state=7"}}',
         'error: server.port: expected an integer ≥ 0 and ≤ 65535, got'
         ' "https://app.example.com/cb#access_token=***&state=7"'),
        (f'telemetry: "https://{TOKEN}@otel.example.com:4318/#token={FRAGMENT}"',
         'error: telemetry: expected a mapping, got "https://***@otel.example.com:4318/#token=***"'),
        # Cut short by the message before its "@": what is shown of the long token goes all the same.
        (f'server: {{port: "https://{TOKEN * 4}@proxy.example.com/v1"}}',
         'error: server.port: expected an integer ≥ 0 and ≤ 65535, got "https://***…"'),
        (f'delegation: {{compression_threshold_tokens: "https://{TOKEN}@proxy.example.com/"}}',
         'warning: delegation.compression_threshold_tokens: expected an integer ≥ 0, got'
         ' "https://***@proxy.example.com/"; ignored, using the default 0'),
    ],
)
def test_a_token_as_user_name_or_in_the_fragment_is_masked_in_errors_and_warnings(tmp_path, text, line):
    path = tmp_path / "config.yaml"
    path.write_text(text + "\n", encoding="utf-8")
    out, err = io.StringIO(), io.StringIO()
    config_check(str(path), out, err, env={})
    assert line in err.getvalue().splitlines(), err.getvalue()
    assert TOKEN[:12] not in err.getvalue() + out.getvalue() and FRAGMENT not in err.getvalue() + out.getvalue()


@pytest.mark.parametrize("message", [
    'got "alice@example.com"',  # an address, no URL: nothing to hide
    'got "https://hooks.example.com/in…"',  # cut past its authority, which has no user info
    "see docs/configuration.md#exit-status",
    'got "https://alice:***@example.com/"',  # a user name beside a password names an account
])
def test_what_is_no_credential_is_left_as_written(message):
    assert mask([message], frozenset()) == [message]
