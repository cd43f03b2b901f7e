"""Which parts of a shared workspace a session's file tools may not touch.

A host whose sessions serve different people over one workspace (the gateway: one per
chat) gives each session a `FileScope` as the ``file_scope`` service. Inside each of
its ``private`` folders only ``own`` is the session's; everything else there belongs to
someone else, and the file tools refuse it (`FileScope.check`) and leave it out of
listings (`FileScope.hidden_in`). Nor may a session write a file where one of those
folders, its own, or a folder above them is or is still to be (`FileScope.check_write`):
the host could then never make it, and every later file of its owners would fail. A
session without the service sees the whole workspace.
Subagents in the same process inherit it with the parent's other services.

Paths are compared after symlinks are resolved (`resolve_in_workspace`), so a link
from the session's own folder into another's leads nowhere. Nor does the own folder when it, or
a folder on its way, is itself a symlink (`_resolved`): resolved, it would be the folder the link
names, another owner's, whose files the session could then read, and into which its host would
put the files meant for this one. And whether a path lies in a divided
folder regardless of case and Unicode normalization (`_folded`), since on a file system that
ignores them (macOS's and Windows' by default) ``ATTACHMENTS/Telegram/…`` is that folder too.
What is the session's own is matched exactly: elsewhere two chats may differ only in case.
"""

from __future__ import annotations

import os
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from agent._errors import ToolError

SERVICE = "file_scope"


@dataclass(frozen=True, slots=True)
class FileScope:
    """The ``file_scope`` service: folders of the workspace divided among owners, and this session's."""

    private: tuple[str, ...]
    """Workspace-relative folders divided among owners. The folder itself may be listed
    (showing only ``own``); what lies inside it is off limits but for ``own``."""
    own: str | None = None
    """The workspace-relative folder, inside one of ``private``, that is this session's;
    None: nothing in ``private`` is."""

    def check(self, target: Path, root: Path, path: str) -> None:
        """Raise `ToolError` when ``target`` (resolved, inside the resolved workspace ``root``)
        is someone else's; ``path`` is how the model named it."""
        own, areas = self._resolved(root)
        area = self._foreign_area(target, own, areas)
        if area is not None:
            mine = f"only {self.own}/ is this session's" if self.own else "none of it is this session's"
            if self.own and own is None:
                mine += ", and it is a symlink (or a folder on its way is), which leads to none of its files"
            raise ToolError(f"{path!r} is not this session's to use: it is in {area}/, "
                            f"where other people's files are kept and {mine}")

    def check_write(self, target: Path, root: Path, path: str) -> None:
        """`check`, and also raise `ToolError` when ``target`` is, or lies on the way to, a
        divided folder or the session's own: a file written there would take the place the
        host keeps for those folders."""
        self.check(target, root, path)
        own, areas = self._resolved(root)
        folders = [area for _, area in areas] + ([_folded(own)] if own is not None else [])
        folded = _folded(target)
        if target != root and any(folder[:len(folded)] == folded for folder in folders):
            inside = f"write inside {self.own}/ instead" if self.own else "write elsewhere"
            raise ToolError(f"{path!r} cannot be written: it is where the folders of other people's files are "
                            f"kept ({', '.join(f'{name}/' for name, _ in areas)}); {inside}")

    def hidden_in(self, root: Path) -> Callable[[Path], bool]:
        """For listings of the resolved workspace ``root``: whether an entry found walking it is
        someone else's, and so left out (the folders are resolved once, not per entry)."""
        own, areas = self._resolved(root)
        return lambda entry: self._foreign_area(entry, own, areas) is not None

    def _resolved(self, root: Path) -> tuple[Path | None, list[tuple[str, tuple[str, ...]]]]:
        """The session's own folder, resolved; None when it has none, or when it, or a folder on its
        way below ``root``, is a symlink: resolved, the own folder would be wherever the link leads,
        another owner's (``attachments/telegram/42`` a link to ``…/43``, made with ``execute_code``),
        and that owner's files this session's. And the divided folders, resolved and `_folded`."""
        own = None
        if self.own:
            written = Path(os.path.normpath(root / self.own))
            own = written if written.resolve() == written else None
        return own, [(area.rstrip("/"), _folded((root / area).resolve())) for area in self.private]

    @staticmethod
    def _foreign_area(target: Path, own: Path | None, areas: list[tuple[str, tuple[str, ...]]]) -> str | None:
        """The private folder holding ``target`` when ``target`` is someone else's, else None."""
        if own is not None and (target == own or own in target.parents):
            return None
        folded = _folded(target)
        return next((name for name, area in areas if len(folded) > len(area) and folded[:len(area)] == area), None)


def _folded(path: Path) -> tuple[str, ...]:
    """The names of ``path`` as a file system that ignores case and Unicode normalization takes them
    (caseless matching, as Unicode defines it): names that fold alike may be one folder there."""
    return tuple(unicodedata.normalize("NFD", unicodedata.normalize("NFD", name).casefold()) for name in path.parts)
