"""Money and tokens: prices (and, with the budget policy, limits and their store)."""
