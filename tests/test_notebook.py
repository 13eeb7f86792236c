"""notebooks/walkthrough.ipynb runs top to bottom on the fixtures, so it cannot rot.

It is committed without outputs; this test executes it in a fresh kernel of the current
interpreter (a kernel spec written to a temporary JUPYTER_PATH, so no system-wide kernel
is needed or used) and checks that every cell ran and the figures came out as images.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from conftest import REPO

NOTEBOOK = REPO / "notebooks" / "walkthrough.ipynb"
KERNEL = "logmem-test-python"

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")


def test_notebook_is_committed_without_outputs() -> None:
    nb = nbformat.read(NOTEBOOK, as_version=4)
    nbformat.validate(nb)
    for cell in nb.cells:
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None, cell.source[:60]


def test_notebook_uses_the_public_api_only() -> None:
    nb = nbformat.read(NOTEBOOK, as_version=4)
    code = "\n".join(c.source for c in nb.cells if c.cell_type == "code")
    assert "import logmem" in code
    assert "logmem." in code and "from logmem" not in code and "logmem.report" not in code


def test_notebook_runs_top_to_bottom(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    spec = tmp_path / "kernels" / KERNEL
    spec.mkdir(parents=True)
    (spec / "kernel.json").write_text(
        json.dumps(
            {
                "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
                "display_name": "logmem tests",
                "language": "python",
            }
        )
    )
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path))
    nb = nbformat.read(NOTEBOOK, as_version=4)
    client = nbclient.NotebookClient(
        nb, kernel_name=KERNEL, timeout=180, resources={"metadata": {"path": str(NOTEBOOK.parent)}}
    )
    client.execute()  # raises CellExecutionError, with the cell and traceback, on any failure
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert all(c.execution_count for c in code)
    images = sum("image/png" in o.get("data", {}) for c in code for o in c.outputs)
    assert images == 4  # waterfall, ranks, buckets, fit
    errors = [o for c in code for o in c.outputs if o.output_type == "error"]
    assert not errors
