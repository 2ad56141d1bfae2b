"""Upstreams behind one small interface (:class:`~hookgate.providers.base.Provider`);
transport errors become :mod:`hookgate.errors` kinds at this boundary."""
