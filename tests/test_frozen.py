"""logmem.frozen: records made on first use behave as frozen dataclasses, before and after."""

from __future__ import annotations

import copy
import dataclasses
import inspect
import subprocess
import sys
import threading
from collections.abc import Callable
from typing import Any, ClassVar

import pytest

from conftest import REPO
from logmem.frozen import frozen, mutable, realise


def _pair() -> tuple[type, type]:
    @frozen
    class Base:
        """A record."""

        a: int
        b: str = "b"

    @frozen(kw_only=True)
    class Child(Base):
        c: tuple[int, ...] = dataclasses.field(default=())

        def __post_init__(self) -> None:
            object.__setattr__(self, "n", len(self.c))

    return Base, Child


def test_not_made_until_first_instance() -> None:
    base, child = _pair()
    assert not dataclasses.is_dataclass(base) and not dataclasses.is_dataclass(child)
    x = child(a=1, c=(2, 3))
    # The child's first instance made its lazy base too, in MRO order.
    assert dataclasses.is_dataclass(base) and dataclasses.is_dataclass(child)
    assert x.n == 2 and repr(x).endswith("Child(a=1, b='b', c=(2, 3))")
    assert "__init__" in vars(child) and vars(child)["__init__"].__qualname__.endswith("__init__")


def test_semantics_equal_a_frozen_dataclass() -> None:
    base, child = _pair()
    x = child(a=1, c=(2,))
    with pytest.raises(dataclasses.FrozenInstanceError):
        x.a = 2  # type: ignore[misc]
    assert x == child(a=1, c=(2,)) and hash(x) == hash(child(a=1, c=(2,)))
    assert x != base(1)
    assert dataclasses.replace(x, b="q").b == "q"
    assert dataclasses.asdict(x) == {"a": 1, "b": "b", "c": (2,)}
    assert copy.deepcopy(x) == x
    with pytest.raises(TypeError):
        child(1, "b", (2,))  # c is keyword-only, as declared


def test_realise_is_idempotent_and_enables_introspection() -> None:
    base, _ = _pair()
    assert realise(base) is base and realise(base) is base
    assert [f.name for f in dataclasses.fields(base)] == ["a", "b"]
    assert base(2) == base(2)


def test_plain_subclass_with_own_init_reaches_the_generated_one() -> None:
    base, _ = _pair()

    class Plain(base):  # type: ignore[misc,valid-type]
        def __init__(self, v: int) -> None:
            super().__init__(v, "plain")

    p = Plain(4)
    assert (p.a, p.b) == (4, "plain")


def test_own_init_or_slots_is_made_at_once() -> None:
    @frozen
    class Own:
        a: int

        def __init__(self, a: int) -> None:
            object.__setattr__(self, "a", a * 2)

    assert dataclasses.is_dataclass(Own) and Own(2).a == 4


def test_unpickled_first_instance_realises_its_class(tmp_path: object) -> None:
    """A fresh process that meets the class first through pickle still gets == and repr."""
    code = (
        "import pickle, sys\n"
        "from logmem.model.records import Model\n"
        "m = pickle.loads(sys.stdin.buffer.read())\n"
        "print(repr(m) == repr(Model(**{f: getattr(m, f) for f in m.__dataclass_fields__})))\n"
    )
    dump = (
        "import pickle, sys, dataclasses\n"
        "from logmem.model.records import Model\n"
        "from logmem.frozen import realise\n"
        "fs = {f.name: None for f in dataclasses.fields(realise(Model))}\n"
        "sys.stdout.buffer.write(pickle.dumps(Model(**fs)))\n"
    )
    blob = subprocess.run([sys.executable, "-c", dump], capture_output=True, cwd=REPO, check=True)
    out = subprocess.run(
        [sys.executable, "-c", code], input=blob.stdout, capture_output=True, cwd=REPO, check=True
    )
    assert out.stdout.strip() == b"True", out.stderr


