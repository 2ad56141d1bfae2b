"""Durable state behind one interface: virtual keys (and, as governance grows, spend and audit).

Policies and the server never touch SQL (or Redis) directly; they call a
:class:`~hookgate.store.base.Store`.
"""
