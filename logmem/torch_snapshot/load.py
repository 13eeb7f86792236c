"""Safe loading of a PyTorch memory snapshot: bytes -> plain Python data, nothing executed.

A snapshot is what ``torch.cuda.memory._dump_snapshot`` pickles: dicts, lists, tuples,
strings, numbers, booleans and None only. A pickle is a program for a small stack machine,
and the opcodes that reach beyond plain data (GLOBAL and STACK_GLOBAL import a name; REDUCE,
BUILD, INST, OBJ, NEWOBJ call or build objects; EXT* and PERSID look names up elsewhere;
NEXT_BUFFER takes out-of-band data) are what make unpickling untrusted input dangerous. So
loading is two passes:

1. ``scan`` walks every opcode (the arguments are skipped by their lengths, never run) and
   refuses any opcode outside the plain-data set, naming what it references
   ("it references os.system"). It also bounds what plain data could do to memory: memo
   indexes must be ones the pickle already used (a made-up index makes the C unpickler
   allocate that many slots), integers are at most 16 bytes, the stack at most
   ``MAX_STACK`` items deep, and the data must end with STOP (else it is truncated).
2. The standard C unpickler then builds the data, with ``find_class`` and
   ``persistent_load`` refusing too, so even a pass-1 bug cannot import a name.

Input is decompressed by content (gzip, zstd, bz2, xz, as logs are) and read up to a cap.
"""

from __future__ import annotations

import io
import pickle
import pickletools
from typing import Any

from logmem.errors import InputError, LogmemError
from logmem.parse.read import ReadStats, open_stream

# A real snapshot of a long capture is tens of MiB; the cap is what the unpickled data may
# take in memory several times over, so it is the bound on what a hostile file can cost.
DEFAULT_MAX_BYTES = 1 << 30
MAX_STACK = 10_000  # genuine snapshots nest about ten deep
MAX_INT_BYTES = 16


class SnapshotError(LogmemError):
    """The file is not a PyTorch memory snapshot, or not one that can be read safely."""


# Argument kinds, indexed by opcode byte (_PUT: a fixed-size memo index to check).
_NONE, _FIXED, _PUT, _LINE, _LEN1, _LEN4, _LEN8, _INT1, _INT4, _BAD = range(10)
# Stack effects that are not a plain count.
_MARK, _POPMARK, _BUILD = 100, 101, 102

# name -> (argument kind, fixed size, stack effect)
_PLAIN: dict[str, tuple[int, int, int]] = {
    "PROTO": (_FIXED, 1, 0),
    "FRAME": (_FIXED, 8, 0),
    "STOP": (_NONE, 0, -1),
    "MARK": (_NONE, 0, _MARK),
    "POP_MARK": (_NONE, 0, _POPMARK),
    "POP": (_NONE, 0, -1),
    "DUP": (_NONE, 0, 1),
    "NONE": (_NONE, 0, 1),
    "NEWTRUE": (_NONE, 0, 1),
    "NEWFALSE": (_NONE, 0, 1),
    "INT": (_LINE, 0, 1),
    "LONG": (_LINE, 0, 1),
    "FLOAT": (_LINE, 0, 1),
    "STRING": (_LINE, 0, 1),
    "UNICODE": (_LINE, 0, 1),
    "BININT": (_FIXED, 4, 1),
    "BININT1": (_FIXED, 1, 1),
    "BININT2": (_FIXED, 2, 1),
    "LONG1": (_INT1, 0, 1),
    "LONG4": (_INT4, 0, 1),
    "BINFLOAT": (_FIXED, 8, 1),
    "BINSTRING": (_LEN4, 0, 1),
    "SHORT_BINSTRING": (_LEN1, 0, 1),
    "BINBYTES": (_LEN4, 0, 1),
    "SHORT_BINBYTES": (_LEN1, 0, 1),
    "BINBYTES8": (_LEN8, 0, 1),
    "BYTEARRAY8": (_LEN8, 0, 1),
    "SHORT_BINUNICODE": (_LEN1, 0, 1),
    "BINUNICODE": (_LEN4, 0, 1),
    "BINUNICODE8": (_LEN8, 0, 1),
    "EMPTY_LIST": (_NONE, 0, 1),
    "EMPTY_TUPLE": (_NONE, 0, 1),
    "EMPTY_DICT": (_NONE, 0, 1),
    "EMPTY_SET": (_NONE, 0, 1),
    "APPEND": (_NONE, 0, -1),
    "SETITEM": (_NONE, 0, -2),
    "APPENDS": (_NONE, 0, _POPMARK),
    "SETITEMS": (_NONE, 0, _POPMARK),
    "ADDITEMS": (_NONE, 0, _POPMARK),
    "LIST": (_NONE, 0, _BUILD),
    "TUPLE": (_NONE, 0, _BUILD),
    "DICT": (_NONE, 0, _BUILD),
    "FROZENSET": (_NONE, 0, _BUILD),
    "TUPLE1": (_NONE, 0, 0),
    "TUPLE2": (_NONE, 0, -1),
    "TUPLE3": (_NONE, 0, -2),
    "GET": (_LINE, 0, 1),
    "BINGET": (_FIXED, 1, 1),
    "LONG_BINGET": (_FIXED, 4, 1),
    "PUT": (_LINE, 0, 0),
    "BINPUT": (_PUT, 1, 0),
    "LONG_BINPUT": (_PUT, 4, 0),
    "MEMOIZE": (_NONE, 0, 0),
}