def test_threads_making_first_instances_at_once() -> None:
    made: list[object] = []
    for _ in range(20):
        base, child = _pair()
        threads = [threading.Thread(target=lambda c=child: made.append(c(a=1))) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert len({repr(m) for m in made[-4:]}) == 1


# --- realisation builds the same class as dataclass(frozen=True) -------------------------


def _layouts() -> list[dict[str, Any]]:
    """Class bodies covering what the package's records use: defaults, default_factory,
    compare=False, repr=False, hash=, ClassVar, __post_init__, own __eq__/__hash__/__repr__,
    a field named self, no fields, one field."""

    def post(self: Any) -> None:
        object.__setattr__(self, "seen", True)

    return [
        {"__annotations__": {}},
        {"__annotations__": {"a": int}},
        {"__annotations__": {"a": int, "b": str}, "b": "b"},
        {
            "__annotations__": {"a": int, "b": "list[int]", "c": float, "k": ClassVar[int]},
            "b": dataclasses.field(default_factory=list),
            "c": dataclasses.field(default=1.5, compare=False, repr=False),
            "k": 3,
            "__post_init__": post,
        },
        {
            "__annotations__": {"a": int, "b": int, "c": int},
            "b": dataclasses.field(default=0, hash=False),
            "c": dataclasses.field(default=0, compare=False, hash=True),
        },
        {"__annotations__": {"self": int, "x": int}, "x": 1},
        {"__annotations__": {"a": int}, "__eq__": lambda s, o: True},
        {"__annotations__": {"a": int}, "__eq__": lambda s, o: True, "__hash__": lambda s: 7},
        {"__annotations__": {"a": int}, "__repr__": lambda s: "mine", "__doc__": "Doc."},
    ]


def _same_init(ours: type, ref: type) -> None:
    """The __init__ frozen made (compiled or from its template) is dataclass's own."""
    mine, theirs = vars(ours)["__init__"], vars(ref)["__init__"]
    assert str(inspect.signature(mine)) == str(inspect.signature(theirs))
    assert mine.__defaults__ == theirs.__defaults__
    assert mine.__kwdefaults__ == theirs.__kwdefaults__
    assert mine.__annotations__ == theirs.__annotations__
    assert mine.__globals__ is theirs.__globals__
    for name in ("co_name", "co_varnames", "co_argcount", "co_kwonlyargcount", "co_freevars"):
        assert getattr(mine.__code__, name) == getattr(theirs.__code__, name), name
    if sys.version_info >= (3, 11):
        assert mine.__code__.co_qualname == theirs.__code__.co_qualname
    # The words of a wrong call (they name the function by its code).
    for args, kwargs in (((), {}), ((1,) * 9, {}), ((), {"nope": 1})):
        assert _refusal(ours, args, kwargs) == _refusal(ref, args, kwargs)


def _refusal(cls: type, args: tuple[Any, ...], kwargs: dict[str, Any]) -> str | None:
    try:
        cls(*args, **kwargs)
    except TypeError as e:
        return str(e)
    return None


def test_a_default_before_a_field_without_one_is_refused_as_dataclass_does() -> None:
    body = {"__annotations__": {"a": int, "b": int}, "a": 1}
    ours = frozen(type("Rec", (), dict(body)))
    with pytest.raises(TypeError) as got:
        realise(ours)
    with pytest.raises(TypeError) as want:
        dataclasses.dataclass(frozen=True)(type("Rec", (), dict(body)))
    assert str(got.value) == str(want.value)


def _family(base: Callable[[type], type], sub: Callable[[type], type]) -> tuple[type, type]:
    # Made twice, so that both families have the same qualified names.
    @base
    class Base:
        a: int
        b: str = "b"

    @sub
    class Sub(Base):  # type: ignore[valid-type, misc]
        c: float
        d: int = 4

    return Base, Sub


def test_plain_subclass_fields_and_defaults_are_dataclass_ones() -> None:
    ours = _family(frozen, frozen(kw_only=True))
    ref = _family(
        dataclasses.dataclass(frozen=True), dataclasses.dataclass(frozen=True, kw_only=True)
    )
    realise(ours[1])
    for mine, theirs in zip(ours, ref):
        _same_init(mine, theirs)
        assert mine.__doc__ == theirs.__doc__ and mine.__match_args__ == theirs.__match_args__
    assert repr(ours[1](1, c=2.0)) == repr(ref[1](1, c=2.0))


def _twins(body: dict[str, Any], kw_only: bool) -> tuple[type, type]:
    ours = frozen(kw_only=kw_only)(type("Rec", (), dict(body)))
    ref = dataclasses.dataclass(frozen=True, kw_only=kw_only)(type("Rec", (), dict(body)))
    return realise(ours), ref


def _sample(cls: type) -> tuple[Any, Any]:
    names = [f.name for f in dataclasses.fields(cls) if f.init and f.default is dataclasses.MISSING]
    one = cls(**{n: 1 for n in names})
    two = cls(**{n: 2 for n in names})
    return one, two


@pytest.mark.parametrize("kw_only", [False, True])
@pytest.mark.parametrize("index", range(len(_layouts())))
def test_realised_class_is_the_dataclass_one(index: int, kw_only: bool) -> None:
    ours, ref = _twins(_layouts()[index], kw_only)
    assert repr(ours.__dataclass_params__) == repr(ref.__dataclass_params__)
    assert [repr(f) for f in dataclasses.fields(ours)] == [repr(f) for f in dataclasses.fields(ref)]
    assert ours.__doc__ == ref.__doc__ and ours.__match_args__ == ref.__match_args__
    assert (ours.__hash__ is None) == (ref.__hash__ is None)
    for name in ("__init__", "__repr__", "__eq__", "__hash__", "__setattr__", "__delattr__"):
        assert (name in vars(ours)) == (name in vars(ref)), name
        if name in vars(ours) and callable(vars(ours)[name]):
            assert vars(ours)[name].__qualname__ == vars(ref)[name].__qualname__
    _same_init(ours, ref)
    (a1, a2), (b1, b2) = _sample(ours), _sample(ref)
    assert repr(a1) == repr(b1) and repr(a2) == repr(b2)
    assert (a1 == a2) == (b1 == b2) and (a1 == a1) == (b1 == b1)
    if "__eq__" not in _layouts()[index]:
        assert (a1 == b1) is False  # another class, even with the same fields and values
        assert a1.__eq__(b1) is NotImplemented and b1.__eq__(a1) is NotImplemented
    assert hash(a1) == hash(b1) and hash(a2) == hash(b2)
    assert dataclasses.asdict(a1) == dataclasses.asdict(b1)
    assert repr(dataclasses.replace(a1)) == repr(dataclasses.replace(b1))
    with pytest.raises(dataclasses.FrozenInstanceError):
        a1.x = 1
    with pytest.raises(dataclasses.FrozenInstanceError):
        del a1.x
    # copy goes through __reduce_ex__ as pickle does (a local class cannot be pickled).
    assert copy.deepcopy(a1) == a1 and repr(copy.copy(a1)) == repr(a1)


def test_realised_eq_hash_repr_details() -> None:
    @frozen
    class Cell:
        v: Any
        note: str = dataclasses.field(default="", compare=False)

    nan = float("nan")
    # Tuples compare items by identity first: the same NaN is equal, as with dataclass.
    assert Cell(nan) == Cell(nan) and Cell(float("nan")) != Cell(float("nan"))
    assert Cell(1, "x") == Cell(1, "y") and hash(Cell(1, "x")) == hash(Cell(1, "y"))
    assert hash(Cell(1)) == hash((1,))
    loop = Cell([])
    loop.v.append(loop)
    assert repr(loop) == "test_realised_eq_hash_repr_details.<locals>.Cell(v=[...], note='')"

    @frozen
    class Sub(Cell):
        w: int = 0

    assert (
        Sub(1) != Cell(1)
        and Sub(1) == Sub(1)
        and repr(Sub(1, w=2)).endswith("Sub(v=1, note='', w=2)")
    )
    with pytest.raises(TypeError, match="unhashable"):
        hash(Cell([]))


def test_frozen_setattr_rules_match_dataclass() -> None:
    @frozen
    class Ours:
        a: int

    @dataclasses.dataclass(frozen=True)
    class Ref:
        a: int

    class OursPlain(Ours):  # not a dataclass: its own attributes may be set
        pass

    class RefPlain(Ref):
        pass

    for cls, plain in ((Ours, OursPlain), (Ref, RefPlain)):
        x, y = cls(1), plain(1)
        for obj, name in ((x, "a"), (x, "other"), (y, "a")):
            with pytest.raises(dataclasses.FrozenInstanceError, match=f"field '{name}'"):
                setattr(obj, name, 2)
            with pytest.raises(dataclasses.FrozenInstanceError, match=f"delete field '{name}'"):
                delattr(obj, name)
        y.other = 3  # type: ignore[attr-defined]
        del y.other  # type: ignore[attr-defined]
    assert vars(Ours)["__setattr__"].__qualname__ == vars(Ref)["__setattr__"].__qualname__.replace(
        "Ref", "Ours"
    )


def test_mutable_is_the_dataclass_one() -> None:
    """@mutable: dataclass's mutable class, its __repr__ and __eq__ made as @frozen's."""

    def body() -> dict[str, Any]:
        return {
            "__annotations__": {"a": int, "b": "list[int]", "c": str},
            "b": dataclasses.field(default_factory=list),
            "c": dataclasses.field(default="c", compare=False),
        }

    ours = mutable(type("Rec", (), body()))
    ref = dataclasses.dataclass(type("Rec", (), body()))
    assert repr(ours.__dataclass_params__) == repr(ref.__dataclass_params__)
    assert [repr(f) for f in dataclasses.fields(ours)] == [repr(f) for f in dataclasses.fields(ref)]
    assert ours.__doc__ == ref.__doc__ and ours.__match_args__ == ref.__match_args__
    assert ours.__hash__ is None and ref.__hash__ is None
    for name in ("__repr__", "__eq__"):
        assert vars(ours)[name].__qualname__ == vars(ref)[name].__qualname__
    a, b = ours(1), ref(1)
    a.b.append(2)
    b.b.append(2)
    assert repr(a) == repr(b) == "Rec(a=1, b=[2], c='c')"
    assert a == ours(1, [2], "other") and a != ours(2, [2]) and a.__eq__(b) is NotImplemented
    a.a = 5  # mutable
    assert a.a == 5
    assert (
        mutable(type("H", (), {"__annotations__": {"a": int}, "__hash__": lambda s: 7}))(
            1
        ).__hash__()
        == 7
    )
