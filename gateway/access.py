"""Who may talk to the gateway on the public chat platforms."""

from __future__ import annotations

from gateway.config import Config
from platforms.base import Inbound

#: Platforms reachable by strangers: they serve only listed users unless allow_all is set.
GUARDED = frozenset({"telegram", "slack", "discord"})

REFUSAL = (
    "Sorry — this assistant only answers people its operator has allowed. "
    "If you should have access, ask them to add your user id ({user_id}) to the allowed users."
)


def refused_user(text: str) -> str | None:
    """The user id a `REFUSAL` names, when ``text`` is one; else None."""
    before, after = REFUSAL.split("{user_id}")
    if len(text) > len(before) + len(after) and text.startswith(before) and text.endswith(after):
        return text[len(before):len(text) - len(after)]
    return None


def allowed(config: Config, inbound: Inbound) -> bool:
    """Whether ``allowed_users`` names the sender: by id, or by the username the adapter
    reports (`Inbound.user_name`). An entry of digits only is an id (Telegram's and Discord's
    are numbers): a username that happens to be all digits does not match it. Spaces around an
    entry do not count (``ADMIN_ID=123 `` in a ``.env`` file, or one saved with Windows line
    ends): no id or username holds one, so kept, it would lock its user out without a word."""
    if inbound.platform not in GUARDED:
        return True
    settings = getattr(config.platforms, inbound.platform)
    if settings.allow_all:
        return True
    entries = {str(u).strip().lstrip("@").lower() for u in settings.allowed_users}
    if inbound.user_id.lower() in entries:
        return True
    name = (inbound.user_name or "").lstrip("@").lower()
    return bool(name) and not name.isdigit() and name in entries