# What each refused opcode does, for the message.
_REFUSED = {
    "GLOBAL": "imports a name",
    "STACK_GLOBAL": "imports a name",
    "INST": "builds an object",
    "OBJ": "builds an object",
    "NEWOBJ": "builds an object",
    "NEWOBJ_EX": "builds an object",
    "REDUCE": "calls a function",
    "BUILD": "sets an object's state",
    "EXT1": "imports a registered name",
    "EXT2": "imports a registered name",
    "EXT4": "imports a registered name",
    "PERSID": "asks for a persistent object",
    "BINPERSID": "asks for a persistent object",
    "NEXT_BUFFER": "takes an out-of-band buffer",
    "READONLY_BUFFER": "takes an out-of-band buffer",
}

_NAMES = {op.code.encode("latin-1")[0]: op.name for op in pickletools.opcodes}
_KIND = [_BAD] * 256
_SIZE = [0] * 256
_EFFECT = [0] * 256
for _code, _name in _NAMES.items():
    if _name in _PLAIN:
        _KIND[_code], _SIZE[_code], _EFFECT[_code] = _PLAIN[_name]
_SHORT_LINE = {ord(c) for c in "ILpg"}  # numbers and memo indexes: short lines only
_MEMOIZE = 0x94
_STOP = ord(".")
_TEXT_PUT = ord("p")


def _not_snapshot(why: str) -> SnapshotError:
    return SnapshotError(f"not a PyTorch memory snapshot: {why}")


class Refused(SnapshotError):
    """An opcode that imports, calls or builds: the file is hostile or not a snapshot."""


def _refused(data: bytes, pos: int, name: str) -> Refused:
    what = _referenced(data, pos, name)
    ref = f"it references {what}" if what else f"it {_REFUSED[name]} (pickle opcode {name})"
    return Refused(
        f"not a PyTorch memory snapshot: {ref} at byte {pos}; a snapshot is plain data, "
        "so nothing in this file was run"
    )


def _referenced(data: bytes, pos: int, name: str) -> str | None:
    """The module.name a GLOBAL / STACK_GLOBAL / INST at `pos` imports, when it can be told."""
    if name in ("GLOBAL", "INST"):
        parts = data[pos + 1 : pos + 512].split(b"\n")[:2]
        if len(parts) == 2:
            return ".".join(p.decode("utf-8", "replace") for p in parts)
        return None
    if name != "STACK_GLOBAL":
        return None
    # Replay the strings pushed before it (only on this error path): the last two are the
    # module and the name, pushed directly or fetched back from the memo.
    strings: list[str | None] = []
    memo: dict[int, str | None] = {}
    try:
        for op, arg, at in pickletools.genops(data[:pos] + b"."):
            if op.name in ("SHORT_BINUNICODE", "BINUNICODE", "BINUNICODE8", "UNICODE"):
                strings.append(str(arg))
            elif op.name == "MEMOIZE" and strings:
                memo[len(memo)] = strings[-1]
            elif op.name in ("BINPUT", "LONG_BINPUT", "PUT") and strings:
                memo[int(str(arg))] = strings[-1]
            elif op.name in ("BINGET", "LONG_BINGET", "GET"):
                strings.append(memo.get(int(str(arg))))
            elif op.name != "STOP":
                strings.append(None)
            if at is not None and at >= pos:
                break
    except Exception:  # the prefix is hostile too: naming is best effort, refusing is not
        return None
    if len(strings) >= 2 and strings[-2] is not None and strings[-1] is not None:
        return f"{strings[-2]}.{strings[-1]}"
    return None


