"""The hook pipeline: the Policy contract, its frozen inputs, composition, the registry.

The public names are re-exported by :mod:`hookgate`; import them from there.
"""
