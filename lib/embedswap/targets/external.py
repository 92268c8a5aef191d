"""A server the user already runs: nothing is started or stopped; the API key comes from the environment."""

from __future__ import annotations

import httpx

from embedswap.client import auth_headers
from embedswap.config import ExternalTarget
from embedswap.targets.base import Target


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

    def is_ready(self) -> bool:
        response = httpx.get(
            f"{self.base_url}/v1/models", timeout=10, headers=self.headers(), verify=self.verify_tls()
        )
        return response.status_code == 200

    def health_url(self) -> str:
        return f"{self.base_url}/v1/models"
