"""failoverbench's sixteen gateway crash tests, run against ``hookgate serve``.

See ``README.md`` beside this file and :mod:`bench.failoverbench.run`.
"""
