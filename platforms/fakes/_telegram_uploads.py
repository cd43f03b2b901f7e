"""Files a bot sends to the fake Telegram: ``sendDocument`` and ``sendPhoto``.

As on the Bot API, a file comes in a ``multipart/form-data`` request: the ``document`` or
``photo`` field says ``attach://<name>`` and the part ``<name>`` holds the bytes (aiogram's
form for an ``InputFile``). Telegram takes uploads up to 50 MB (413 "Request Entity Too
Large" beyond), photos up to 10 MB and only as pictures it can decode ("IMAGE_PROCESS_FAILED"
otherwise), and a caption of at most 1024 characters after entity parsing ("message caption
is too long"). The message sent is kept in ``messages[chat]`` with ``document`` (``file_name``,
``mime_type``, ``data``) or ``photo`` (``data``), and ``caption``/``entities`` in place of the text.
"""

from __future__ import annotations

import time
from typing import Any

from platforms.fakes._telegram_api import ApiError, flag, utf16
from platforms.fakes._telegram_html import HtmlError, parse_html

MAX_UPLOAD = 50 * 1000 * 1000
MAX_PHOTO = 10 * 1000 * 1000
MAX_CAPTION = 1024
_PICTURES = (b"\xff\xd8\xff", b"\x89PNG\r\n\x1a\n")


class TelegramUploads:
    """The upload half of `FakeTelegram`, which holds the messages and mixes this in."""

    uploads: dict[str, tuple[str, str, bytes]]
    """The file parts of the request being answered: part name -> (file name, type, bytes)."""

    def _uploaded(self, params: dict[str, Any], field: str) -> tuple[str, str, bytes]:
        value = str(params.get(field) or "")
        if not value.startswith("attach://") or value[len("attach://"):] not in self.uploads:
            raise ApiError(400, f"Bad Request: there is no {field} in the request")
        name, content_type, data = self.uploads[value[len("attach://"):]]
        if len(data) > MAX_UPLOAD:
            raise ApiError(413, "Request Entity Too Large")
        if not data:
            raise ApiError(400, "Bad Request: file must be non-empty")
        return name, content_type, data

    def _caption(self, params: dict[str, Any]) -> tuple[str, list[dict[str, Any]]]:
        raw = str(params.get("caption") or "")
        if params.get("parse_mode") == "HTML" and raw:
            try:
                caption, entities = parse_html(raw)
            except HtmlError as exc:
                raise ApiError(400, f"Bad Request: can't parse entities: {exc}") from None
        else:
            caption, entities = raw, []
        if utf16(caption) > MAX_CAPTION:
            raise ApiError(400, "Bad Request: message caption is too long")
        return caption, entities

    def _send_document(self, params: dict[str, Any]) -> dict[str, Any]:
        name, content_type, data = self._uploaded(params, "document")
        chat_id = self._writable_chat(params)  # type: ignore[attr-defined]
        document = {"file_name": name, "mime_type": content_type, "file_size": len(data)}
        return self._file_message(params, chat_id, "document", {**document, "data": data}, document)

    def _send_photo(self, params: dict[str, Any]) -> dict[str, Any]:
        name, content_type, data = self._uploaded(params, "photo")
        if len(data) > MAX_PHOTO or not data.startswith(_PICTURES):
            raise ApiError(400, "Bad Request: IMAGE_PROCESS_FAILED")
        chat_id = self._writable_chat(params)  # type: ignore[attr-defined]
        size = {"width": 1, "height": 1, "file_size": len(data)}
        return self._file_message(params, chat_id, "photo", {"file_name": name, "data": data}, [size])

    def _file_message(self, params: dict[str, Any], chat_id: int, kind: str, stored: dict[str, Any],
                      shown: Any) -> dict[str, Any]:
        caption, entities = self._caption(params)
        replied = self._replied(params, chat_id)  # type: ignore[attr-defined]
        file_id = f"sent-{next(self._file_ids)}"  # type: ignore[attr-defined]
        thread_id = self._landing(params, chat_id, replied)  # type: ignore[attr-defined]
        record = {
            "message_id": next(self._message_ids[str(chat_id)]),  # type: ignore[attr-defined]
            "date": int(time.time()),
            "text": caption,
            "caption": caption,
            "entities": entities,
            "raw": str(params.get("caption") or ""),
            "edits": [],
            "thread_id": thread_id,
            "silent": flag(params.get("disable_notification")),
            "parse_mode": params.get("parse_mode"),
            "reply_to": None if replied is None else replied["message_id"],
            kind: stored,
        }
        self.messages[str(chat_id)].append(record)  # type: ignore[attr-defined]
        ids = {"file_id": file_id, "file_unique_id": file_id}
        attached = [{**s, **ids} for s in shown] if isinstance(shown, list) else {**shown, **ids}
        message = {
            "message_id": record["message_id"], "date": record["date"],
            "chat": self._chat(chat_id),  # type: ignore[attr-defined]
            "from": self.bot_user,  # type: ignore[attr-defined]
            kind: attached,
            **({"caption": caption} if caption else {}),
            **({"caption_entities": entities} if entities else {}),
            **({} if replied is None else {"reply_to_message": replied}),
            **self._thread_fields(chat_id, thread_id),  # type: ignore[attr-defined]
        }
        return message
