"""Upstreams behind one small interface; transport errors become :mod:`proxy.errors` kinds."""