def scan(data: bytes) -> None:
    """Refuse anything but a plain-data pickle (see the module docstring)."""
    n = len(data)
    i = 0
    depth = 0
    marks: list[int] = []
    memo = 0  # memo slots the pickle has filled so far
    kind_of, size_of, effect_of = _KIND, _SIZE, _EFFECT
    # One branch per argument kind, the common ones first: this loop runs once per opcode
    # (millions in a long trace), so it stays flat.
    while i < n:
        op = data[i]
        kind = kind_of[op]
        if kind == _FIXED:
            i += 1 + size_of[op]
        elif kind == _NONE:
            i += 1
            if op == _MEMOIZE:
                memo += 1
        elif kind == _LEN1:
            if i + 1 >= n:
                break
            i += 2 + data[i + 1]
        elif kind in (_LEN4, _LEN8):
            width = 4 if kind == _LEN4 else 8
            i += 1 + width + int.from_bytes(data[i + 1 : i + 1 + width], "little")
        elif kind == _PUT:
            idx = int.from_bytes(data[i + 1 : i + 1 + size_of[op]], "little")
            memo = _put(memo, idx, i)
            i += 1 + size_of[op]
        elif kind in (_INT1, _INT4):
            width = 1 if kind == _INT1 else 4
            length = int.from_bytes(data[i + 1 : i + 1 + width], "little")
            if length > MAX_INT_BYTES:
                raise _not_snapshot(f"an integer of {length} bytes at byte {i}")
            i += 1 + width + length
        elif kind == _LINE:
            end = data.find(b"\n", i + 1, i + 1 + (64 if op in _SHORT_LINE else 1 << 20))
            if end < 0:
                raise _not_snapshot(f"the text argument at byte {i} is unterminated or too long")
            if op == _TEXT_PUT:
                try:
                    idx = int(data[i + 1 : end])
                except ValueError:
                    raise _not_snapshot(f"a bad memo index at byte {i}") from None
                memo = _put(memo, idx, i)
            i = end + 1
        else:
            name = _NAMES.get(op)
            if name in _REFUSED:
                raise _refused(data, i, name)
            raise _not_snapshot(f"byte {i} is {op:#04x}, not a pickle opcode")
        if i > n:
            break
        effect = effect_of[op]
        if effect < _MARK:
            depth += effect
            if depth > MAX_STACK:
                raise _not_snapshot(f"more than {MAX_STACK} items pending at byte {i}")
            if op == _STOP:
                return
        elif effect == _MARK:
            marks.append(depth)
            if len(marks) > MAX_STACK:
                raise _not_snapshot(f"more than {MAX_STACK} open marks at byte {i}")
        elif not marks:
            raise _not_snapshot(f"opcode {_NAMES[op]} before byte {i} has no mark")
        else:
            depth = marks.pop() + (1 if effect == _BUILD else 0)
    raise _not_snapshot(f"the pickle is truncated (it stops after {n} bytes, before its end)")


def _put(memo: int, idx: int, pos: int) -> int:
    """A memo index must be one already in use or the next: a made-up large one would make
    the C unpickler allocate that many slots."""
    if idx > memo:
        raise _not_snapshot(f"memo slot {idx} at byte {pos} was never filled in order")
    return max(memo, idx + 1)


class _NoGlobals(pickle.Unpickler):
    """The second line of defence: even if a global got past `scan`, it is not resolved."""

    def find_class(self, module: str, name: str) -> Any:
        raise _not_snapshot(f"it references {module}.{name}; nothing in this file was run")

    def persistent_load(self, pid: Any) -> Any:
        raise _not_snapshot("it asks for a persistent object; nothing in this file was run")


def loads(data: bytes) -> Any:
    """Plain data from a pickle's bytes, or SnapshotError."""
    if not data:
        raise _not_snapshot("the file is empty")
    try:
        scan(data)
    except Refused:
        raise
    except SnapshotError:
        # Text or another format read as opcodes says nothing useful: say what it is not.
        if data[0] != 0x80:
            raise _not_snapshot("it is not a pickle (it does not start with byte 0x80)") from None
        raise
    try:
        return _NoGlobals(io.BytesIO(data)).load()
    except SnapshotError:
        raise
    except MemoryError:
        raise _not_snapshot("it does not fit in memory") from None
    except Exception as e:  # malformed data the scan let through (bad UTF-8, wrong types)
        raise _not_snapshot(f"the pickle is malformed ({type(e).__name__}: {e})") from None


def read_bytes(path: str, max_bytes: int = DEFAULT_MAX_BYTES) -> bytes:
    """The file's bytes, decompressed by content, refusing more than `max_bytes` of them."""
    stats = ReadStats(path)
    stream = open_stream(path, stats)
    try:
        data = stream.read(max_bytes + 1)
    except InputError:
        raise
    except Exception as e:  # gzip/lzma/zstd errors have no common base
        raise InputError(f"{path}: cannot decompress: {e}") from None
    finally:
        if path != "-":
            stream.close()
    if len(data) > max_bytes:
        raise InputError(
            f"{path}: more than {max_bytes >> 20} MiB"
            + (" once decompressed" if stats.compression else "")
            + "; a larger snapshot needs --max-size (in MiB)"
        )
    return data


def load(path: str, max_bytes: int = DEFAULT_MAX_BYTES) -> Any:
    """Read and safely unpickle one snapshot file ('-' is stdin)."""
    data = read_bytes(path, max_bytes)
    try:
        return loads(data)
    except SnapshotError as e:
        raise SnapshotError(f"{path}: {e}") from None
