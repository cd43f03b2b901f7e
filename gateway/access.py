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


def allowed(config: Config, inbound: Inbound) -> bool:
    if inbound.platform not in GUARDED:
        return True
    settings = getattr(config.platforms, inbound.platform)
    if settings.allow_all:
        return True
    names = {str(u).lstrip("@").lower() for u in settings.allowed_users}
    candidates = {inbound.user_id.lower()}
    if inbound.user_name:
        candidates.add(inbound.user_name.lstrip("@").lower())
    return bool(names & candidates)
