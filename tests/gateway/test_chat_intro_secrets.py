"""`gateway.chat_intro`: the terminal's first screen names the model's URL without a credential."""

from __future__ import annotations

from gateway.chat_intro import chat_intro
from gateway.testing import make_config


def test_a_token_given_as_the_urls_user_name_does_not_show(tmp_path):
    # A proxy's token often rides in a URL as its user name alone (https://TOKEN@host): masking only a
    # password left it on a screen that is shared and screenshotted.
    url = "https://sk-tok3n-s3cret-9@proxy.example/v1"
    intro = chat_intro(make_config(tmp_path, model={"provider": "openai", "name": "m", "base_url": url}))
    assert "openai model m at https://proxy.example/v1" in intro and "s3cret" not in intro
