"""``@frozen``: logmem's immutable records, dataclasses whose methods are made on first use.

Every fact logmem holds is a frozen dataclass, and the package defines about 400 of them.
On CPython 3.10-3.12, ``dataclasses.dataclass`` compiles each class's ``__init__``,
``__repr__``, ``__eq__``, ``__hash__``, ``__setattr__`` and ``__delattr__`` from source when
the class is defined: about 0.6 ms a class, 145 ms of a 260 ms ``logmem analyze`` of a small
log, where only 69 of the 216 classes it imports are ever instantiated. ``@frozen`` defers
that work: the class is handed to ``dataclasses.dataclass(frozen=True, ...)``, unchanged,
the first time it (or a subclass) is instantiated or :func:`realise` is called on it.

What this changes, and why it is safe:

* Until then the class holds a placeholder ``__init__`` that realises the class and every
  lazy base in its MRO (each placeholder is removed before ``dataclass`` sees its class) and
  then calls the ``__init__`` that ``dataclass`` made. No instance is initialised before its
  class is realised (unpickling goes through a placeholder ``__setstate__`` that does the
  same), so ``fields``, ``replace``, ``asdict``, ``==``, ``hash``, ``repr`` and
  pickling of instances behave exactly as for a dataclass.
* Introspecting a class that has no instance yet (``dataclasses.fields(Cls)``,
  ``is_dataclass(Cls)``) needs :func:`realise` first: the tests that walk record classes do.
* A class whose body defines its own ``__init__``, ``__setstate__`` or ``__slots__`` is
  realised at once.
* Realisation takes a lock, so two threads that make the first instances of a class at the
  same moment cannot both run ``dataclass`` on it.

Realising is itself made cheaper (:func:`_make`): on CPython before 3.13 ``dataclass``
compiles each of the six methods with its own ``exec``, and compiling was 60% of the time a
small ``logmem analyze`` spent realising its ~70 classes. ``_make`` lets ``dataclass`` write
``__init__`` (the frozen ``__init__`` must bypass ``__setattr__``, which only generated
code does at full speed), lends it closures for ``__setattr__`` and ``__delattr__`` (its
private ``_frozen_get_del_attr``, swapped for the call), and builds ``__repr__``, ``__eq__``
and ``__hash__`` as closures over ``operator.attrgetter``, with the same
semantics as the generated ones: the compared fields as a tuple, equal only for the same
class, ``NotImplemented`` otherwise; the ``repr`` fields as ``Name(a=1, b='b')`` with "..."
for a recursive repr; the same rule for when ``__hash__`` is added; and
``__dataclass_params__`` saying ``repr=True, eq=True``. Compiling ``__init__`` was then
half of what was left (0.18 of 0.33 ms a class): for a class whose fields are all plain (no
``default_factory``, ``init=False``, InitVar or ``__post_init__``: 382 of 383) ``dataclass``
is asked for no ``__init__`` and ``_plain_init`` makes the one it would have written from a
template compiled once per number of parameters, its names replaced by the fields' (the
same code, defaults, annotations, globals, qualified name and ``__doc__`` signature;
tests/test_frozen.py compares them). Python 3.13 compiles a class's
methods in one ``exec`` already (and compares field by field), so there ``dataclass`` does
it all.

The few mutable classes (the model's builders, ReadStats) use :func:`mutable`: a plain
``dataclass`` made at once, with the same closures for ``__repr__`` and ``__eq__``.

For type checkers ``frozen`` is ``dataclass_transform``-ed (frozen by default), so mypy sees
the same classes as with ``@dataclass(frozen=True)``.
"""

from __future__ import annotations

import dataclasses
import inspect
import sys
import threading
import types
from collections.abc import Callable
from operator import attrgetter
from typing import TYPE_CHECKING, Any, TypeVar, cast, overload

if TYPE_CHECKING:
    from typing_extensions import dataclass_transform
else:

    def dataclass_transform(**_kwargs: Any) -> Callable[[Any], Any]:
        return lambda f: f


T = TypeVar("T", bound=type)

# The options a lazy class will be realised with, kept in the class's own __dict__ (so a
# subclass does not inherit its base's pending state).
_PENDING = "__logmem_frozen_pending__"
_LOCK = threading.RLock()


def realise(cls: type) -> type:
    """Make ``cls`` and its lazy bases full dataclasses now (idempotent); returns ``cls``."""
    with _LOCK:
        for klass in reversed(cls.__mro__):
            opts: dict[str, Any] | None = klass.__dict__.get(_PENDING)
            if opts is None:
                continue
            # dataclass() keeps an __init__ it finds in the class body, so the placeholder
            # goes first; it must see the class as written.
            delattr(klass, "__init__")
            delattr(klass, "__setstate__")
            delattr(klass, _PENDING)
            _make(klass, opts)
    return cls


