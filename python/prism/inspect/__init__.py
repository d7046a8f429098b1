"""``prism inspect``: a loopback web inspector for sessions, runs and costs.

A package above the runtime: it reads stores through the public store API
only, never writes to them, and replays runs through the runtime's public
API. See docs/inspect.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from prism._lazy import attach

if TYPE_CHECKING:
    from prism.inspect.costs import (
        BranchCosts,
        TurnCost,
        branch_costs,
    )
    from prism.inspect.export import (
        export_html,
        render_report,
    )
    from prism.inspect.replay import (
        RecordedRun,
        find_runs,
        replay_run,
    )
    from prism.inspect.server import (
        InspectorAddress,
        check_bind_host,
        serve_inspector,
    )
    from prism.inspect.source import (
        InspectError,
        SessionSource,
        open_source,
    )
    from prism.inspect.timeline import (
        fold_timeline,
    )
    from prism.inspect.views import (
        SessionView,
    )

_EXPORTS: dict[str, str] = {
    "BranchCosts": "prism.inspect.costs",
    "TurnCost": "prism.inspect.costs",
    "branch_costs": "prism.inspect.costs",
    "export_html": "prism.inspect.export",
    "render_report": "prism.inspect.export",
    "RecordedRun": "prism.inspect.replay",
    "find_runs": "prism.inspect.replay",
    "replay_run": "prism.inspect.replay",
    "InspectorAddress": "prism.inspect.server",
    "check_bind_host": "prism.inspect.server",
    "serve_inspector": "prism.inspect.server",
    "InspectError": "prism.inspect.source",
    "SessionSource": "prism.inspect.source",
    "open_source": "prism.inspect.source",
    "fold_timeline": "prism.inspect.timeline",
    "SessionView": "prism.inspect.views",
}
__getattr__, __dir__ = attach(__name__, _EXPORTS)

__all__ = [
    "BranchCosts",
    "InspectError",
    "InspectorAddress",
    "RecordedRun",
    "SessionSource",
    "SessionView",
    "TurnCost",
    "branch_costs",
    "check_bind_host",
    "export_html",
    "find_runs",
    "fold_timeline",
    "open_source",
    "render_report",
    "replay_run",
    "serve_inspector",
]
