"""Pure building blocks of the fallback policy: failure classes, backoff, breakers, balancing."""
