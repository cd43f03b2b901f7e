"""The ``switchboard`` command's entry point, apart from `gateway.cli` so that it imports nothing.

Loading the program takes a second or more (the SDKs, the agent, the store): Ctrl-C then must
end it as it does later, exit status 130 and no traceback, so the loading happens in here.
"""

from __future__ import annotations


def main() -> int:
    try:
        from gateway.cli import main as command

        return command()
    except KeyboardInterrupt:  # also from what runs before the command's own loop (config, state lock)
        return 130
