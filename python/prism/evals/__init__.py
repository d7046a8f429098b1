"""``prism.evals``: datasets of cases, evaluators, a concurrent runner over an
agent, and reports (terminal, JSON, HTML, compare). A package above the
runtime: it uses only the runtime's public API. See docs/evals.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from prism._lazy import attach

if TYPE_CHECKING:
    from prism.evals.case import (
        Case,
        EvalContext,
        Evaluator,
        EvaluatorResult,
    )
    from prism.evals.compare import (
        CaseChange,
        Comparison,
        compare_reports,
    )
    from prism.evals.dataset import (
        Dataset,
        DatasetProblem,
        load_dataset,
    )
    from prism.evals.errors import (
        DatasetError,
        EvalError,
        EvalGateError,
    )
    from prism.evals.evaluators import (
        Contains,
        CostBudget,
        Equals,
        FunctionEvaluator,
        IsType,
        LatencyBudget,
        MatchesJsonSchema,
        Regex,
        ToolCalls,
        evaluator,
        evaluator_from_spec,
    )
    from prism.evals.gate import (
        assert_case_passes,
        parametrize_cases,
    )
    from prism.evals.html_report import (
        render_html,
        write_html,
    )
    from prism.evals.judge import (
        LlmJudge,
    )
    from prism.evals.report import (
        CaseRun,
        EvalReport,
        read_report,
    )
    from prism.evals.runner import (
        Pricing,
        run_eval,
        run_eval_sync,
    )
    from prism.evals.suite import (
        EvalSuite,
    )
    from prism.evals.terminal import (
        format_report,
        print_report,
    )

_EXPORTS: dict[str, str] = {
    "Case": "prism.evals.case",
    "EvalContext": "prism.evals.case",
    "Evaluator": "prism.evals.case",
    "EvaluatorResult": "prism.evals.case",
    "Dataset": "prism.evals.dataset",
    "DatasetProblem": "prism.evals.dataset",
    "load_dataset": "prism.evals.dataset",
    "DatasetError": "prism.evals.errors",
    "EvalError": "prism.evals.errors",
    "EvalGateError": "prism.evals.errors",
    "Contains": "prism.evals.evaluators",
    "CostBudget": "prism.evals.evaluators",
    "Equals": "prism.evals.evaluators",
    "FunctionEvaluator": "prism.evals.evaluators",
    "IsType": "prism.evals.evaluators",
    "LatencyBudget": "prism.evals.evaluators",
    "MatchesJsonSchema": "prism.evals.evaluators",
    "Regex": "prism.evals.evaluators",
    "ToolCalls": "prism.evals.evaluators",
    "evaluator": "prism.evals.evaluators",
    "evaluator_from_spec": "prism.evals.evaluators",
    "LlmJudge": "prism.evals.judge",
    "assert_case_passes": "prism.evals.gate",
    "parametrize_cases": "prism.evals.gate",
    "CaseRun": "prism.evals.report",
    "EvalReport": "prism.evals.report",
    "read_report": "prism.evals.report",
    "Pricing": "prism.evals.runner",
    "EvalSuite": "prism.evals.suite",
    "CaseChange": "prism.evals.compare",
    "Comparison": "prism.evals.compare",
    "compare_reports": "prism.evals.compare",
    "render_html": "prism.evals.html_report",
    "write_html": "prism.evals.html_report",
    "format_report": "prism.evals.terminal",
    "print_report": "prism.evals.terminal",
    "run_eval": "prism.evals.runner",
    "run_eval_sync": "prism.evals.runner",
}
__getattr__, __dir__ = attach(__name__, _EXPORTS)

__all__ = [
    "Case",
    "CaseChange",
    "CaseRun",
    "Comparison",
    "Contains",
    "CostBudget",
    "Dataset",
    "DatasetError",
    "DatasetProblem",
    "Equals",
    "EvalContext",
    "EvalError",
    "EvalGateError",
    "EvalReport",
    "EvalSuite",
    "Evaluator",
    "EvaluatorResult",
    "FunctionEvaluator",
    "IsType",
    "LatencyBudget",
    "LlmJudge",
    "MatchesJsonSchema",
    "Pricing",
    "Regex",
    "ToolCalls",
    "assert_case_passes",
    "compare_reports",
    "evaluator",
    "evaluator_from_spec",
    "format_report",
    "load_dataset",
    "parametrize_cases",
    "print_report",
    "read_report",
    "render_html",
    "run_eval",
    "run_eval_sync",
    "write_html",
]
