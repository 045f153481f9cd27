"""Maintainers' tools that are neither the package nor a benchmark, run from the repository's
root as ``python -m tools.NAME``.

- :mod:`.path_snapshot`: what every path from sentences to layers produces, saved before a
  refactor and compared bit for bit after it.
"""
