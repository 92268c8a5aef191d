"""embedswap: measure what changes when an embedding service moves to a batching engine."""

__version__ = "0.1.0"
