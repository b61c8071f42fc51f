"""Big tables on pages: search, filter, sort and paging read from the query string.

Every list page with hundreds of rows uses the same parameters, so links and the controls
partial (``templates/_table_controls.html``) work the same everywhere:
``?q=text&show=filter&sort=column&dir=desc&page=2``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar
from urllib.parse import urlencode

from django.core.paginator import Page, Paginator
from django.http import HttpRequest

T = TypeVar("T")
PER_PAGE = 50


@dataclass(frozen=True)
class Column:
    """A sortable column: its query value, its heading, and the key rows sort by."""

    name: str
    label: str
    key: Callable[[Any], Any] | None = None
    numeric: bool = False


@dataclass
class TableQuery:
    """What the user asked of a table: search text, one filter, a sort and a page."""

    q: str = ""
    show: str = ""
    sort: str = ""
    desc: bool = False
    page: str = "1"
    filters: Sequence[tuple[str, str]] = ()
    columns: Sequence[Column] = ()
    extra: dict[str, str] = field(default_factory=dict)

    @classmethod
    def from_request(
        cls,
        request: HttpRequest,
        *,
        filters: Sequence[tuple[str, str]] = (),
        columns: Sequence[Column] = (),
        default_sort: str = "",
        extra: Sequence[str] = (),
    ) -> TableQuery:
        """Read the query string, keeping only known filters and columns."""
        get = request.GET
        show = get.get("show", "")
        sort = get.get("sort", "") or default_sort
        return cls(
            q=get.get("q", "").strip()[:200],
            show=show if show in {value for value, _ in filters} else (filters[0][0] if filters else ""),
            sort=sort if sort in {c.name for c in columns} else default_sort,
            desc=get.get("dir") == "desc",
            page=get.get("page", "1"),
            filters=filters,
            columns=columns,
            extra={name: get.get(name, "") for name in extra if get.get(name)},
        )

    def params(self, **changes: Any) -> str:
        """Return the query string of this table with some parameters changed (page reset)."""
        values: dict[str, Any] = {"q": self.q, "show": self.show, "sort": self.sort, **self.extra}
        if self.desc:
            values["dir"] = "desc"
        values.update(changes)
        return urlencode({k: v for k, v in values.items() if v not in ("", None, False)})

    def sort_link(self, name: str) -> str:
        """Return the query string that sorts by ``name`` (again: the other direction)."""
        desc = not self.desc if self.sort == name else False
        return self.params(sort=name, dir="desc" if desc else "")

    def headers(self) -> list[dict[str, Any]]:
        """Return each sortable column with its link and its aria-sort state."""
        return [
            {
                "name": c.name,
                "label": c.label,
                "numeric": c.numeric,
                "link": self.sort_link(c.name),
                "aria_sort": ("descending" if self.desc else "ascending") if c.name == self.sort else "none",
            }
            for c in self.columns
        ]

    @property
    def heads(self) -> dict[str, dict[str, Any]]:
        """Return the sortable headers by column name (templates: ``table.heads.code``)."""
        return {h["name"]: h for h in self.headers()}

    def sorted(self, rows: Iterable[T]) -> list[T]:
        """Return the rows in the asked order (stable; None values last)."""
        rows = list(rows)
        column = next((c for c in self.columns if c.name == self.sort), None)
        if column is None or column.key is None:
            return rows
        key = column.key
        present = [r for r in rows if key(r) is not None]
        missing = [r for r in rows if key(r) is None]
        return sorted(present, key=key, reverse=self.desc) + missing

    def paginate(self, rows: Sequence[T], per_page: int = PER_PAGE) -> Page:
        return Paginator(rows, per_page).get_page(self.page)


def matches(text: str, *fields: Any) -> bool:
    """Return whether every word of ``text`` occurs in one of ``fields`` (case-insensitive)."""
    haystack = " ".join(str(f) for f in fields if f).casefold()
    return all(word in haystack for word in text.casefold().split())
