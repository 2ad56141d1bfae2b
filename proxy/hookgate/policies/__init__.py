"""Built-in policies, one module each; the registry maps YAML names to them."""