def _tuple_of(names: tuple[str, ...]) -> Callable[[Any], tuple[Any, ...]]:
    """``lambda o: (o.a, o.b, ...)``: what the generated methods compare and hash."""
    if len(names) >= 2:
        return cast(Callable[[Any], tuple[Any, ...]], attrgetter(*names))
    if len(names) == 1:
        get = attrgetter(names[0])
        return lambda o: (get(o),)
    return lambda o: ()


def _repr_method(names: tuple[str, ...]) -> Callable[[Any], str]:
    running: set[tuple[int, int]] = set()

    def __repr__(self: Any) -> str:
        # As dataclasses' _recursive_repr: a record that contains itself shows "...".
        key = id(self), threading.get_ident()
        if key in running:
            return "..."
        running.add(key)
        try:
            inner = ", ".join([f"{n}={getattr(self, n)!r}" for n in names])
        finally:
            running.discard(key)
        return f"{self.__class__.__qualname__}({inner})"

    return __repr__


def _eq_method(values: Callable[[Any], tuple[Any, ...]]) -> Callable[[Any, Any], Any]:
    def __eq__(self: Any, other: Any) -> Any:
        if other.__class__ is self.__class__:
            return values(self) == values(other)
        return NotImplemented

    return __eq__


def _hash_method(values: Callable[[Any], tuple[Any, ...]]) -> Callable[[Any], int]:
    def __hash__(self: Any) -> int:
        return hash(values(self))

    return __hash__


def _frozen_get_del_attr(cls: Any, fields: list[Any], globals: Any) -> tuple[Any, Any]:
    """dataclasses' own ``_frozen_get_del_attr`` (3.10-3.12), as closures instead of two
    compiled functions: the same test (the class itself, or a field's name) and messages."""
    names = tuple(f.name for f in fields)
    error = dataclasses.FrozenInstanceError

    def __setattr__(self: Any, name: str, value: Any) -> None:
        if type(self) is cls or name in names:
            raise error(f"cannot assign to field {name!r}")
        super(cls, self).__setattr__(name, value)

    def __delattr__(self: Any, name: str) -> None:
        if type(self) is cls or name in names:
            raise error(f"cannot delete field {name!r}")
        super(cls, self).__delattr__(name)

    return __setattr__, __delattr__


def _set_method(cls: Any, name: str, fn: Any) -> None:
    fn.__qualname__ = f"{cls.__qualname__}.{name}"
    setattr(cls, name, fn)


def _make(cls: T, opts: dict[str, Any]) -> T:
    """``dataclasses.dataclass(cls, frozen=True, **opts)``, with three of its six compiled
    methods made as closures instead (see the module docstring)."""
    if sys.version_info >= (3, 13):
        return cast(T, dataclasses.dataclass(cls, frozen=True, **opts))
    has_repr, has_eq, explicit_hash = _own_methods(cls)
    # The private helper is swapped only while this class is made (under _LOCK, so two
    # threads cannot interleave swaps), and put back whatever happens. Another thread's own
    # frozen dataclass made meanwhile would get the same closures: the same behaviour.
    plain = _plain(cls)
    doc = cls.__doc__
    with _LOCK:
        made: Any = dataclasses
        original = made._frozen_get_del_attr
        made._frozen_get_del_attr = _frozen_get_del_attr
        try:
            if plain and not doc:
                # Its __doc__ is the signature of the __init__ made below, not the inherited one.
                cls.__doc__ = "-"
            dataclasses.dataclass(cls, frozen=True, init=not plain, repr=False, eq=False, **opts)
        finally:
            made._frozen_get_del_attr = original
    klass: Any = cls
    klass.__dataclass_params__.init = True
    fields = dataclasses.fields(klass)
    if plain:
        _set_method(klass, "__init__", _plain_init(klass, fields))
        if not doc:
            klass.__doc__ = _doc(klass, fields)
    _add_repr_eq(klass, fields, has_repr, has_eq)
    if not explicit_hash:
        hashed = tuple(f.name for f in fields if (f.compare if f.hash is None else f.hash))
        _set_method(klass, "__hash__", _hash_method(_tuple_of(hashed)))
    return cls


def _own_methods(cls: type) -> tuple[bool, bool, bool]:
    """Whether the class body wrote __repr__, __eq__ and __hash__ (dataclass's own rule for
    the last: the None that Python puts there for a body that defines __eq__ alone is not one)."""
    own = cls.__dict__
    explicit_hash = "__hash__" in own and not (own["__hash__"] is None and "__eq__" in own)
    return "__repr__" in own, "__eq__" in own, explicit_hash


