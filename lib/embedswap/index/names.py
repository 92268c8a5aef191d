"""What the summary reads of the index step by name: its capture's path and the options' names.

Apart from :mod:`embedswap.index.searches` and :mod:`embedswap.index.options`, which the summary builder imported for
these two constants only: those modules load the vector store's client (psycopg, ~0.1 s), and every notebook's kernel
builds the summary where only step 03's searches use the store (issue 61)."""

from __future__ import annotations

CAPTURE = "index/searches.json"
OPTIONS = ("re_embed", "keep", "orthogonal", "affine", "mlp", "rescore", "dual_read")
