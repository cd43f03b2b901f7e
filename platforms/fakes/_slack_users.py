"""The fake Slack's users (`add_user`), as ``users.info`` describes them.

As on Slack, a user's ``name`` is their username, unique in the workspace and not theirs to change; the profile's
``display_name`` and ``real_name`` are anyone's to set, another member's name too. A deactivated user is still
described (``deleted``); an id the workspace does not know is ``user_not_found``.
"""

from __future__ import annotations

from typing import Any


class SlackUsers:
    """The user half of `FakeSlack`, which holds ``users`` and mixes this in."""

    users: dict[str, dict[str, Any]]
    """Slack's user objects by id (`add_user`)."""

    def add_user(self, user_id: str, name: str, *, display_name: str = "", real_name: str = "",
                 deleted: bool = False, is_bot: bool = False) -> dict[str, Any]:
        """A member of the workspace, as ``users.info`` describes them; returns the user object."""
        user = {"id": user_id, "team_id": self.team_id, "name": name, "deleted": deleted,  # type: ignore[attr-defined]
                "real_name": real_name, "is_bot": is_bot,
                "profile": {"display_name": display_name, "real_name": real_name}}
        self.users[user_id] = user
        return user

    def _users_info(self, params: dict[str, Any]) -> dict[str, Any]:
        user = self.users.get(str(params.get("user", "")))
        return {"ok": True, "user": user} if user is not None else {"ok": False, "error": "user_not_found"}
