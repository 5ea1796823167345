"""Result tables held as columns, made DataFrames when read.

Why: a data set's worker process sends each case's tables to its parent as plain rows (the records' encoding,
:func:`ccmetrics.campaign.records.encode_output`). Building pandas DataFrames for them first, and importing pandas
for that (0.12 s of CPU a process, a quarter of a worker's imports), was work nobody read. So the results of the
metrics keep their tables as :class:`Columns` (numpy arrays, lists and broadcast scalars, in order, with the row
index's name and start), and the fields :func:`table_fields` names give the DataFrame when the attribute is read (pandas
imported then), made once and kept. :meth:`Columns.encoded` gives the records' rows without pandas.

The DataFrame is the one the former code made: ``pd.DataFrame`` of the array and list columns with a
``RangeIndex`` of the index's name and start, then each scalar column assigned (as ``table[name] = value`` and
``DataFrame.insert`` set one: the dtypes pandas gives a scalar, also on a table without rows), then the columns in
their order. ``tests/test_columns.py`` checks both forms against pandas' own construction, empty tables included.

Cost: ``frame()`` is one DataFrame construction; ``encoded()`` one ``tolist()`` a column and a transpose of the
rows in Python (about the cost of the rows' JSON encoding that follows).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["Columns", "TableField", "stored", "table_fields"]


@dataclass(frozen=True)
class _Scalar:
    """A column that holds one value on every row (a broadcast scalar, as pandas assigns one)."""

    value: Any


def _is_scalar(value: Any) -> bool:
    return value is None or isinstance(value, (str, bytes, bool, int, float, np.generic))


class Columns:
    """A table as named columns in order: 1-D numpy arrays, lists, or scalars broadcast to every row.

    Parameters
    ----------
    columns : mapping, optional
        Name -> values (each of ``length`` entries, or a scalar).
    length : int
        The number of rows.
    index_name : str, optional
        The row index's name (the DataFrame's ``RangeIndex``); None: an unnamed index.
    start : int
        The row index's first value (``RangeIndex(start, start + length)``).

    Examples
    --------
    >>> table = Columns({"volume": np.array([9, 4])}, length=2, index_name="component", start=1)
    >>> table["dice"] = np.array([1.0, 0.5])
    >>> table.insert(0, "case", "c1")
    >>> frame = table.frame()
    >>> frame.index.tolist(), frame.index.name, frame.columns.tolist(), frame.dtypes.astype(str).tolist()
    ([1, 2], 'component', ['case', 'volume', 'dice'], ['str', 'int64', 'float64'])
    >>> encoded = table.encoded()
    >>> encoded["dtypes"], encoded["data"]
    (['str', 'int64', 'float64'], [['c1', 9, 1.0], ['c1', 4, 0.5]])
    """

    __slots__ = ("_columns", "length", "index_name", "start")

    def __init__(
        self,
        columns: dict[str, Any] | None = None,
        *,
        length: int,
        index_name: str | None = None,
        start: int = 0,
    ) -> None:
        self._columns: dict[str, Any] = {}
        self.length, self.index_name, self.start = int(length), index_name, int(start)
        for name, values in (columns or {}).items():
            self[name] = values

    def __len__(self) -> int:
        return self.length

    def __contains__(self, name: object) -> bool:
        return name in self._columns

    def __iter__(self) -> Iterator[str]:
        return iter(self._columns)

    @property
    def names(self) -> list[str]:
        """The column names, in order."""
        return list(self._columns)

    columns = names  # as a DataFrame names them: code that shapes a table serves both kinds

    def __setitem__(self, name: str, values: Any) -> None:
        """Set (or replace, in its place) a column: an array or list of ``length`` entries, or a scalar."""
        if _is_scalar(values):
            self._columns[name] = _Scalar(values)
            return
        if len(values) != self.length:
            raise ValueError(f"column {name!r} has {len(values)} entries for a table of {self.length} rows")
        self._columns[name] = values

    def __getitem__(self, name: str | list[str]) -> Any:
        """A column's values (a scalar column: broadcast to an array); with a list of names, those columns
        (:meth:`select`)."""
        if isinstance(name, list):
            return self.select(name)
        values = self._columns[name]
        if isinstance(values, _Scalar):
            return np.full(self.length, values.value)
        return values

    def insert(self, position: int, name: str, values: Any) -> None:
        """Put a new column at ``position`` (as ``DataFrame.insert``)."""
        if name in self._columns:
            raise ValueError(f"column {name!r} exists already")
        items = list(self._columns.items())
        self._columns = dict(items[:position])
        self[name] = values
        self._columns.update(items[position:])

    def reset_index(self) -> Columns:
        """The row index as the first column (named as the index; int64), and a plain index (``reset_index()``)."""
        if self.index_name is None:
            raise ValueError("an unnamed index is not kept as a column")
        out = Columns(
            {self.index_name: np.arange(self.start, self.start + self.length, dtype=np.int64)}, length=self.length
        )
        out._columns.update(self._columns)
        return out

    def select(self, names: Sequence[str]) -> Columns:
        """These columns, in this order (``table[names]``)."""
        out = Columns(length=self.length, index_name=self.index_name, start=self.start)
        out._columns = {name: self._columns[name] for name in names}
        return out

    def to_numpy(self, dtype: Any = None) -> np.ndarray:
        """The columns side by side as one ``(length, columns)`` array (``DataFrame.to_numpy``)."""
        if not self._columns:
            return np.zeros((self.length, 0), dtype)
        return np.column_stack([np.asarray(self[name], dtype=dtype) for name in self._columns]).reshape(
            self.length, len(self._columns)
        )

    @staticmethod
    def concat(tables: Sequence[Columns]) -> Columns:
        """The rows of tables with the same columns, one after the other, under a plain index (``pd.concat(...,
        ignore_index=True)`` of such tables); a column that is one scalar in every table stays one."""
        first = tables[0]
        if any(t.names != first.names for t in tables):
            raise ValueError("tables with other columns are not concatenated here")
        out = Columns(length=sum(t.length for t in tables))
        for name in first.names:
            parts = [t._columns[name] for t in tables]
            if all(isinstance(p, _Scalar) and p == parts[0] for p in parts):
                out._columns[name] = parts[0]
            else:
                arrays = [t[name] for t in tables]
                if all(isinstance(a, list) for a in arrays):
                    out._columns[name] = [v for a in arrays for v in a]
                else:
                    out._columns[name] = np.concatenate([np.asarray(a) for a in arrays])
        return out

    def frame(self) -> pd.DataFrame:
        """The DataFrame (see the module docstring for how it is made)."""
        import pandas as pd

        index = pd.RangeIndex(self.start, self.start + self.length, name=self.index_name)
        arrays = {name: v for name, v in self._columns.items() if not isinstance(v, _Scalar)}
        table = pd.DataFrame(arrays, index=index)
        for name, v in self._columns.items():
            if isinstance(v, _Scalar):
                table[name] = v.value
        if list(table.columns) != self.names:
            table = table[self.names]
        return table

    def encoded(self) -> dict[str, Any]:
        """The table as the records store one (``columns``, ``dtypes``, ``data`` row by row, values as plain Python
        numbers, booleans and strings), without pandas: the dtypes are those pandas gives these columns, text named
        ``"str"`` (:func:`ccmetrics.campaign.records.decode_output` reads it as pandas' text dtype)."""
        dtypes, lists = [], []
        for v in self._columns.values():
            if isinstance(v, _Scalar):
                dtypes.append(_scalar_dtype(v.value))
                value = v.value.item() if isinstance(v.value, np.generic) else v.value
                lists.append([value] * self.length)
            elif isinstance(v, np.ndarray):
                dtypes.append("str" if v.dtype.kind in "US" else _array_dtype(v))
                lists.append(v.tolist())
            else:
                dtypes.append(_list_dtype(v))
                lists.append([x.item() if isinstance(x, np.generic) else x for x in v])
        return {"columns": self.names, "dtypes": dtypes, "data": [list(row) for row in zip(*lists)]}


def _scalar_dtype(value: Any) -> str:
    if isinstance(value, str):
        return "str"
    if value is None:
        return "object"
    return str(np.asarray(value).dtype)  # bool, int64, float64 as pandas stores a broadcast Python scalar


def _array_dtype(values: np.ndarray) -> str:
    if values.dtype == object:
        return _list_dtype(list(values))
    return str(values.dtype)


def _list_dtype(values: list[Any]) -> str:
    """The dtype pandas infers for a list column (the cases results hold): text, booleans, integers, floats."""
    if not values:
        return "float64"  # an empty list: pandas' float64
    if all(isinstance(v, str) for v in values):
        return "str"
    if all(isinstance(v, (bool, np.bool_)) for v in values):
        return "bool"
    if all(isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_)) for v in values):
        return "int64"
    if all(
        isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, (bool, np.bool_)) for v in values
    ):
        return "float64"
    raise TypeError("a column of other values than text, booleans or numbers is not encoded without pandas")


