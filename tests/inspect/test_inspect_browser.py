"""What a person sees in the inspector, in headless Chromium: one browser
and one ``prism inspect --follow`` server for the module. Each main view is
saved as a screenshot ($PRISM_SCREENSHOTS; docs/images holds copies)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from selenium.webdriver.common.by import By
from tests.inspect.browser import InspectorProcess, inspector, now_ms, screenshot, wait_for
from tests.inspect.conftest import DemoFile
from tests.inspect.demo_sessions import build_calibrated_session

from prism._bench.attention.scenario import VariantResult, score
from prism.inspect import export_html, open_source
from prism.security import NOOP_REDACTOR
from prism.stores import create_jsonl_session_store


@pytest.fixture(scope="module")
def live_file(demo: DemoFile, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo sessions plus a half-written last line (a writer that died)."""
    path = tmp_path_factory.mktemp("live") / "sessions.jsonl"
    path.write_bytes(demo.path.read_bytes() + b'{"id":"torn","sessionId":"trip-pl')
    return path


@pytest.fixture(scope="module")
def server(live_file: Path) -> Iterator[InspectorProcess]:
    with inspector(str(live_file), "--session", "trip-planning", "--follow") as running:
        yield running


def open_page(driver: Any, url: str) -> None:
    driver.get("about:blank")  # a URL differing only in its #fragment would not reload
    driver.get(url)
    wait_for(
        driver, lambda d: d.find_element(By.TAG_NAME, "body").get_attribute("data-ready") == "1"
    )


def tab(driver: Any, name: str, ready_selector: str) -> None:
    driver.find_element(By.CSS_SELECTOR, f'#tabs button[data-tab="{name}"]').click()
    wait_for(driver, lambda d: d.find_elements(By.CSS_SELECTOR, ready_selector))


def select_session(driver: Any, session: str) -> None:
    driver.find_element(By.CSS_SELECTOR, f'#sessions tr[data-session="{session}"] a').click()
    wait_for(driver, lambda d: d.find_element(By.ID, "session-title").text == session)


def test_messages_render_readably_with_the_quarantine_shown(
    driver: Any, server: InspectorProcess
) -> None:
    open_page(driver, server.url)
    assert driver.find_element(By.ID, "session-title").text == "trip-planning"
    banner = driver.find_element(By.ID, "quarantine")
    assert banner.is_displayed() and "1 line(s) quarantined" in banner.text
    messages = driver.find_element(By.ID, "messages")
    strong = [e.text for e in messages.find_elements(By.CSS_SELECTOR, ".md strong")]
    assert "Fly" in strong
    thinking = messages.find_elements(By.CSS_SELECTOR, "details.thinking")
    assert thinking and all(d.get_attribute("open") is None for d in thinking)
    calls = messages.find_elements(By.CSS_SELECTOR, "details.tool-call")
    assert calls and calls[0].get_attribute("open") is None
    assert "convert_currency" in " ".join(c.text for c in calls)
    image = messages.find_element(By.CSS_SELECTOR, "img.image")
    assert driver.execute_script("return arguments[0].naturalWidth", image) == 1
    assert "[REDACTED]" in driver.page_source and "sk-demo-secret" not in driver.page_source
    screenshot(driver, "messages")


def test_the_tree_shows_the_fork_label_and_compaction(
    driver: Any, server: InspectorProcess
) -> None:
    open_page(driver, server.url)
    tab(driver, "tree", "#tree li.node")
    tree = driver.find_element(By.ID, "tree")
    assert tree.find_element(By.CSS_SELECTOR, ".badge.fork").text == "fork ×2"
    assert tree.find_element(By.CSS_SELECTOR, ".badge.label").text == "plan-v1"
    assert tree.find_elements(By.CSS_SELECTOR, ".badge.compaction")
    screenshot(driver, "tree")
    other = tree.find_element(By.CSS_SELECTOR, "li.leaf:not(.on-branch) > .preview")
    before = driver.find_element(By.ID, "session-meta").text
    other.click()
    wait_for(driver, lambda d: d.find_element(By.ID, "session-meta").text != before)
    wait_for(
        driver,
        lambda d: "Porto" in d.find_element(By.ID, "messages").get_attribute("textContent"),
    )


