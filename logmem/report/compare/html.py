"""HTML reporter of diff / fit / whatif: the shared layout written as escaped HTML, on the page
every report uses (report.page), with the fit plot after the slopes."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from logmem.report.compare.jsonout import view_json
from logmem.report.compare.layout import layout
from logmem.report.compare.views import View
from logmem.report.page import Figure, esc, figure_html, page, table_html
from logmem.report.table import Table


class HtmlOut:
    """report.compare.out.Out writing escaped HTML. ``md`` is True: HTML, like Markdown, shows
    whole tables and folds the long ones."""

    md = True

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.first_title: str | None = None

    def title(self, text: str) -> None:
        self.first_title = self.first_title or text
        self.parts.append(f"<h1>{esc(text)}</h1>")

    def heading(self, text: str) -> None:
        self.parts.append(f"<h3>{esc(text)}</h3>")

    def gap(self) -> None:
        pass

    def para(self, text: str) -> None:
        self.parts.append(f"<p>{esc(text)}</p>")

    def bullets(self, items: Sequence[str]) -> None:
        self.parts.append(
            '<ul class="findings">' + "".join(f"<li>{esc(x)}</li>" for x in items) + "</ul>"
        )

    def table(self, columns: Sequence[str], rows: Sequence[Sequence[str]], left: int = 1) -> None:
        align = tuple("l" if i < left else "r" for i in range(len(columns)))
        self.parts.append(
            table_html(Table("", tuple(columns), tuple(tuple(r) for r in rows), align))
        )

    def details(self, summary: str, body: Callable[[], None]) -> None:
        self.parts.append(f"<details><summary>{esc(summary)}</summary>")
        body()
        self.parts.append("</details>")

    def text(self) -> str:
        return "\n".join(self.parts)


def render(v: View) -> str:
    """A diff, fit or whatif view model as one self-contained page; with slopes, the fit plot
    (largest bucket against rows, the fitted line and its uncertainty band) follows."""
    from logmem.report.figures import plots

    out = HtmlOut()
    layout(v, out)
    kind = {"logmem.diff/1": "diff", "logmem.fit/1": "fit"}.get(v.schema, "whatif")
    body = [out.text()]
    slopes = getattr(v, "slopes", ())
    data = plots.fit_data(view_json(v)) if slopes else None
    if data is not None and data["slopes"]:
        svg = plots.svg("fit", data)
        caption = (
            "Largest bucket against rows: the measured points, the fitted line and its uncertainty."
        )
        body.append("<h3>Plots</h3>")
        body.append(figure_html(1, Figure("fit", svg, caption, ())))
    return page(out.first_title or f"logmem {kind}", body)
