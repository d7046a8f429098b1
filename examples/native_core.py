"""The Rust core in five calls: estimate, digest, redact, parse. No network."""

from __future__ import annotations

import json

from prism import _native as native

message = {
    "role": "assistant",
    "content": [
        {"type": "thinking", "text": "The user wants the file listed."},
        {"type": "tool_call", "id": "c1", "name": "list_dir", "arguments": {"path": "src"}},
    ],
}
compact = json.dumps(message, separators=(",", ":"), ensure_ascii=False)
print("json_length:", native.json_length(message), "==", len(compact))
print("message tokens:", native.estimate_message_tokens(message))

digest, size = native.digest_value({"stdout": "ok\n", "exitCode": 0})
print("digest:", digest[:16], "bytes:", size)

redactor = native.Redactor(["sk-live-1234", "sk-live-1234-extra"])
print("redacted:", redactor.redact_value({"env": "KEY=sk-live-1234-extra done"}))

data = (
    b'{"id":"e1","sessionId":"s","parentId":null,"kind":"summary","summary":"hi"}\n'
    b'{"id":"e2","sessionId":"s","parentId":"e1","kind":"label"}\n'
    b'{"id":"e3","sessionId":"s","parentId":"e1","kind":"summ'
)
entries, errors = native.parse_session_entries(data)
print("entries:", [e["id"] for e in entries])
for error in errors:
    print(f"line {error['line']}: {error['reason']}")
try:
    native.json_length({"messages": [{"content": [{"arguments": {"when": {1, 2}}}]}]})
except TypeError as exc:
    print("error:", exc)
