"""A server the user already runs: nothing is started or stopped; the API key comes from the environment.

Its routes and API shape are its own (``api_shape``, ``embeddings_path``, ``health_path`` / ``health_check`` in
experiment.yaml; ``embedswap.wire.api_shapes``): the base URL may end in ``/v1`` or not, e.g. Infinity's ``/embeddings``
at the root, TEI's ``POST /embed``, Ollama's ``POST /api/embed``, a hosted API under its own base path.
"""

from __future__ import annotations

from embedswap.wire.api_shapes import EMBEDDINGS_PATHS, HEALTH_PATHS, ApiShape
from embedswap.wire.client import auth_headers
from embedswap.config.targets import ExternalTarget
from embedswap.targets.base import Target, TargetStartError


class ExternalServerTarget(Target):
    kind = "external"
    config: ExternalTarget

    @property
    def base_url(self) -> str:
        return self.config.url.rstrip("/").removesuffix("/v1")

    def launch(self) -> None:
        """Nothing to start: the server is someone else's."""

    def headers(self) -> dict[str, str]:
        return auth_headers(self.config.api_key_env, self.config.headers)

    def verify_tls(self) -> bool:
        return self.config.verify_tls

    def api_shape(self) -> ApiShape:
        return self.config.api_shape

    def embeddings_path(self) -> str:
        return self.config.embeddings_path or EMBEDDINGS_PATHS[self.config.api_shape]

    def models_path(self) -> str | None:
        if not self.config.health_check:
            return None
        return self.config.health_path or HEALTH_PATHS[self.config.api_shape]

    def is_ready(self) -> bool:
        path = self.models_path()
        if path is None:  # no route to ask: taken as up (the first request tells)
            return True
        response = self.health_get(f"{self.base_url}{path}", timeout=10, headers=self.headers())
        if response.status_code == 404:  # the route does not exist: waiting will not make it answer
            raise TargetStartError(f"target '{self.name}': GET {self.base_url}{path} answered 404: set "
                                   f"targets.{self.name}.health_path to a route this server answers, or "
                                   f"targets.{self.name}.health_check: false")
        return response.status_code == 200

    def health_url(self) -> str:
        path = self.models_path()
        return f"{self.base_url}{path}" if path else f"{self.base_url} (health_check: false)"

    def describe(self) -> dict[str, object]:
        return {**super().describe(), "api_shape": self.api_shape(), "embeddings_path": self.embeddings_path(),
                "health_path": self.models_path()}