def _add_repr_eq(
    klass: Any, fields: tuple[dataclasses.Field[Any], ...], has_repr: bool, has_eq: bool
) -> None:
    """The __repr__ and __eq__ dataclass would have compiled, as closures (module docstring)."""
    params = klass.__dataclass_params__
    params.repr = params.eq = True
    if not has_repr:
        _set_method(klass, "__repr__", _repr_method(tuple(f.name for f in fields if f.repr)))
    if not has_eq:
        _set_method(
            klass, "__eq__", _eq_method(_tuple_of(tuple(f.name for f in fields if f.compare)))
        )


@dataclass_transform()
def mutable(cls: T) -> T:
    """``@dataclass`` for logmem's few mutable classes (the model's builders, ReadStats, a
    Scene), made at once as dataclass makes them but with __repr__ and __eq__ as the
    closures @frozen uses instead of two more compiles each: the ten a small analyze imports
    took 8.6 ms in dataclass. Same semantics, and unhashable as dataclass leaves a mutable
    class with __eq__ (unless its body wrote a __hash__)."""
    if sys.version_info >= (3, 13):  # one compile for all methods there already
        return cast(T, dataclasses.dataclass(cls))
    has_repr, has_eq, explicit_hash = _own_methods(cls)
    dataclasses.dataclass(cls, repr=False, eq=False)
    klass: Any = cls
    _add_repr_eq(klass, dataclasses.fields(klass), has_repr, has_eq)
    if not explicit_hash:
        klass.__hash__ = None
    return cls


def _plain(cls: type) -> bool:
    """Whether ``cls``'s __init__ can be _plain_init's: none of its own, no __post_init__,
    and in every class of its MRO each field an annotation with at most a plain default (no
    default_factory, ``init=False``, InitVar or KW_ONLY, which change what the generated
    __init__ does)."""
    if hasattr(cls, "__post_init__") or "__init__" in cls.__dict__:  # dataclass keeps its own
        return False
    for klass in cls.__mro__:
        own = klass.__dict__
        for name, kind in own.get("__annotations__", {}).items():
            declared = own.get(name)
            if name in _RESERVED or (
                isinstance(declared, dataclasses.Field) and not _plain_field(declared)
            ):
                return False
            if isinstance(kind, str):
                if "InitVar" in kind or "KW_ONLY" in kind:
                    return False
            elif (
                kind is _KW_ONLY
                or kind is dataclasses.InitVar
                or isinstance(kind, dataclasses.InitVar)
            ):
                return False
        made: dict[str, dataclasses.Field[Any]] = own.get("__dataclass_fields__", {})
        if not all(_plain_field(f) for f in made.values()):
            return False
    return True


def _plain_field(f: dataclasses.Field[Any]) -> bool:
    return f.init and f.default_factory is dataclasses.MISSING


# Parameter names the generated __init__ uses itself (dataclass renames self for a field
# of that name; the rest would shadow its helper): such a class is left to dataclass.
_RESERVED = frozenset({"self", "__dataclass_builtins_object__"})
_KW_ONLY: Any = getattr(dataclasses, "KW_ONLY", None)  # Python 3.10+
_OBJECT_NEW: Any = object.__new__
# _plain_init's compiled templates, by (positional, keyword-only) parameter count.
_TEMPLATES: dict[tuple[int, int], types.CodeType] = {}


def _template(positional: int, keyword: int) -> types.CodeType:
    """The code dataclass generates for a frozen __init__ of that many plain fields, with
    fields named _f0, _f1, ...: compiled once per shape, renamed per class."""
    code = _TEMPLATES.get((positional, keyword))
    if code is None:
        names = [f"_f{i}" for i in range(positional + keyword)]
        params = ["self", *names[:positional], *(["*"] if keyword else []), *names[positional:]]
        body = [f"__dataclass_builtins_object__.__setattr__(self,{n!r},{n})" for n in names]
        text = "\n".join(f"  {line}" for line in body or ["pass"])
        source = (
            f"def __create_fn__(__dataclass_builtins_object__):\n"
            f" def __init__({','.join(params)}):\n{text}\n return __init__"
        )
        made: dict[str, Any] = {}
        exec(source, {}, made)  # noqa: S102 - a fixed template, as dataclasses' own exec
        code = made["__create_fn__"](object).__code__
        _TEMPLATES[positional, keyword] = code
    return code


