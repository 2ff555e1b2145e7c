"""Open the viewer in a headless Chromium (selenium) to look at what the page really shows:
the scene nodes the browser built, their positions, and screenshots.

Uses the system's Chromium and ChromeDriver (Debian: ``apt-get install chromium
chromium-driver``, or ``make browser``); nothing is downloaded. Rendering is software WebGL
(SwiftShader), so the first frame of a scene with viser's environment map takes tens of
seconds on a CPU; :func:`open_headless` can switch that map off.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable, Iterable
from typing import Any

#: JavaScript: the names of the page's scene nodes (viser's test hook ``__viserSceneTree``).
SCENE_NODES_JS = (
    "return window.__viserSceneTree ? Object.keys(window.__viserSceneTree.getState()) : []"
)
#: JavaScript: the position ``[x, y, z]`` of the three.js object of node ``arguments[0]``.
NODE_POSITION_JS = (
    "const o = window.__viserMutable && window.__viserMutable.nodeRefFromName[arguments[0]];"
    "return o ? o.position.toArray() : null"
)
#: JavaScript: drop viser's toasts (e.g. "Software WebGL rendering detected") from the page.
HIDE_NOTIFICATIONS_JS = (
    "document.querySelectorAll('.mantine-Notifications-root').forEach(e => e.remove())"
)


def find_chromium() -> tuple[str, str] | None:
    """``(chromium, chromedriver)`` executables on the PATH, or ``None`` if either is missing."""
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    driver = shutil.which("chromedriver")
    return None if browser is None or driver is None else (browser, driver)


def open_headless(url: str, width: int = 1100, height: int = 760) -> Any:
    """A selenium WebDriver of a headless Chromium (software WebGL) showing ``url``.

    Raises:
        RuntimeError: no Chromium / ChromeDriver on the PATH.
        ImportError: selenium is not installed.
    """
    found = find_chromium()
    if found is None:
        raise RuntimeError(
            "no chromium / chromedriver on the PATH: install Debian's (make browser)"
        )
    from selenium import webdriver
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    options = Options()
    options.binary_location = found[0]
    for flag in (
        "--headless=new",
        "--no-sandbox",
        "--disable-dev-shm-usage",
        f"--window-size={int(width)},{int(height)}",
        "--use-angle=swiftshader",
        "--enable-unsafe-swiftshader",
        "--ignore-gpu-blocklist",
    ):
        options.add_argument(flag)
    session = webdriver.Chrome(options=options, service=Service(found[1]))
    session.get(url)
    return session


def wait_until(probe: Callable[[], Any], timeout: float = 60.0, what: str = "") -> Any:
    """Poll ``probe()`` every 0.2 s until it returns something truthy; return that.

    Raises:
        TimeoutError: ``timeout`` seconds passed (the message names ``what``).
    """
    deadline = time.monotonic() + timeout
    while True:
        value = probe()
        if value:
            return value
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout:g} s waiting for {what or probe}")
        time.sleep(0.2)


def wait_for_nodes(session: Any, names: Iterable[str], timeout: float = 60.0) -> set[str]:
    """Wait until the page's scene holds every node of ``names``; return all its nodes."""
    wanted = set(names)

    def nodes() -> set[str] | None:
        present = set(session.execute_script(SCENE_NODES_JS))
        return present if wanted <= present else None

    return wait_until(nodes, timeout, f"scene nodes {sorted(wanted)}")


def node_position(session: Any, name: str) -> list[float] | None:
    """``[x, y, z]`` of scene node ``name`` in the page (relative to its parent node)."""
    return session.execute_script(NODE_POSITION_JS, name)
