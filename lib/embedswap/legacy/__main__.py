"""``python -m embedswap.legacy``: the reference legacy server."""

from embedswap.legacy.cli import main

main()
