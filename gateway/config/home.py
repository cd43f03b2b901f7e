"""The home directory, under which the defaults live and to which a ``~`` in a path points.

A container run with an arbitrary uid (``docker run --user 12345``, OpenShift) often has no
``$HOME`` and no entry for its uid in the password database: `Path.home` and `Path.expanduser`
then raise. Here that is a configuration problem like any other, one line naming what to set;
a lookup that only might have found something under the home directory (the user's config
file) finds nothing there instead.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path


class NoHome(ValueError):
    """A path starts with ``~`` (or ``~user``) and there is no such home directory. ``str()`` goes
    after the path it is about: "<path> starts with ~, and …; write the path in full …"."""


def home() -> Path | None:
    """``$HOME``, else the home of the process's user in the password database; None with neither."""
    try:
        return Path.home()
    except RuntimeError:
        return None


def why_no_home() -> str:
    """Why `home` is None, in parentheses' words."""
    return f"$HOME is unset, and uid {os.getuid()} has no entry in the password database"


def expand_user(path: Path) -> Path:
    """``path`` with a leading ``~`` or ``~user`` made that home directory; raises `NoHome`."""
    try:
        return path.expanduser()
    except RuntimeError:
        tilde = path.parts[0]
        if tilde == "~":
            raise NoHome(f"starts with ~, and there is no home directory ({why_no_home()}); write the path in"
                         " full, or set $HOME") from None
        raise NoHome(f"starts with {tilde}, and there is no user {tilde[1:]} here; write the path in full") from None


def xdg_directory(env: Mapping[str, str], name: str) -> Path | None:
    """``$name`` (``XDG_CONFIG_HOME``, ``XDG_STATE_HOME``) as the XDG specification reads it: None
    when unset, empty or relative, which it says to ignore; so is a ``~`` that names no home directory."""
    value = env.get(name)
    if not value:
        return None
    try:
        path = expand_user(Path(value))
    except NoHome:
        return None
    return path if path.is_absolute() else None
