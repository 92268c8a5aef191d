"""Headless Chromium for the tests that look at a rendered report (tests/report/test_report_browser.py) or site
(tests/sites/test_sites.py)."""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def require_chromium() -> str:
    """Chromium's path; a missing browser FAILS the test (CI installs it), it is not skipped."""
    path = shutil.which("chromium")
    if not path:
        pytest.fail("chromium is not installed: run `make browser` (as root it installs the Debian package "
                    "`chromium`; `make test` does it for you)", pytrace=False)
    return path


def run_chromium(chromium: str, tmp: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """One headless Chromium run with its own profile; fails the test with Chromium's stderr if it does."""
    profile = tmp / "profile"
    env = {**os.environ, "XDG_CONFIG_HOME": str(tmp / "xdg-config"), "XDG_CACHE_HOME": str(tmp / "xdg-cache")}
    cmd = [chromium, *FLAGS, f"--user-data-dir={profile}", *args]
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=env, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"chromium did not finish within 120 s: {' '.join(cmd)}\n{exc.stderr}")
    assert done.returncode == 0, f"chromium exited {done.returncode}: {' '.join(cmd)}\n{done.stderr[-4000:]}"
    return done
