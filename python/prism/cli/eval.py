"""``prism eval``: run an eval suite and write its reports, or compare two
runs (docs/evals.md).

    prism eval run DATASET --agent MODULE:FACTORY [--judge MODULE:FACTORY] [--out DIR] ...
    prism eval run MODULE:SUITE [--out DIR] ...
    prism eval compare BASE.json HEAD.json [--tolerance R] [--json]

``run`` writes ``report.json``, ``report.html`` and ``sessions.sqlite``
(every case's session, for ``prism inspect``) into ``--out``, prints the
table, and exits 1 when the pass rate is below ``--min-pass-rate`` (default
1.0) or a dataset row was left out, so a CI step can gate on it. ``compare``
exits 1 when a case regressed.
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio

from prism.cli.options import UsageProblem

USAGE = (
    "prism eval run (DATASET --agent MODULE:FACTORY | MODULE:SUITE) [--judge MODULE:FACTORY] "
    "[--out DIR] [--concurrency N] [--repeats N] [--retries N] [--timeout S] "
    "[--min-pass-rate R] [--progress | --no-progress]\n"
    "       prism eval compare BASE.json HEAD.json [--tolerance R] [--json]"
)
_DATASET_SUFFIXES = (".jsonl", ".yaml", ".yml")


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageProblem(f"eval: {message}")


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="prism eval", usage=USAGE, add_help=True)
    commands = parser.add_subparsers(dest="command", parser_class=_Parser)
    run = commands.add_parser("run", usage=USAGE, help="run a suite and write its reports")
    run.add_argument("target", help="a dataset file (.jsonl/.yaml) or MODULE:SUITE")
    run.add_argument("--agent", help="MODULE:FACTORY returning the agent under test")
    run.add_argument("--judge", help="MODULE:FACTORY returning the judge's agent (rubrics)")
    run.add_argument("--out", default="eval-out", help="directory for the reports and sessions")
    run.add_argument("--concurrency", type=int, help="cases run at once (default 4)")
    run.add_argument("--repeats", type=int, help="runs per case (default 1)")
    run.add_argument("--retries", type=int, help="retries of a transient error (default 2)")
    run.add_argument("--timeout", type=float, help="seconds per case (default 120)")
    run.add_argument("--min-pass-rate", type=float, default=1.0, help="exit 1 below this")
    run.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None)
    compare = commands.add_parser("compare", usage=USAGE, help="regressions between two runs")
    compare.add_argument("base", help="the earlier report.json")
    compare.add_argument("head", help="the later report.json")
    compare.add_argument("--tolerance", type=float, default=0.0, help="ignore smaller changes")
    compare.add_argument("--json", action="store_true", help="print the comparison as JSON")
    return parser


def eval_main(args: Sequence[str]) -> int:
    options = _parser().parse_args(list(args))
    if options.command == "run":
        return anyio.run(_run, options)
    if options.command == "compare":
        return _compare(options)
    raise UsageProblem(f"eval: give a command: run or compare\nusage: {USAGE}")


def _compare(options: argparse.Namespace) -> int:
    from prism.evals import EvalError, compare_reports, read_report

    try:
        comparison = compare_reports(
            read_report(options.base), read_report(options.head), tolerance=options.tolerance
        )
    except EvalError as error:
        raise UsageProblem(f"eval compare: {error}") from None
    if options.json:
        sys.stdout.write(json.dumps(comparison.to_json(), indent=1) + "\n")
    else:
        sys.stdout.write(comparison.format() + "\n")
    return 1 if comparison.regressed else 0


async def _import_spec(spec: str, what: str) -> Any:
    """``module:attribute``: the attribute, or what calling it returns."""
    module_name, colon, attribute = spec.partition(":")
    if not colon or not module_name or not attribute:
        raise UsageProblem(f"eval: {what} must look like package.module:name (got {spec!r})")
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        target: Any = importlib.import_module(module_name)
        for part in attribute.split("."):
            target = getattr(target, part)
    except (ImportError, AttributeError) as error:
        raise UsageProblem(f"eval: cannot load {spec}: {type(error).__name__}: {error}") from None
    if callable(target) and not isinstance(target, type):
        from prism.evals import EvalSuite
        from prism.runtime import Agent

        if not isinstance(target, EvalSuite | Agent):
            target = target()
            if inspect.isawaitable(target):
                target = await target
    return target


async def _suite(options: argparse.Namespace) -> Any:
    from prism.evals import DatasetError, EvalSuite, load_dataset
    from prism.runtime import Agent

    target: str = options.target
    if target.endswith(_DATASET_SUFFIXES):
        if not options.agent:
            raise UsageProblem(f"eval: a dataset file needs --agent MODULE:FACTORY ({target})")
        try:
            dataset = load_dataset(target)
        except DatasetError as error:
            raise UsageProblem(f"eval: {error}") from None
        agent = await _import_spec(options.agent, "--agent")
        if not isinstance(agent, Agent):
            raise UsageProblem(
                f"eval: --agent {options.agent} gave a {type(agent).__name__}, not an Agent"
            )
        suite = EvalSuite(dataset, agent)
    else:
        suite = await _import_spec(target, "the suite")
        if not isinstance(suite, EvalSuite):
            raise UsageProblem(
                f"eval: {target} gave a {type(suite).__name__}, not a prism.evals.EvalSuite"
            )
    if options.judge:
        judge = await _import_spec(options.judge, "--judge")
        if not isinstance(judge, Agent):
            raise UsageProblem(
                f"eval: --judge {options.judge} gave a {type(judge).__name__}, not an Agent"
            )
        suite = EvalSuite(
            suite.dataset, suite.agent, suite.evaluators, judge, suite.pricing,
            suite.run_options, suite.defaults, suite.name,
        )  # fmt: skip
    return suite


async def _run(options: argparse.Namespace) -> int:
    from prism.evals import EvalError, print_report, write_html
    from prism.stores import create_sqlite_session_store

    suite = await _suite(options)
    out = Path(options.out)
    out.mkdir(parents=True, exist_ok=True)
    sessions = out / "sessions.sqlite"
    overrides = {
        key: value
        for key, value in {
            "concurrency": options.concurrency,
            "repeats": options.repeats,
            "retries": options.retries,
            "timeout_s": options.timeout,
        }.items()
        if value is not None
    }
    try:
        report = await suite.run(
            store=create_sqlite_session_store(sessions),
            store_label=str(sessions),
            progress=options.progress,
            **overrides,
        )
    except EvalError as error:
        raise UsageProblem(f"eval: {error}") from None
    report.write_json(out / "report.json")
    write_html(report, out / "report.html")
    print_report(report)
    sys.stdout.write(f"reports: {out / 'report.json'} {out / 'report.html'}\n")
    try:
        report.check(options.min_pass_rate)
    except EvalError as gate:
        sys.stderr.write(f"prism eval: {str(gate).splitlines()[0]}\n")
        return 1
    return 0
