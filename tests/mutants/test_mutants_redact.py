"""Behaviour of redact.py that the mutation run (scripts/mutation.py, session `redact`) found unchecked: the length
limits (4 to register, 8 for environment values and headers), paths and prose left alone, tokenizer vocabulary
kept, JSON-escaped secrets, binary files, in-place file redaction. Each secret below is made up for the test."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from embedswap import redact as redact_module
from embedswap.redact import (REDACTED, is_secret_name, redact, redact_bytes, redact_file, redact_tree,
                              register_headers, register_secret, register_secret_env, secrets)


@pytest.fixture(autouse=True)
def clean_registry(monkeypatch: pytest.MonkeyPatch):
    """Each test starts with no registered secret and no secret-looking environment variable."""
    monkeypatch.setattr(redact_module, "_registered", set())
    for name in list(__import__("os").environ):
        if redact_module._SECRET_NAME.search(name):
            monkeypatch.delenv(name)
    yield


def test_register_secret_needs_four_characters() -> None:
    register_secret("abc")
    register_secret("")
    register_secret(None)
    assert secrets() == []
    register_secret("abcd")
    assert secrets() == ["abcd"]
    assert redact("x abcd y") == f"x {REDACTED} y"


def test_environment_values_need_eight_characters_and_a_secret_name(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MY_API_KEY", "1234567")  # 7: too short to be told from ordinary words
    monkeypatch.setenv("OTHER_TOKEN", "12345678")
    monkeypatch.setenv("PLAIN_VALUE", "abcdefghij")  # not a secret's name
    monkeypatch.setenv("HF_TOKEN_PATH", "/root/.cache/token")  # a path
    monkeypatch.setenv("HOME_TOKEN_DIR", "~/tokens-dir")
    monkeypatch.setenv("REL_TOKEN_DIR", "./tokens-dir")
    monkeypatch.setenv("PROSE_SECRET", "not a secret value")  # prose: has spaces
    monkeypatch.setenv("TAB_SECRET", "tab\tseparated")
    monkeypatch.setenv("LONG_TOKEN", "123456789abc")
    assert secrets() == ["123456789abc", "12345678"]
    assert redact("7: 1234567, 8: 12345678, abcdefghij") == f"7: 1234567, 8: {REDACTED}, abcdefghij"
    assert redact("12: 123456789abc") == f"12: {REDACTED}"


def test_secrets_are_longest_first_and_json_escaped() -> None:
    register_secret("abcd")
    register_secret("abcdXYZW")
    register_secret('q"uote\\d')
    found = secrets()
    assert found[0] == 'q\\"uote\\\\d'  # the longest first (11 characters)
    assert set(found[1:3]) == {"abcdXYZW", 'q"uote\\d'} and found[3] == "abcd"  # then the 8s (any order), then 4
    assert set(found) == {"abcd", "abcdXYZW", 'q"uote\\d', 'q\\"uote\\\\d'}
    # the longer secret is replaced whole, not left with a tail
    assert redact("k=abcdXYZW.") == f"k={REDACTED}."
    # a secret inside a JSON document, escaped as json.dumps writes it
    text = json.dumps({"error": 'bad q"uote\\d'})
    assert 'q"uote' not in redact(text).replace(REDACTED, "") and "uote" not in redact(text)


@pytest.mark.parametrize(("name", "secret"), [("HF_TOKEN", True), ("OPENAI_API_KEY", True), ("DB_PASSWORD", True),
                                              ("my-secret", True), ("AUTH", True), ("X_CREDENTIALS", True),
                                              ("TOKENIZERS_PARALLELISM", False), ("MONKEY", False),
                                              ("PASSAGE", False), ("KEYBOARD_LAYOUT", False)])
def test_secret_names(name: str, secret: bool) -> None:
    assert is_secret_name(name) is secret


def test_headers_register_all_but_the_harmless_and_the_short() -> None:
    register_headers({"Content-Type": "application/json-long", "accept": "application/json",
                      "User-Agent": "embedswap-client/1.0", "Accept-Encoding": "gzip, deflate, br",
                      "X-Team": "search", "X-Tenant-Key": "tenant-0123456789", "X-Eight": "12345678"})
    assert set(secrets()) == {"tenant-0123456789", "12345678"}


def test_env_registration_by_name_and_length() -> None:
    register_secret_env({"HF_TOKEN": "hf-abcd", "SHORT_TOKEN": "abc", "LOG_LEVEL": "debug-verbose", "API_KEY": 12345,
                         "X_TOKEN": "wxyz"})
    assert set(secrets()) == {"hf-abcd", "12345", "wxyz"}  # 4 characters are enough for a named secret


def test_header_shapes_keep_the_scheme_and_the_name() -> None:
    assert redact("Authorization: Basic dXNlcjpwYXNz") == f"Authorization: Basic {REDACTED}"
    assert redact("x-api-key: abcd1234") == f"x-api-key: {REDACTED}"
    assert redact("X-Auth-Token:abcd1234 next") == f"X-Auth-Token:{REDACTED} next"
    assert redact("x-api-key: abc") == "x-api-key: abc"  # under 4 characters: not a credential's shape
    # tokenizer vocabulary is not a credential: kept as written
    assert redact('"pad_token": "[PAD]"') == '"pad_token": "[PAD]"'
    assert redact('"eos_token": "</s>-long"') == '"eos_token": "</s>-long"'
    assert redact("pad_token=[PAD]x") == "pad_token=[PAD]x"
    assert redact("mask_token=abcdefgh") == "mask_token=abcdefgh"


def test_quoted_and_assigned_shapes() -> None:
    assert redact('{"api_key": "abcd1234"}') == f'{{"api_key": "{REDACTED}"}}'
    assert redact("{'client_secret': 'abcd1234'}") == f"{{'client_secret': '{REDACTED}'}}"
    assert redact('{\\"token\\": \\"abcd1234\\"}') == f'{{\\"token\\": \\"{REDACTED}\\"}}'  # JSON-escaped quotes
    assert redact("OPENAI_API_KEY=sk-abc123 next") == f"OPENAI_API_KEY={REDACTED} next"
    assert redact("HF_TOKEN=$HF_TOKEN") == "HF_TOKEN=$HF_TOKEN"  # a reference, not a value
    assert redact('"prompt_tokens": 12') == '"prompt_tokens": 12'
    assert redact("hf_" + "a" * 30) == REDACTED
    assert redact("hf_" + "a" * 29) == "hf_" + "a" * 29
    assert redact("sk-" + "b" * 20) == REDACTED


def test_redact_bytes_text_binary_and_unchanged() -> None:
    register_secret("s3cr3t-value")
    same = b"nothing to hide"
    assert redact_bytes(same) is same  # unchanged text: the very bytes, not a re-encoding
    assert redact_bytes("키 s3cr3t-value".encode()) == f"키 {REDACTED}".encode()
    binary = b"\xff\xfe s3cr3t-value \x00"
    assert redact_bytes(binary) == b"\xff\xfe " + REDACTED.encode() + b" \x00"
    # binary data: only registered values are replaced, shapes are not searched
    assert redact_bytes(b"\xff Bearer abcdefgh") == b"\xff Bearer abcdefgh"


def test_redact_file_in_place_and_tree(tmp_path: Path) -> None:
    register_secret("s3cr3t-value")
    log = tmp_path / "a" / "server.log"
    log.parent.mkdir()
    log.write_text("started\nkey s3cr3t-value\n")
    clean = tmp_path / "clean.txt"
    clean.write_text("nothing here")
    npy = tmp_path / "vectors.npy"
    npy.write_bytes(b"s3cr3t-value")  # not a suffix redact_tree touches
    assert redact_file(log) is True
    assert log.read_text() == f"started\nkey {REDACTED}\n"
    assert redact_file(log) is False  # already clean
    assert redact_file(tmp_path / "missing.log") is False
    assert not list(tmp_path.rglob("*.redact.tmp"))
    log.write_text("again s3cr3t-value")
    (tmp_path / "b.md").write_text("s3cr3t-value")
    changed = redact_tree(tmp_path)
    assert sorted(p.name for p in changed) == ["b.md", "server.log"]
    assert npy.read_bytes() == b"s3cr3t-value" and clean.read_text() == "nothing here"
    assert redact_tree(tmp_path / "nope") == []
    assert redact_tree(tmp_path, suffixes=(".npy",)) == [npy]


def test_redacted_bytes_are_returned_whatever_the_text_sorts_like() -> None:
    register_secret("ABCD-secret-1")  # "[redacted]" sorts after "ABCD...": the change must still be returned
    assert redact_bytes(b"k ABCD-secret-1") == f"k {REDACTED}".encode()


def test_bearer_flags_urls_and_query_parameters() -> None:
    assert redact("sent Bearer abc.DEF-123_456 to it") == f"sent Bearer {REDACTED} to it"
    assert redact("vllm serve m --api-key s3cr3t-v4lue --port 1") == f"vllm serve m --api-key {REDACTED} --port 1"
    assert redact("x --password=hunter22") == f"x --password={REDACTED}"
    assert redact("https://user:pa55word@host.example/v1") == f"https://{REDACTED}@host.example/v1"
    assert redact("http://h/v1?token=abc123&x=1") == f"http://h/v1?token={REDACTED}&x=1"
    assert redact("http://h/v1?x=1&key=abc123") == f"http://h/v1?x=1&key={REDACTED}"


def test_a_file_is_rewritten_whatever_its_redacted_text_sorts_like(tmp_path: Path) -> None:
    register_secret("ABCD-secret-1")
    log = tmp_path / "server.log"
    log.write_text("k ABCD-secret-1")
    assert redact_file(log) is True and log.read_text() == f"k {REDACTED}"
