"""The odradek web console (``odradek console``; docs/console.md).

A Starlette application (:mod:`odradek.console.app`) over one cluster view per principal
(:mod:`odradek.console.view`), which asks the cluster through the SDK only — ``Admin``,
``Consumer``, ``Producer`` and ``odradek.client``'s connection helpers — never the broker,
controller or storage packages (an import-linter contract says so). Needs the ``console``
extra (``pip install 'odradek[console]'``).
"""