class TableField:
    """The attribute of a result dataclass's field that holds a table as :class:`Columns` (or a DataFrame) and gives a
    DataFrame when read: made on the first read, then kept (installed by :func:`table_fields`)."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name, self.slot = name, f"_{name}_table"

    def __get__(self, obj: Any, owner: type | None = None) -> Any:
        if obj is None:
            return self
        value = obj.__dict__[self.slot]
        if isinstance(value, Columns):
            value = value.frame()
            obj.__dict__[self.slot] = value
        return value

    def __set__(self, obj: Any, value: Any) -> None:
        obj.__dict__[self.slot] = value


def table_fields(*names: str) -> Any:
    """Class decorator, over ``@dataclass``: the fields ``names`` (annotated as DataFrames) take :class:`Columns` too,
    and give a DataFrame when read (:class:`TableField`). The dataclass stays as it was: its fields, their order
    and defaults, ``__init__``, ``repr``, ``fields()``, pickling.

    >>> from dataclasses import dataclass
    >>> @table_fields("table")
    ... @dataclass(frozen=True)
    ... class Result:
    ...     table: pd.DataFrame
    >>> r = Result(Columns({"x": [1, 2]}, length=2))
    >>> type(stored(r, "table")).__name__, r.table["x"].tolist(), type(stored(r, "table")).__name__
    ('Columns', [1, 2], 'DataFrame')
    """

    def install(cls: type) -> type:
        for name in names:
            attribute = TableField()
            attribute.__set_name__(cls, name)
            setattr(cls, name, attribute)
        return cls

    return install


def stored(obj: Any, name: str) -> Any:
    """What the :class:`TableField` ``name`` of ``obj`` holds now: its :class:`Columns` while no one has read it as a
    DataFrame (then the DataFrame), or None."""
    return obj.__dict__[f"_{name}_table"]
