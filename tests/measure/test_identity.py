"""What a server says about itself (measure.identity), against a fake server that says some of it."""

from __future__ import annotations

from http.server import ThreadingHTTPServer
import threading
from typing import Any

from realkit import JsonHandler
from ports import free_ports
from embedswap.wire.client import EmbeddingClient
from embedswap.measure.identity import StatedVersion, identity_changes, server_identity, stated_version


class Talkative(JsonHandler):
    def do_GET(self) -> None:
        if self.path == "/v1/models":
            self.answer(200, {"data": [{"id": "m"}, {"id": "m-q8"}]})
        elif self.path == "/version":
            self.answer(200, {"version": "0.3.36", "build": "x" * 1000})
        else:
            self.answer(404, {"error": "no route"})

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        body: dict[str, Any] = {"data": [{"index": 0, "embedding": [1.0, 0.0]}], "model": "m-q8",
                                "system_fingerprint": "fp_abc"}
        self.answer(200, body)

    def end_headers(self) -> None:
        self.send_header("X-Server-Version", "llama.cpp b6000")
        self.send_header("X-Request-Id", "not kept")
        super().end_headers()


def test_a_server_that_says_who_it_is_is_recorded() -> None:
    (port,) = free_ports(1)
    server = ThreadingHTTPServer(("127.0.0.1", port), Talkative)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        with EmbeddingClient(f"http://127.0.0.1:{port}", "m", timeout_s=5) as client:
            found = server_identity(client, "hello")
        with EmbeddingClient(f"http://127.0.0.1:{port}", "m", timeout_s=5, models_path=None) as client:
            quiet = server_identity(client, "hello")
    finally:
        server.shutdown()
        server.server_close()
    assert found["served_models"] == ["m", "m-q8"] and found["model"] == "m-q8"
    assert found["system_fingerprint"] == "fp_abc"
    assert found["headers"]["x-server-version"] == "llama.cpp b6000" and "x-request-id" not in found["headers"]
    assert list(found["routes"]) == ["/version"] and found["routes"]["/version"]["version"] == "0.3.36"
    assert len(found["routes"]["/version"]["build"]) == 400  # long values are cut
    assert quiet["served_models"] is None and quiet["model"] == "m-q8"


def test_a_server_that_is_gone_gives_an_empty_identity() -> None:
    (port,) = free_ports(1)
    with EmbeddingClient(f"http://127.0.0.1:{port}", "m", timeout_s=2) as client:
        found = server_identity(client, "hello")
    assert found == {"served_models": None, "model": None, "system_fingerprint": None, "headers": {}, "routes": {},
                     "models_path": "/v1/models", "status": None}


def test_identity_changes_name_each_part_and_skip_what_an_unanswered_request_cannot_say() -> None:
    then = {"served_models": ["m"], "model": "m", "system_fingerprint": "fp1", "headers": {"server": "vllm"},
            "routes": {"/version": {"version": "0.11.0", "slots": 4}}}
    assert identity_changes(then, then) == []
    moved = {**then, "system_fingerprint": "fp2", "routes": {"/version": {"version": "0.12.0", "slots": 9}}}
    assert identity_changes(then, moved) == ["system_fingerprint: fp1 -> fp2", "/version version: 0.11.0 -> 0.12.0"]
    refused = {"served_models": ["m"], "model": None, "headers": {}, "routes": then["routes"], "status": 503}
    assert identity_changes(then, refused) == []  # the answer's parts are not compared when there was no answer
    assert identity_changes(then, {**refused, "served_models": ["m2"]}) == ["served models: ['m'] -> ['m2']"]