def test_a_timeline_step_leads_to_its_entry(driver: Any, server: InspectorProcess) -> None:
    open_page(driver, server.url)
    tab(driver, "timeline", "#timeline li.step")
    counts = driver.find_element(By.ID, "timeline-counts").text
    for kind in ("turn 7", "tool 3", "compaction 1", "memory 1", "attention 1", "checkpoint 8"):
        assert kind in counts
    failed = driver.find_element(By.CSS_SELECTOR, '#timeline li.step.is-error[data-kind="tool"]')
    assert "book_hotel" in failed.text and " ms" in failed.text
    screenshot(driver, "timeline")
    entry_id = failed.get_attribute("data-entry")
    failed.click()
    wait_for(driver, lambda d: d.find_elements(By.CSS_SELECTOR, f"#entry-{entry_id}.highlight"))
    assert "no rooms left" in driver.find_element(By.ID, f"entry-{entry_id}").get_attribute(
        "textContent"
    )


def test_the_cost_chart_matches_the_attention_benchmark(
    driver: Any, server: InspectorProcess, demo: DemoFile
) -> None:
    open_page(driver, server.url)
    tab(driver, "costs", "#cost-chart svg")
    assert driver.find_elements(By.CSS_SELECTOR, "#cost-chart line.window")
    assert driver.find_element(By.ID, "total-busts").text == "1"
    assert driver.find_element(By.ID, "total-trips").text == "1"
    screenshot(driver, "costs")
    select_session(driver, "plain")
    wait_for(driver, lambda d: d.find_element(By.ID, "total-requests").text == "5")
    benchmark = VariantResult("plain")
    score(benchmark, demo.plain_requests)
    expected = benchmark.to_json()
    shown = {
        key: int(driver.find_element(By.ID, element).text.replace(",", ""))
        for key, element in (
            ("requests", "total-requests"),
            ("totalInputTokens", "total-input"),
            ("peakInputTokens", "total-peak"),
            ("cacheReadTokens", "total-read"),
            ("cacheWriteTokens", "total-write"),
            ("cacheAwareCost", "total-cost"),
            ("cacheBusts", "total-busts"),
        )
    }
    assert shown == {key: expected[key] for key in shown}
    rows = driver.find_elements(By.CSS_SELECTOR, "#cost-turns tr[data-turn]")
    per_turn = [int(r.find_elements(By.TAG_NAME, "td")[1].text.replace(",", "")) for r in rows]
    assert per_turn == expected["perRequestInputTokens"]


def test_memory_records_link_to_their_sources(
    driver: Any, server: InspectorProcess, demo: DemoFile
) -> None:
    open_page(driver, server.url)
    tab(driver, "memory", "#memory .memory")
    assert "Budget is 2000 EUR." in driver.find_element(By.ID, "memory").text
    screenshot(driver, "memory")
    first_user = demo.ids["first_user"]
    driver.find_element(By.CSS_SELECTOR, f'#memory a.source[data-entry="{first_user}"]').click()
    wait_for(driver, lambda d: d.find_elements(By.CSS_SELECTOR, f"#entry-{first_user}.highlight"))


def test_checkpoints_show_each_run_and_its_state(driver: Any, server: InspectorProcess) -> None:
    open_page(driver, server.url)
    tab(driver, "checkpoints", "#checkpoints .run")
    states = [e.text for e in driver.find_elements(By.CSS_SELECTOR, "#checkpoints .badge.state")]
    assert states == ["completed"] * 4
    screenshot(driver, "checkpoints")


def test_replay_shows_the_run_events_again(driver: Any, server: InspectorProcess) -> None:
    open_page(driver, server.url)
    tab(driver, "replay", "#runs .run-row")
    driver.find_elements(By.CSS_SELECTOR, "#runs .run-row button")[-1].click()
    wait_for(driver, lambda d: d.find_elements(By.CSS_SELECTOR, "#replay-events li.replay-done"))
    kinds = [e.text.split(" ")[0] for e in driver.find_elements(By.CSS_SELECTOR, "li.replay-event")]
    assert kinds[0] == "run_started" and kinds[-1] == "run_finished"
    assert "tool_call" in kinds and "tool_result" in kinds
    screenshot(driver, "replay")


