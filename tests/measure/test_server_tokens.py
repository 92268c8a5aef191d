"""How each server tokenizes the documents: its tokenize route's ids where it has one (llama-cpp-python's
/extras/tokenize, vLLM's /tokenize), else the usage of one-text requests."""

from __future__ import annotations

import json
from dataclasses import dataclass

import httpx

from embedswap.measure.server_tokens import ROUTES, chosen_rows, find_route, server_tokens
from embedswap.measure.workload import Document, Workload


@dataclass
class _Answer:
    prompt_tokens: int | None
    ok: bool = True


class _Client:
    """An EmbeddingClient's embed(): the usage a server reports for one text (its word count plus two here)."""

    model = "minilm"
    api_shape = "openai"

    def __init__(self, embeddings_path: str = "/v1/embeddings") -> None:
        self.embeddings_path = embeddings_path
        self.sent: list[list[str]] = []

    def embed(self, inputs: list[str]) -> _Answer:
        self.sent.append(inputs)
        return _Answer(len(inputs[0].split()) + 2)


def _http(route: str | None, key: str = "input") -> httpx.Client:
    """A server whose only tokenize route is ``route`` (answering the field ``key``): one id per character."""

    def handler(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        if route is None or request.url.path != route or key not in body:
            return httpx.Response(404, json={"detail": "Not Found"})
        return httpx.Response(200, json={"tokens": [ord(c) for c in body[key]]})

    return httpx.Client(base_url="http://server", transport=httpx.MockTransport(handler))


def test_the_tokenize_route_gives_ids_per_text() -> None:
    client = _Client()
    out = server_tokens(_http("/extras/tokenize"), client, [3, 7], ["ab", "xyz"])
    assert (out["route"], out["source"]) == ("/extras/tokenize", "tokenize")
    assert out["documents"] == [{"row": 3, "tokens": 2, "ids": [97, 98]},
                                {"row": 7, "tokens": 3, "ids": [120, 121, 122]}]
    assert client.sent == []  # no embedding request when the server tells its tokens


def test_vllms_tokenize_route_is_found_by_its_own_field() -> None:
    assert find_route(_http("/tokenize", "prompt"), "minilm", "a") == ("/tokenize", "prompt")
    assert find_route(_http("/tokenize", "content"), "minilm", "a") == ("/tokenize", "content")
    assert [r for r, _ in ROUTES][0] == "/extras/tokenize"


def test_without_a_route_the_usage_of_one_text_requests_counts() -> None:
    client = _Client()
    out = server_tokens(_http(None), client, [0, 1], ["one two", "one two three four"])
    assert (out["route"], out["source"]) == (None, "usage")
    assert [d["tokens"] for d in out["documents"]] == [4, 6] and client.sent == [["one two"], ["one two three four"]]
    assert all(d["ids"] is None for d in out["documents"])


def test_a_server_at_its_own_paths_is_asked_nothing_else() -> None:
    # Infinity's /embeddings at the root, a gateway: its usage counts, no POST to a route it does not serve
    seen: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request.url.path)
        return httpx.Response(200, json={"tokens": [1, 2]})

    http = httpx.Client(base_url="http://server", transport=httpx.MockTransport(handler))
    out = server_tokens(http, _Client("/embeddings"), [0], ["one two"])
    assert (out["source"], seen) == ("usage", [])


def test_a_large_workload_is_sampled_by_language() -> None:
    docs = [Document(id=str(i), text="t", lang="ko" if i % 4 == 0 else "en") for i in range(400)]
    rows = chosen_rows(Workload(documents=docs, queries=[], qrels={}, batch_size=8), limit=40)
    assert len(rows) == 40 and rows == sorted(rows)
    assert {docs[i].lang for i in rows} == {"ko", "en"}


def test_a_failure_is_written_down_not_raised(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from embedswap.captures import Attempt
    from embedswap.measure.server_tokens import capture_server_tokens

    class _Broken(_Client):
        base_url = "http://127.0.0.1:9"  # nothing listens: every route fails, then embed raises

        def embed(self, inputs: list[str]) -> _Answer:
            raise RuntimeError("server gone")

    experiment = tmp_path / "exp"
    (experiment / "attempts" / "a").mkdir(parents=True)
    attempt = Attempt(experiment, experiment / "attempts" / "a")
    workload = Workload(documents=[Document(id="1", text="hello", lang="en")])
    out = capture_server_tokens(_Broken(), workload, attempt, "cand")  # type: ignore[arg-type]
    assert out["documents"] == [] and "server gone" in out["error"]
    assert attempt.read_json("cand/tokens.json")["error"] == out["error"]
