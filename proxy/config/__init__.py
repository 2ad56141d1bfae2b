"""Config: strict schema and the YAML loader."""

from proxy.config.loader import ConfigError, LoadedConfig, load_file, load_text
from proxy.config.schema import Config

__all__ = ["Config", "ConfigError", "LoadedConfig", "load_file", "load_text"]
