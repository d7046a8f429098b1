"""Run the runtime-core examples exactly as a reader would."""

from __future__ import annotations

import pytest
from example_runner import run_example

EXPECTED = {
    "approvals_refund.py": [
        "paused on: refund {'order': 'A-17', 'cents': 1250} - refunds need a human",
        "refunds before approval: False",
        "resumed: Refund: refunded 1250 cents.",
        "again: invalid_approval_decision",
        "refunds: 1",
    ],
    "durable_resume.py": [
        "child killed: True",
        "checkpoints before resume: ['input', 'turn', 'tool', 'turn', 'tool_start']",
        "resumed run: True -> The charge was interrupted; please check the ledger.",
        "lookup_order result: ok",
        "charge_card result: interrupted",
        "ledger charges: 1",
        "resume again: None",
    ],
    "durable_dbos.py": [
        "child killed: True",
        "recovered run: run-order-A-17 -> The charge was interrupted; please check the ledger.",
        "lookup_order result: ok",
        "charge_card result: interrupted",
        "ledger charges: 1",
        "same run id again: True",
    ],
    "mock_provider.py": [
        "turn 2: ['content_delta', 'content_delta', 'usage', 'done']",
        "requests recorded: 2",
    ],
    "tools_dispatch.py": [
        "c1 read_file ok",
        "c2 read_file invalid_arguments",
        "c3 read_file tool_not_active",
        "c4 format_disk unknown_tool",
    ],
    "middleware_hooks.py": [
        "{'metadata': {'source': 'demo', 'trace': 't-1'}}",
        "reported: ['provider_request: RuntimeError']",
    ],
    "retry_policy.py": [
        "attempt 3: retry=True delay=300ms (transient)",
        "slept (s): [0.1, 0.2, 0.3]",
    ],
    "prompt_assembly.py": ["Context release-notes:", "tools: ['read']"],
    "logging_layers.py": [
        "runtime records: ['run_started', 'message_started', 'message_finished', 'run_finished']",
        "secret in the log: False",
        "masked: True",
    ],
    "structured_output.py": [
        "response_format sent: json_schema",
        "requests: 2 -> Weather(city='Oslo', celsius=4.5)",
        "tool offered to the mock: ['final_result']",
        "mock -> Weather(city='Bergen', celsius=9.0)",
        "prompted list[int] -> [2, 3, 5]",
    ],
    "testing_with_provider.py": [
        "answer: 21 degrees in Oslo",
        "requests seen by the mock: 2",
        "tool events: ['tool_call', 'tool_result']",
        "production store untouched: True",
    ],
    "tool_images.py": [
        "event images: [{'type': 'image', 'mimeType': 'image/png', 'dataLength': 96}]",
        "'result': 'chart.png: image/png, 72 bytes, 4x3 pixels (image attached)'",
        "vision-model sees: {'type': 'image', 'data': 'iVBORw0KGgoA...', 'mimeType': 'image/png'}",
        "text-model sees: {'type': 'text', 'text': \"[image omitted (image/png, 72 bytes): "
        "model 'text-model' does not accept image input]\"}",
    ],
    "typed_tools.py": [
        "declared: quote - Price a parcel.",
        "quote schema requires: ['parcel', 'destination']",
        "c1 error",
        "args.parcel.weight_kg",
        'c2 ok {"price": 18.0, "to": "Oslo", "call": "c2"}',
        "answer: 18 to Oslo.",
    ],
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_example_runs(name: str) -> None:
    completed = run_example(name)
    for line in EXPECTED[name]:
        assert line in completed.stdout, f"{name}: missing {line!r} in\n{completed.stdout}"
