"""Upstreams behind one small interface; transport errors become :mod:`hookgate.errors` kinds."""
