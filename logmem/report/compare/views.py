"""The view model of any comparison: ``view(model)`` for a Diff, Fit or WhatIf."""

from __future__ import annotations

from logmem.compare.diff import Diff
from logmem.compare.slope import Fit
from logmem.compare.whatif import WhatIf
from logmem.report.compare.view import DiffView, FitView, diff_view, fit_view
from logmem.report.compare.whatif_view import WhatIfView, whatif_view

View = DiffView | FitView | WhatIfView


def view(model: Diff | Fit | WhatIf) -> View:
    """The view model of a Diff, Fit or WhatIf."""
    if isinstance(model, Diff):
        return diff_view(model)
    if isinstance(model, Fit):
        return fit_view(model)
    return whatif_view(model)
