"""Per-delta cost of the runtime's stream redaction (a secret split across
deltas is masked whole, issue: streamed deltas).

A run whose scripted model streams ``--deltas`` text deltas (short words, the
secret split across deltas once), measured end to end through the agent with
no secrets and with two secrets, and the ``StreamRedactor.feed`` call alone
against the per-event ``redact_text`` it sits next to. Same process, rounds
alternated; the minimum over rounds is reported (the machine is shared).

    python -m benches.stream_redaction [--deltas 10000] [--rounds 5]
"""

from __future__ import annotations

import argparse
import time

import anyio

from prism import create_mock_provider
from prism.providers import provider_done, provider_text_delta
from prism.runtime import create_agent
from prism.security.redaction import create_redactor

try:
    from prism.security.stream_redaction import StreamRedactor
except ImportError:  # the code before stream redaction: end-to-end figures only
    StreamRedactor = None  # type: ignore[assignment,misc]

SECRETS = ["sk-live-0123456789abcdef", "ghp_bench_token_9876543210"]
WORDS = ["the ", "model ", "streams ", "short ", "deltas ", "of ", "text, ", "sk", "-x "]


def _deltas(count: int) -> list[str]:
    out = [WORDS[i % len(WORDS)] for i in range(count)]
    secret = SECRETS[0]
    out[count // 2 : count // 2 + 2] = [secret[:7], secret[7:] + " "]
    return out


async def _run(deltas: list[str], secrets: list[str]) -> float:
    script = [*(provider_text_delta(d) for d in deltas), provider_done()]
    agent = create_agent(
        model={"provider": "mock", "model": "demo"},
        provider=create_mock_provider(script),
        secrets=secrets,
    )
    session = agent.create_session()
    seen: list[object] = []
    session.subscribe(seen.append)
    start = time.perf_counter()
    await session.run("go")
    return time.perf_counter() - start


def _feed(deltas: list[str], with_stream: bool) -> float:
    redactor = create_redactor(SECRETS)
    stream = StreamRedactor(redactor)
    start = time.perf_counter()
    if with_stream:
        for delta in deltas:
            stream.feed(delta)
        stream.flush()
    else:
        for delta in deltas:
            redactor.redact_text(delta)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--deltas", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    deltas = _deltas(args.deltas)
    runs: dict[str, list[float]] = {"no secrets": [], "two secrets": []}
    feeds: dict[str, list[float]] = {"redact_text per delta": [], "StreamRedactor.feed": []}
    for _ in range(args.rounds):
        runs["no secrets"].append(anyio.run(_run, deltas, []))
        runs["two secrets"].append(anyio.run(_run, deltas, SECRETS))
        if StreamRedactor is not None:
            feeds["redact_text per delta"].append(_feed(deltas, False))
            feeds["StreamRedactor.feed"].append(_feed(deltas, True))
    n = args.deltas
    print(f"{n} deltas, min of {args.rounds} rounds, us per delta")
    print("| measured | us/delta | ratio |")
    print("| --- | ---: | ---: |")
    for table in (runs, feeds) if StreamRedactor is not None else (runs,):
        base = min(next(iter(table.values())))
        for name, times in table.items():
            best = min(times)
            print(f"| {name} | {best / n * 1e6:.2f} | {best / base:.2f} |")


if __name__ == "__main__":
    main()