def test_the_live_tail_shows_a_new_entry(
    driver: Any, server: InspectorProcess, live_file: Path
) -> None:
    open_page(driver, server.url)
    wait_for(driver, lambda d: "on" in d.find_element(By.ID, "live").get_attribute("class"))
    leaf = driver.find_elements(By.CSS_SELECTOR, "#messages article")[-1].get_attribute(
        "data-entry-id"
    )
    entry = {
        "id": "live-entry-1",
        "sessionId": "trip-planning",
        "parentId": leaf,
        "kind": "message",
        "message": {
            "role": "user",
            "content": [{"type": "text", "text": "Appended by **another** process"}],
        },
    }

    async def append() -> None:
        await create_jsonl_session_store(live_file).append(entry)

    started = now_ms()
    anyio.run(append)
    wait_for(driver, lambda d: d.find_elements(By.ID, "entry-live-entry-1"))
    rendered = driver.execute_script("return window.prismTailRendered")
    assert rendered["id"] == "live-entry-1"
    print(f"live tail: {rendered['at'] - started:.0f} ms from append to screen")
    screenshot(driver, "live-tail")


def test_the_token_is_required(driver: Any, server: InspectorProcess) -> None:
    driver.get(f"{server.base}/")
    assert "missing or wrong access token" in driver.find_element(By.TAG_NAME, "body").text
    assert not driver.find_elements(By.ID, "sessions")
    open_page(driver, server.url)
    status = driver.execute_async_script(
        "const done = arguments[0];fetch('api/sessions?token=wrong').then(r => done(r.status));"
    )
    assert status == 401


def test_an_export_opens_from_file(driver: Any, demo: DemoFile, tmp_path: Path) -> None:
    report = tmp_path / "report.html"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "prism",
            "inspect",
            str(demo.path),
            "--session",
            "trip-planning",
            "--export",
            str(report),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    open_page(driver, report.as_uri())
    assert [
        r.get_attribute("data-session")
        for r in driver.find_elements(By.CSS_SELECTOR, "#sessions tr[data-session]")
    ] == ["trip-planning"]
    assert driver.find_elements(By.CSS_SELECTOR, "#messages img.image")
    tab(driver, "costs", "#cost-chart svg")
    assert driver.find_element(By.ID, "total-busts").text == "1"
    tab(driver, "timeline", "#timeline li.step")
    screenshot(driver, "export")


def test_a_large_session_pages_instead_of_loading_everything(driver: Any, tmp_path: Path) -> None:
    path = tmp_path / "large.jsonl"
    with path.open("w") as handle:
        parent = None
        for n in range(3_000):
            role = "user" if n % 2 == 0 else "assistant"
            entry = {
                "id": f"e{n}",
                "sessionId": "large",
                "parentId": parent,
                "kind": "message",
                "message": {"role": role, "content": [{"type": "text", "text": f"message {n}"}]},
            }
            handle.write(json.dumps(entry) + "\n")
            parent = f"e{n}"
    with inspector(str(path)) as running:
        open_page(driver, running.url)
        articles = driver.find_elements(By.CSS_SELECTOR, "#messages article")
        assert len(articles) == 50
        assert articles[-1].get_attribute("data-entry-id") == "e2999"
        older = driver.find_element(By.ID, "older")
        assert older.is_displayed()
        older.click()
        wait_for(
            driver,
            lambda d: (
                d.find_elements(By.CSS_SELECTOR, "#messages article")[0].get_attribute(
                    "data-entry-id"
                )
                == "e2900"
            ),
        )
        tab(driver, "tree", "#tree li.node")
        assert len(driver.find_elements(By.CSS_SELECTOR, "#tree li.node")) == 2


def test_the_costs_tab_shows_the_token_calibration(driver: Any, tmp_path: Path) -> None:
    path = tmp_path / "calibrated.jsonl"
    anyio.run(build_calibrated_session, create_jsonl_session_store(path))
    report = tmp_path / "calibrated.html"

    async def export() -> None:
        source = await open_source(str(path))
        await export_html(source, "calibrated", str(report), redactor=NOOP_REDACTOR)

    anyio.run(export)
    open_page(driver, report.as_uri())
    tab(driver, "costs", "#cost-calibration table")
    row = driver.find_element(By.CSS_SELECTOR, '#cost-calibration tr[data-model="mock/billed"]')
    cells = [td.text for td in row.find_elements(By.TAG_NAME, "td")]
    assert cells[0] == "mock/billed" and int(cells[1]) >= 2  # samples seen
    assert 1.8 < float(cells[2]) < 2.2 and 1.8 < float(cells[5]) < 2.2  # prose ratio, scale
    assert " / " in cells[6] and cells[7].endswith("%") and abs(float(cells[7][:-2])) < 5
    damaged = driver.find_element(By.CSS_SELECTOR, "#cost-calibration tr.damaged").text
    assert "damaged record" in damaged and "version 7 is not 1" in damaged
    screenshot(driver, "calibration")
