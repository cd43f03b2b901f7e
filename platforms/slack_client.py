"""The Web API client the Slack adapter makes its calls with: slack-sdk's, but for a 200 whose body is no JSON
object (text, or JSON that is a list, a number, ``true``), which a proxy or a misconfigured gateway in front of
Slack answers.

slack-sdk keeps a ``text/plain`` body as a string and parses any other as JSON, whatever it holds, and its
``SlackResponse.validate`` then reads ``.get("ok")`` of a 200's body: `AttributeError`, which says nothing of
Slack's answer and which no translation of the adapter's (`platforms.slack_errors`) took for one. Here such a
body is `SlackApiError`, as validate raises for a body Slack says is not ok: the translation makes it the
`NetworkError` of any other answer that is not Slack's JSON. Apart from `platforms.slack_errors` because
`platforms.slack_connection`, which that module imports, makes Socket Mode's client of it too.
"""

from __future__ import annotations

from typing import Any

from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient
from slack_sdk.web.async_slack_response import AsyncSlackResponse


class SlackWebClient(AsyncWebClient):
    """`AsyncWebClient`, its Web API calls' 200s with no JSON object raising `SlackApiError` (whose ``response``
    holds the body as slack-sdk read it) in place of `AttributeError`. Uploads to the URL
    ``files.getUploadURLExternal`` gives, whose ``text/plain`` answer is right, do not come here: the adapter posts
    them itself (`platforms.slack_uploads`)."""

    async def _request(self, *, http_verb: str, api_url: str, req_args: dict[str, Any]) -> dict[str, Any]:
        # Overridden (slack-sdk's seam between the HTTP answer and validate) rather than `api_call`, whose
        # AttributeError could as well be a bug's: tests/platforms/test_slack_non_object_bodies.py pins it.
        res = await super()._request(http_verb=http_verb, api_url=api_url, req_args=req_args)
        data = res.get("data")
        if res.get("status_code") == 200 and data and not isinstance(data, dict | bytes):
            response = AsyncSlackResponse(client=self, http_verb=http_verb, api_url=api_url, req_args=req_args,
                                          **res)
            # Worded as validate's own failure; the URL names the method, never the token (a header).
            raise SlackApiError(f"The request to the Slack API failed: a 200 with no JSON object of Slack's"
                                f" ({type(data).__name__}). (url: {api_url}, status: 200)", response)
        return res
