"""Keeping secrets out of everything the kit writes: captures, steps.json, target.json, server logs, executed
notebooks and, through them, summary.json and the reports.

API keys come from the environment (``api_key_env``, read by ``client.auth_headers``, which registers the value
here). ``redact`` replaces, in any text about to be written:

- every registered secret, and the value of every environment variable whose name says it is one (``*KEY*``,
  ``*TOKEN*``, ``*SECRET*``, ``*PASSWORD*``, ...; values of 8 characters or more that are not paths), so a key
  echoed back in a server's error message is caught in every process (notebook kernels included);
- ``Bearer <token>``, the value after ``--api-key``/``--token``/``--password``/``--secret`` in a command line,
  the user:password part of a URL, and ``?api_key=``/``?token=``-style query parameters.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

REDACTED = "[redacted]"
MIN_SECRET_LEN = 8
_SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL", re.IGNORECASE)
_registered: set[str] = set()

_PATTERNS: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"\b(Bearer)\s+[A-Za-z0-9._~+/=-]{4,}", re.IGNORECASE), rf"\1 {REDACTED}"),
    (re.compile(r"(--(?:api[-_]?key|token|password|secret)(?:=|\s+))(?!\[redacted\])\S+", re.IGNORECASE),
     rf"\1{REDACTED}"),
    (re.compile(r"(\b[a-z][a-z0-9+.-]*://)[^/\s:@\"']+:[^/\s@\"']+@", re.IGNORECASE), rf"\1{REDACTED}@"),
    (re.compile(r"([?&](?:api[-_]?key|key|token|access_token|password|secret)=)(?!\[redacted\])[^&\s\"'#]+",
                re.IGNORECASE), rf"\1{REDACTED}"),
]


def register_secret(value: str | None) -> None:
    """Remember a secret value (an API key read from the environment) so that it is never written."""
    if value and len(value) >= 4:
        _registered.add(value)


def _looks_secret(value: str) -> bool:
    # not a path (…_TOKEN_PATH=/root/...), not prose, not a flag value like "1" or "true"
    return (len(value) >= MIN_SECRET_LEN and not value.startswith(("/", "~", "."))
            and not any(c.isspace() for c in value))


def secrets() -> list[str]:
    """Registered secrets and secret-looking environment values, longest first (a key containing another)."""
    found = set(_registered)
    found.update(v for k, v in os.environ.items() if _SECRET_NAME.search(k) and _looks_secret(v))
    variants = set()
    for value in found:
        variants.add(value)
        variants.add(json.dumps(value)[1:-1])  # as it appears inside a JSON string
    return sorted(variants, key=len, reverse=True)


def redact(text: str) -> str:
    for secret in secrets():
        if secret in text:
            text = text.replace(secret, REDACTED)
    for pattern, replacement in _PATTERNS:
        text = pattern.sub(replacement, text)
    return text


def redact_bytes(data: bytes) -> bytes:
    """``redact`` on UTF-8 text; binary data only has the known secret values replaced."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        for secret in secrets():
            data = data.replace(secret.encode(), REDACTED.encode())
        return data
    cleaned = redact(text)
    return data if cleaned == text else cleaned.encode("utf-8")


def redact_file(path: Path) -> bool:
    """Redact a file in place (server logs, executed notebooks); True if it changed. Not for capture files:
    those are redacted before they are written, and their checksums are in the manifest."""
    try:
        data = path.read_bytes()
    except OSError:
        return False
    cleaned = redact_bytes(data)
    if cleaned == data:
        return False
    tmp = path.with_name(f".{path.name}.redact.tmp")
    tmp.write_bytes(cleaned)
    os.replace(tmp, path)
    return True


def redact_tree(folder: Path, suffixes: tuple[str, ...] = (".log", ".ipynb", ".txt", ".json", ".md", ".html")
                ) -> list[Path]:
    """Redact every file with one of ``suffixes`` under ``folder``; returns the files that changed."""
    if not folder.exists():
        return []
    return [p for p in folder.rglob("*") if p.is_file() and p.suffix in suffixes and redact_file(p)]
