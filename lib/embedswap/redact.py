"""Keeping secrets out of everything the kit writes: captures, steps.json, target.json, server logs, executed
notebooks and, through them, summary.json and the reports.

API keys come from the environment (``api_key_env``, read by ``client.auth_headers``, which registers the value
here). ``redact`` replaces, in any text about to be written:

- every registered secret, and the value of every environment variable whose name says it is one (``*KEY*``,
  ``*TOKEN*``, ``*SECRET*``, ``*PASSWORD*``, ...; values of 8 characters or more that are not paths), so a key
  echoed back in a server's error message is caught in every process (notebook kernels included);
- ``Bearer <token>``, the value after ``--api-key``/``--token``/``--password``/``--secret`` in a command line,
  the user:password part of a URL, and ``?api_key=``/``?token=``-style query parameters;
- credentials by their shape, registered or not: a header line whose name says it carries one
  (``Authorization: Basic ...``, ``Proxy-Authorization: ...``, ``x-api-key: ...``, ``X-Auth-Token: ...``), a quoted
  key/value pair (``{"api_key": "..."}``, ``'client_secret': '...'``), an environment assignment
  (``OPENAI_API_KEY=sk-...``, ``HF_TOKEN=...``; not a ``$VAR`` reference), Hugging Face tokens (``hf_`` + 30 or
  more letters and digits) and OpenAI-style keys (``sk-`` + 20 or more).

Every value of a target's ``headers:`` is registered when the kit builds the request headers
(``client.auth_headers``), except the few headers that never carry a credential (``NOT_SECRET_HEADERS``) and values
under 8 characters; so is every ``env`` value of a target whose name looks secret (``targets.base.server_env``,
the Kubernetes manifest). The config's dumps (``config.py``) show neither.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

REDACTED = "[redacted]"
MIN_SECRET_LEN = 8
_SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL", re.IGNORECASE)
_SECRET_PART = re.compile(r"(?:^|[_-])(?:KEY|APIKEY|TOKEN|SECRET|PASSWORD|PASSWD|PASS|CREDENTIALS?|AUTH)(?:$|[_-])",
                          re.IGNORECASE)
NOT_SECRET_HEADERS = frozenset({"accept", "accept-encoding", "content-type", "user-agent"})
_registered: set[str] = set()

# where a bare token starts: after a character that is not part of a word, or after a JSON escape (\n, \t, \r)
_START = r"(?:(?<![A-Za-z0-9_-])|(?<=\\[ntr]))"
# names that end in a credential word (api_key, x-api-key, client_secret, HF_TOKEN, db-password, authorization);
# "prompt_tokens", "tokenizer", "max_tokens" do not end in one
_CRED_NAME = r"[A-Za-z0-9_.-]*?(?:api[-_]?key|access[-_]?key|secret[-_]?key|auth[-_]?token|access[-_]?token|token|secret|password|passwd|credentials?|authorization)"
# tokenizers' special tokens ("pad_token": "[PAD]") are vocabulary, not credentials
_NOT_CREDENTIAL = re.compile(r"(?:bos|eos|pad|unk|cls|sep|mask|additional_special|special)_token", re.IGNORECASE)
# header names that carry a credential; not a bare "token:" or "secret:", which prose uses ("per token: 0.3 ms")
_HEADER_NAME = (r"(?:proxy-)?authorization|x-[a-z0-9-]*(?:key|token|secret|auth)|api[-_]?key|auth[-_]?token"
                r"|access[-_]?token|secret[-_]?key|client[-_]?secret|password|passwd")
_CRED_HEADER = re.compile(rf"{_START}({_HEADER_NAME})(\s*:\s*)(?:(Basic|Bearer|Token|Digest)\s+)?"
                          r"(?!\[redacted\])(?!(?:Basic|Bearer|Token|Digest)\s)([^\s\"',;}\]\\]{4,})", re.IGNORECASE)
# quotes may be JSON-escaped (\"api_key\": \"...\" inside a captured error text or a notebook's output)
_CRED_QUOTED = re.compile(rf"(\\?[\"'])({_CRED_NAME})\1(\s*:\s*)(\\?[\"'])(?!\[redacted\])([^\"'\\]{{4,}})\4",
                          re.IGNORECASE)
_CRED_ASSIGN = re.compile(rf"{_START}({_CRED_NAME})=(?![$\[])([^\s\"'&;,\\]{{4,}})", re.IGNORECASE)

_PATTERNS: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"\b(Bearer)\s+[A-Za-z0-9._~+/=-]{4,}", re.IGNORECASE), rf"\1 {REDACTED}"),
    (re.compile(r"(--(?:api[-_]?key|token|password|secret)(?:=|\s+))(?!\[redacted\])\S+", re.IGNORECASE),
     rf"\1{REDACTED}"),
    (re.compile(r"(\b[a-z][a-z0-9+.-]*://)[^/\s:@\"']+:[^/\s@\"']+@", re.IGNORECASE), rf"\1{REDACTED}@"),
    (re.compile(r"([?&](?:api[-_]?key|key|token|access_token|password|secret)=)(?!\[redacted\])[^&\s\"'#]+",
                re.IGNORECASE), rf"\1{REDACTED}"),
]


def _header(m: re.Match[str]) -> str:
    if _NOT_CREDENTIAL.fullmatch(m.group(1)):
        return m.group(0)
    scheme = f"{m.group(3)} " if m.group(3) else ""
    return f"{m.group(1)}{m.group(2)}{scheme}{REDACTED}"


def _quoted(m: re.Match[str]) -> str:
    if _NOT_CREDENTIAL.fullmatch(m.group(2)):
        return m.group(0)
    return f"{m.group(1)}{m.group(2)}{m.group(1)}{m.group(3)}{m.group(4)}{REDACTED}{m.group(4)}"


def _assign(m: re.Match[str]) -> str:
    return m.group(0) if _NOT_CREDENTIAL.fullmatch(m.group(1)) else f"{m.group(1)}={REDACTED}"


# (a quick test that must find something in the lower-cased text first, the pattern, its replacement): the quick
# tests keep a capture of vectors (megabytes of digits) out of the slower patterns (3.5 MB of JSON: 1.9 s without
# them, 0.35 s with them, 0.25 s of which the older patterns above)
_WORD = r"(?:key|token|secret|passw|credential|authorization)"
_SHAPES: list[tuple[re.Pattern[str], re.Pattern[str], Any]] = [
    (re.compile(rf"{_WORD}\\?[\"']\s*:"), _CRED_QUOTED, _quoted),
    (re.compile(r"(?:authorization|key|token|secret|auth|passw[a-z]*)\s*:"), _CRED_HEADER, _header),
    (re.compile(rf"{_WORD}[a-z]*="), _CRED_ASSIGN, _assign),
    (re.compile("hf_"), re.compile(rf"{_START}hf_[A-Za-z0-9]{{30,}}"), REDACTED),
    (re.compile("sk-"), re.compile(rf"{_START}sk-[A-Za-z0-9_-]{{20,}}"), REDACTED),
]


def register_secret(value: str | None) -> None:
    """Remember a secret value (an API key read from the environment) so that it is never written."""
    if value and len(value) >= 4:
        _registered.add(value)


def is_secret_name(name: str) -> bool:
    """An environment variable's name that says it holds a secret: a part of it (split at ``_``/``-``) is KEY,
    TOKEN, SECRET, PASSWORD, ... (HF_TOKEN, OPENAI_API_KEY, DB_PASSWORD; not TOKENIZERS_PARALLELISM)."""
    return bool(_SECRET_PART.search(name))


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
    lower = text.lower()
    for quick, pattern, replace in _SHAPES:
        if quick.search(lower):
            text = pattern.sub(replace, text)
    return text


def register_headers(headers: dict[str, str]) -> None:
    """Register every value of a target's ``headers:`` (but Content-Type, Accept, ...) as a secret. Values under
    ``MIN_SECRET_LEN`` characters are left out (``X-Team: search`` would redact every "search" in a report); the
    config's own dumps (summary.json, the report) show no header value at all."""
    for name, value in headers.items():
        if name.lower() not in NOT_SECRET_HEADERS and len(value) >= MIN_SECRET_LEN:
            register_secret(value)


def register_secret_env(env: dict[str, str]) -> None:
    """Register the values of the variables whose names look secret (a target's ``env``: HF_TOKEN, ...)."""
    for name, value in env.items():
        if is_secret_name(name) and len(str(value)) >= 4:
            register_secret(str(value))


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


def redact_tree(folder: Path, suffixes: tuple[str, ...] = (".log", ".ipynb", ".txt", ".json", ".md", ".html",
                                                          ".yaml", ".yml", ".out", ".err")) -> list[Path]:
    """Redact every file with one of ``suffixes`` under ``folder``; returns the files that changed."""
    if not folder.exists():
        return []
    return [p for p in folder.rglob("*") if p.is_file() and p.suffix in suffixes and redact_file(p)]