class FastApiServer(JsonHandler):
    """Says its version only in its OpenAPI document's info, as Infinity does (issue 54's upgrade pair)."""
    title = "♾️ Infinity - Embedding Inference Server"
    version = "0.0.78"

    def do_GET(self) -> None:
        if self.path == "/models":
            self.answer(200, {"data": [{"id": "minilm"}]})
        elif self.path == "/openapi.json":
            self.answer(200, {"openapi": "3.1.0", "info": {"title": self.title, "version": self.version,
                                                          "description": "long " * 200}, "paths": {}})
        else:
            self.answer(404, {"detail": "Not Found"})

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.answer(200, {"data": [{"index": 0, "embedding": [1.0, 0.0]}], "model": "minilm"})


class DefaultFastApi(FastApiServer):
    title, version = "FastAPI", "0.1.0"  # FastAPI's defaults (vLLM's server): they say nothing about the server


def _identity_of(handler: type[JsonHandler], **client: Any) -> dict[str, Any]:
    (port,) = free_ports(1)
    server = ThreadingHTTPServer(("127.0.0.1", port), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        with EmbeddingClient(f"http://127.0.0.1:{port}", "minilm", timeout_s=5, models_path="/models",
                             **client) as c:
            return server_identity(c, "hello")
    finally:
        server.shutdown()
        server.server_close()


def test_the_openapi_documents_title_and_version_are_what_a_fastapi_server_says() -> None:
    found = _identity_of(FastApiServer)
    assert found["routes"] == {"/openapi.json": {"title": FastApiServer.title, "version": "0.0.78"}}
    assert _identity_of(DefaultFastApi)["routes"] == {}
    older = {**found, "routes": {"/openapi.json": {"title": FastApiServer.title, "version": "0.0.77"}}}
    assert identity_changes(older, found) == ["/openapi.json version: 0.0.77 -> 0.0.78"]  # the title is not a part
    stated = stated_version(found)
    assert (stated.version, stated.where, stated.said) == ("0.0.78", "/openapi.json", "/openapi.json 0.0.78")


def test_the_stated_version_is_read_where_each_server_states_it() -> None:
    vllm = {"served_models": ["m"], "headers": {"server": "uvicorn"}, "routes": {"/version": {"version": "0.32.0"}},
            "status": 200}
    found = stated_version(vllm)
    assert (found.version, found.where, found.said) == ("0.32.0", "/version", "/version 0.32.0")
    assert found.parts == {"served models": "m", "header server": "uvicorn", "/version version": "0.32.0"}
    tei = {"routes": {"/info": {"model_id": "m", "version": "1.5.0", "sha": "abc"}}, "status": 200}
    assert stated_version(tei).said == "/info 1.5.0"
    llamacpp = {"headers": {"server": "llama.cpp"},
                "routes": {"/props": {"build_info": "b6000-1a2b", "total_slots": 4}}}
    assert stated_version(llamacpp).said == "/props build_info b6000-1a2b"
    named = stated_version({"headers": {"server": "llama.cpp"}, "routes": {}, "status": 200})
    assert (named.version, named.where) == ("llama.cpp", "header server")
    assert stated_version({"headers": {"x-server-version": "llama.cpp b6000"}}).version == "llama.cpp b6000"


def test_a_server_without_a_version_says_what_else_it_says_or_nothing() -> None:
    quiet = stated_version({"headers": {"server": "uvicorn"}, "model": "m", "system_fingerprint": "fp_abc",
                            "status": 200})
    assert quiet.version is None and quiet.said == "system_fingerprint fp_abc"  # a web server's name is no engine's
    generic = stated_version({"headers": {"server": "uvicorn"}, "status": 200})
    assert generic.version is None and generic.said is None and generic.parts == {"header server": "uvicorn"}
    # an unanswered embeddings request: only the routes and the model list, as the guard reads it
    refused = stated_version({"served_models": ["m"], "headers": {"server": "llama.cpp"}, "status": 503})
    assert (refused.version, refused.said) == (None, "served models m")
    assert stated_version(None) == stated_version({}) == StatedVersion()
    assert stated_version({"routes": {"/version": {"version": None}}}) == StatedVersion()
