"""Subcommands of ``python -m analytics``: one module per stage, each with ``register(subparsers)``."""
