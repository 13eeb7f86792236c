"""logmem.frozen: records made on first use behave as frozen dataclasses, before and after."""

from __future__ import annotations

import copy
import dataclasses
import subprocess
import sys
import threading

import pytest

from conftest import REPO
from logmem.frozen import frozen, realise


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
