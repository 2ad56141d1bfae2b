"""Config: strict schema and the YAML loader."""

from hookgate.config.loader import ConfigError, LoadedConfig, load_file, load_text
from hookgate.config.schema import Config

__all__ = ["Config", "ConfigError", "LoadedConfig", "load_file", "load_text"]
