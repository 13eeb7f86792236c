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

For type checkers ``frozen`` is ``dataclass_transform``-ed (frozen by default), so mypy sees
the same classes as with ``@dataclass(frozen=True)``.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable
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
            dataclasses.dataclass(klass, frozen=True, **opts)
    return cls


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
        return cast(T, dataclasses.dataclass(cls, frozen=True, **opts))
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
