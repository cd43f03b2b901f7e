"""Plugins that ship with Switchboard. Each is enabled by naming it in ``plugins:``, like any other."""
