"""The operator console at ``/console``: a page showing a running gateway's sessions, running
turns with their trees of children, background delegations, the outbox's stuck messages and
recent errors, live, with a few actions (stop a child, retry or dismiss a message).

`gateway.console.snapshot` reads the state, `gateway.console.routes` serves it, and
`gateway.console.recent_errors` keeps the latest warnings and errors; the page itself is
plain HTML, CSS and JavaScript in ``static/``. See docs/console.md.
"""
