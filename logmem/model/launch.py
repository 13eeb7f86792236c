"""The model stage's old single module, kept so that code written against it still imports.

The records live in logmem.model.records and the builder in logmem.model.build.
"""

from __future__ import annotations

from logmem.model.build import build_launches
from logmem.model.records import Graph, Launch, Model, Rank, Sample, Traceback

__all__ = ["Graph", "Launch", "Model", "Rank", "Sample", "Traceback", "build_launches"]
