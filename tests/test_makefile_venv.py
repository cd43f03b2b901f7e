"""`make run`'s first step, the .venv: one a failed first run left is made again, not reused, and a
`python3` older than 3.11 is named with how to pick another, before any .venv is made.

The interpreters `make` is given are small scripts standing in for `python3`: they run the real one for the
version checks and record `-m venv` (making a .venv whose python takes every command), so no install runs.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="no make")

# `python -m venv [--clear] DIR`: DIR made anew with a python that takes every command (`-m pip install` too).
MAKES_A_VENV = """
if [ "$1" = -m ] && [ "$2" = venv ]; then
  echo "$*" >> "$CALLS"
  for dir; do :; done
  rm -rf "$dir" && mkdir -p "$dir/bin"
  printf '#!/bin/sh\\nexit 0\\n' > "$dir/bin/python" && chmod +x "$dir/bin/python"
  exit 0
fi
"""


def interpreter(path: Path, version_check_passes: bool) -> Path:
    version = f'exec "{sys.executable}" "$@"' if version_check_passes else (
        'case "$2" in *python_version*) echo 3.10.13; exit 0;; esac\nexit 1')  # what a Python 3.10 answers
    path.write_text(f"#!/bin/sh\n{MAKES_A_VENV}\n{version}\n")
    path.chmod(0o755)
    return path


def make(checkout: Path, python: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "CALLS": str(checkout / "calls")}
    return subprocess.run(["make", "--no-print-directory", ".venv/.installed", f"PYTHON={python}"], cwd=checkout,
                          env=env, capture_output=True, text=True, timeout=60)


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    shutil.copy(ROOT / "Makefile", tmp_path / "Makefile")
    (tmp_path / "pyproject.toml").write_text("")
    return tmp_path


def test_a_venv_left_without_pip_is_made_again(checkout):
    """Debian's python3 without python3-venv makes .venv/bin/python, then fails for want of pip; once the
    package was installed, every `make run` failed on that .venv (`No module named pip`) until it was deleted."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(checkout / ".venv")], check=True, timeout=60)
    result = make(checkout, interpreter(checkout / "python3", version_check_passes=True))
    assert result.returncode == 0, result.stderr
    assert (checkout / "calls").read_text() == "-m venv --clear .venv\n"
    assert (checkout / ".venv" / ".installed").exists()


def test_a_working_venv_is_kept(checkout):
    """pyproject.toml changed: the .venv is installed into again, not made anew."""
    venv_python = checkout / ".venv" / "bin" / "python"
    venv_python.parent.mkdir(parents=True)
    # The real interpreter for the check (its pip is there), and a `-m pip install` that installs nothing.
    venv_python.write_text(f'#!/bin/sh\n[ "$1" = -m ] && [ "$2" = pip ] && exit 0\nexec "{sys.executable}" "$@"\n')
    venv_python.chmod(0o755)
    result = make(checkout, interpreter(checkout / "python3", version_check_passes=True))
    assert result.returncode == 0, result.stderr
    assert not (checkout / "calls").exists()


def test_a_python_too_old_is_named_with_how_to_pick_another(checkout):
    """A first `make run` with Ubuntu 22.04's python3 (3.10) made a 3.10 .venv and failed in pip
    (`requires a different Python`); with PYTHON=python3.11 after it, the 3.10 .venv was reused and failed alike."""
    result = make(checkout, interpreter(checkout / "python3", version_check_passes=False))
    assert result.returncode != 0
    assert (f"Switchboard needs Python 3.11 or newer; {checkout / 'python3'} is 3.10.13: name a newer one, as in: "
            "make .venv/.installed PYTHON=python3.11") in result.stderr
    assert not (checkout / "calls").exists() and not (checkout / ".venv").exists()  # nothing made to trip on later
