"""Configuration: typed sections, loading with ``${VAR}`` expansion, and `config check`."""

from gateway.config.check import config_check
from gateway.config.loader import LoadedConfig, config_from_mapping, load_config
from gateway.config.render import config_secrets, render_effective_config
from gateway.config.sections import Config
from gateway.errors import ConfigError

__all__ = [
    "Config",
    "ConfigError",
    "LoadedConfig",
    "config_check",
    "config_from_mapping",
    "config_secrets",
    "load_config",
    "render_effective_config",
]