def _plain_init(cls: Any, fields: tuple[dataclasses.Field[Any], ...]) -> Callable[..., None]:
    """The __init__ ``dataclass(frozen=True)`` writes for fields that are all plain (see
    _plain), without compiling it: compiling was half the cost of realising a class (0.18 ms
    of 0.33 ms). The template's code object gets the fields' names, as parameters and as
    the attribute names it sets; the function gets the defaults, annotations, globals
    (the class's module) and name that dataclass gives its own."""
    positional = [f for f in fields if not f.kw_only]
    keyword = [f for f in fields if f.kw_only]
    seen_default = False
    for f in positional:  # dataclass's own check, with its words
        if f.default is not dataclasses.MISSING:
            seen_default = True
        elif seen_default:
            raise TypeError(f"non-default argument {f.name!r} follows default argument")
    template = _template(len(positional), len(keyword))
    renamed = {f"_f{i}": f.name for i, f in enumerate(positional + keyword)}
    code = template.replace(
        co_varnames=tuple(renamed.get(n, n) for n in template.co_varnames),
        co_consts=tuple(renamed.get(c, c) if isinstance(c, str) else c for c in template.co_consts),
    )
    defaults = tuple(f.default for f in positional if f.default is not dataclasses.MISSING)
    init: Any = types.FunctionType(
        code,
        sys.modules[cls.__module__].__dict__,
        "__init__",
        defaults or None,
        tuple(types.CellType(object) for _ in template.co_freevars),  # none without fields
    )
    kw_defaults = {f.name: f.default for f in keyword if f.default is not dataclasses.MISSING}
    init.__kwdefaults__ = kw_defaults or None
    init.__annotations__ = {f.name: f.type for f in positional + keyword} | {"return": None}
    return cast(Callable[..., None], init)


def _doc(cls: Any, fields: tuple[dataclasses.Field[Any], ...]) -> str:
    """dataclass's __doc__ for a class without a docstring, ``Name(a: 'int', b: 'str' = 'x')``,
    for a class _plain_init made the __init__ of. inspect.signature took 1.8 ms of a small
    analyze for the 28 classes without a docstring; for a plain class whose annotations are
    strings (``from __future__ import annotations``, as throughout logmem) its text is the
    fields' own, as Signature.__str__ writes them: ``name: 'type'``, `` = repr(default)``, a
    ``*`` before the keyword-only ones and `` -> None``, which dataclass then removes."""
    simple = (
        type(cls) is type
        and cls.__new__ is _OBJECT_NEW
        and not hasattr(cls, "__signature__")
        and not hasattr(cls, "__wrapped__")
        and all(isinstance(f.type, str) for f in fields)
    )
    if not simple:  # dataclass's own code
        cls.__doc__ = None
        try:
            text_sig = str(inspect.signature(cls)).replace(" -> None", "")
        except (TypeError, ValueError):
            text_sig = ""
        return str(cls.__name__ + text_sig)
    params = []
    star = False
    for f in fields:
        if f.kw_only and not star:
            params.append("*")
            star = True
        text = f"{f.name}: {f.type!r}"
        params.append(text if f.default is dataclasses.MISSING else f"{text} = {f.default!r}")
    return str(cls.__name__ + f"({', '.join(params)}) -> None".replace(" -> None", ""))


def _placeholder_init(owner: Any) -> Callable[..., None]:
    # Bound to its own class, not type(self): a subclass's __init__ that calls
    # super().__init__() must reach this class's generated __init__, not its own again.
    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        realise(type(self))
        owner.__init__(self, *args, **kwargs)

    return __init__


def _placeholder_setstate(self: Any, state: Any) -> None:
    # Unpickling makes an instance without calling __init__ (in a process that had not
    # made one yet), so it too must realise the class first; then the default state rule.
    realise(type(self))
    self.__dict__.update(state)


def _decorate(cls: T, opts: dict[str, Any]) -> T:
    # A class that writes its own __init__ or __setstate__ is made at once (a placeholder
    # would shadow it), and so is one with __slots__ (its layout is fixed at creation).
    if any(name in cls.__dict__ for name in ("__init__", "__setstate__", "__slots__")):
        return _make(cls, opts)
    klass: Any = cls
    setattr(klass, _PENDING, opts)
    klass.__init__ = _placeholder_init(cls)
    klass.__setstate__ = _placeholder_setstate
    return cls


@overload
@dataclass_transform(frozen_default=True)
def frozen(cls: T, /) -> T: ...


@overload
@dataclass_transform(frozen_default=True)
def frozen(*, kw_only: bool = False) -> Callable[[T], T]: ...


@dataclass_transform(frozen_default=True)
def frozen(cls: T | None = None, /, *, kw_only: bool = False) -> Any:
    """``@frozen`` or ``@frozen(kw_only=True)``: ``@dataclass(frozen=True, ...)``, made on first use."""
    opts: dict[str, Any] = {"kw_only": kw_only}
    if cls is None:
        return lambda c: _decorate(c, opts)
    return _decorate(cls, opts)
