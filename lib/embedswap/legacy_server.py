"""``python -m embedswap.legacy_server``: the reference legacy server's command (the server is :mod:`embedswap.legacy`).

Kept at this path because it is the command users and their scripts start; ``python -m embedswap.legacy`` is the
same command.
"""

from embedswap.legacy.cli import main

if __name__ == "__main__":
    main()
