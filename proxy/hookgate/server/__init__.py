"""The aiohttp server: app factory, routes, relay."""
