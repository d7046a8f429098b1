"""The errors a workflow raises (drawn in prism/errors.py's tree)."""

from __future__ import annotations

from prism.errors import PrismError

__all__ = [
    "LoopLimitError",
    "StepInterruptedError",
    "StepTypeError",
    "WorkflowChangedError",
    "WorkflowDefinitionError",
    "WorkflowError",
    "WorkflowStepError",
]


class WorkflowError(PrismError):
    """A workflow could not be defined, run or resumed."""

    code = "workflow_error"


class WorkflowDefinitionError(WorkflowError, ValueError):
    """The graph is not a valid workflow: an unbounded cycle, an unreachable
    step, an edge to an unknown step, a step without its types or edges.
    Raised by ``Workflow.validate()`` before anything is stored."""

    code = "invalid_workflow"


class WorkflowChangedError(WorkflowError):
    """A resume found the stored run was made by another definition of a
    step it already reached (its kind, types, edges or idempotence differ);
    names the step. Nothing was run or stored."""

    code = "workflow_changed"


class StepTypeError(WorkflowError, TypeError):
    """A step returned (or a gate routed) a value that is not of the
    declared type; names the step and the type. The workflow ends failed."""

    code = "step_type"


class LoopLimitError(WorkflowError):
    """A bounded loop edge was taken more often than its maximum and has no
    ``then`` step to go to instead. The workflow ends failed."""

    code = "loop_limit"


class StepInterruptedError(WorkflowError):
    """A non-idempotent step started and its process died before it
    finished; running it again could repeat its side effect. Names the step."""

    code = "step_interrupted"


class WorkflowStepError(WorkflowError):
    """A step raised; the workflow ended failed. ``step`` names it and the
    original exception is the ``__cause__`` (when raised in this process)."""

    code = "workflow_step_failed"
