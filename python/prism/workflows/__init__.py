"""Durable workflows: small graphs of typed steps (docs/workflows.md).

A ``Workflow`` holds steps (plain Python, agent runs, tool calls, checks,
gates, compactions, human decisions) with explicit edges and bounded
loops; ``run_workflow``/``resume_workflow``/``start_workflow_background``
run it with every step boundary recorded in a session store, so a workflow
killed at any step continues there from any process.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from prism._lazy import attach

if TYPE_CHECKING:
    from prism.workflows.background import (
        WorkflowHandle,
        WorkflowStatus,
        start_workflow_background,
        workflow_status,
    )
    from prism.workflows.context import (
        StepContext,
    )
    from prism.workflows.driver import (
        WorkflowResult,
    )
    from prism.workflows.engine import (
        resume_workflow,
        run_workflow,
    )
    from prism.workflows.errors import (
        LoopLimitError,
        StepInterruptedError,
        StepTypeError,
        WorkflowChangedError,
        WorkflowDefinitionError,
        WorkflowError,
        WorkflowStepError,
    )
    from prism.workflows.graph import (
        END,
        Loop,
        Route,
        Step,
        Workflow,
        loop,
    )

_EXPORTS: dict[str, str] = {
    "WorkflowHandle": "prism.workflows.background",
    "WorkflowStatus": "prism.workflows.background",
    "start_workflow_background": "prism.workflows.background",
    "workflow_status": "prism.workflows.background",
    "StepContext": "prism.workflows.context",
    "WorkflowResult": "prism.workflows.driver",
    "resume_workflow": "prism.workflows.engine",
    "run_workflow": "prism.workflows.engine",
    "LoopLimitError": "prism.workflows.errors",
    "StepInterruptedError": "prism.workflows.errors",
    "StepTypeError": "prism.workflows.errors",
    "WorkflowChangedError": "prism.workflows.errors",
    "WorkflowDefinitionError": "prism.workflows.errors",
    "WorkflowError": "prism.workflows.errors",
    "WorkflowStepError": "prism.workflows.errors",
    "END": "prism.workflows.graph",
    "Loop": "prism.workflows.graph",
    "Route": "prism.workflows.graph",
    "Step": "prism.workflows.graph",
    "Workflow": "prism.workflows.graph",
    "loop": "prism.workflows.graph",
}
__getattr__, __dir__ = attach(__name__, _EXPORTS)

__all__ = [
    "END",
    "Loop",
    "LoopLimitError",
    "Route",
    "Step",
    "StepContext",
    "StepInterruptedError",
    "StepTypeError",
    "Workflow",
    "WorkflowChangedError",
    "WorkflowDefinitionError",
    "WorkflowError",
    "WorkflowHandle",
    "WorkflowResult",
    "WorkflowStatus",
    "WorkflowStepError",
    "loop",
    "resume_workflow",
    "run_workflow",
    "start_workflow_background",
    "workflow_status",
]
