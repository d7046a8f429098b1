"""Headless Chromium for the inspector's tests: the system's chromium and
chromedriver (Debian packages, installed by .ci/install-chromium), driven
by Selenium with explicit paths so Selenium Manager never downloads."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

CHROMIUM_CANDIDATES = ("/usr/bin/chromium", "/usr/bin/chromium-browser")
CHROMEDRIVER = "/usr/bin/chromedriver"


class BrowserMissing(RuntimeError):
    pass


def chromium_paths() -> tuple[str, str]:
    binary = next((p for p in CHROMIUM_CANDIDATES if os.access(p, os.X_OK)), None)
    binary = binary or shutil.which("chromium")
    driver = CHROMEDRIVER if os.access(CHROMEDRIVER, os.X_OK) else shutil.which("chromedriver")
    if not binary or not driver:
        raise BrowserMissing(
            "headless Chromium is required: run .ci/install-chromium "
            "(apt-get install -y chromium chromium-driver)"
        )
    return binary, driver


def make_driver(width: int = 1400, height: int = 900) -> Any:
    os.environ["SE_OFFLINE"] = "true"  # Selenium Manager must never fetch a browser
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    binary, driver = chromium_paths()
    options = webdriver.ChromeOptions()
    options.binary_location = binary
    for flag in (
        "--headless=new",
        "--no-sandbox",
        "--disable-dev-shm-usage",
        "--disable-gpu",
        "--no-first-run",
        "--disable-extensions",
        "--disable-background-networking",
        f"--window-size={width},{height}",
    ):
        options.add_argument(flag)
    return webdriver.Chrome(service=Service(executable_path=driver), options=options)


class InspectorProcess:
    """``prism inspect`` in a child process; the URL is read from its stdout."""

    def __init__(self, *args: str, env: dict[str, str] | None = None) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "prism", "inspect", *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, **(env or {})},
        )
        assert self.process.stdout is not None
        line = self.process.stdout.readline()  # blocks until the server listens (or exits)
        if "serving" not in line:
            self.process.kill()
            _, err = self.process.communicate()
            raise RuntimeError(f"prism inspect did not start: {line!r} {err!r}")
        self.url = line.rsplit(" at ", 1)[1].strip()
        self.base = self.url.split("/?", 1)[0]
        self.token = self.url.split("token=", 1)[1].split("#", 1)[0]

    def close(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        for stream in (self.process.stdout, self.process.stderr):
            if stream is not None:
                stream.close()


@contextmanager
def inspector(*args: str) -> Iterator[InspectorProcess]:
    server = InspectorProcess(*args)
    try:
        yield server
    finally:
        server.close()


def screenshot(driver: Any, name: str) -> Path:
    """Save a screenshot under $PRISM_SCREENSHOTS (default: the temp dir)."""
    default = Path(tempfile.gettempdir()) / "prism-inspect-screenshots"
    directory = Path(os.environ.get("PRISM_SCREENSHOTS", default))
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{name}.png"
    driver.save_screenshot(str(path))
    return path


def wait_for(driver: Any, condition: Any, timeout: float = 15.0) -> Any:
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(driver, timeout, poll_frequency=0.02).until(condition)


def now_ms() -> float:
    return time.time() * 1000
