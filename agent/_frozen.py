"""A faster ``__init__`` for the frozen, slotted dataclasses built on hot paths.

A frozen dataclass's generated ``__init__`` sets each field through
``object.__setattr__``, which looks the attribute up again on every call: an
11-field record took 0.85 µs to build, a dozen of them are built for every
lifecycle child and a few more for its turn, and that was a tenth of the
lifecycle's own cost per child. The ``__init__`` made here has the same
signature, defaults and default factories, and stores the fields without going
through the frozen ``__setattr__``. The class stays frozen: assigning to a field
still raises `dataclasses.FrozenInstanceError`.

How the fields are stored depends on how many there are:

- A few: through each slot's descriptor (``Record.field.__set__(self, value)``).
  Each such call still builds an argument tuple.
- Five or more: the instance is built as an instance of a *twin*, a plain class
  with exactly the same ``__slots__`` (so the same memory layout), whose fields
  are set by ordinary, specialised attribute stores; then it becomes an instance
  of the frozen class again. The two class assignments cost about as much as
  four descriptor calls, so this pays from five fields on (a 19-field record:
  0.53 -> 0.30 µs). Only an instance of the class itself is built this way; a
  subclass's instance (its layout may differ) is built through the descriptors.

Calling the class still costs the interpreter's ``type.__call__`` and a class
assignment there and back. The hot paths (a dozen records for every lifecycle
child) call ``Record._build(...)`` instead: the same signature and the same
record, made as a twin and turned into the frozen class once, about 40 % cheaper
(a 15-field record: 0.43 -> 0.26 µs). It builds the class itself, never a subclass.
"""

from __future__ import annotations

import dataclasses
from typing import TypeVar

T = TypeVar("T", bound=type)

_NO_DEFAULT = object()
TWIN_FROM_FIELDS = 5
"""Records with at least this many fields are built through a twin class (see above)."""


def fast_init(cls: T) -> T:
    """Replace the ``__init__`` of a frozen dataclass made with ``slots=True`` (apply this
    decorator above ``@dataclass``). Every field must be an ``init`` field without
    ``__post_init__``, and the class without ``weakref_slot``: anything else is refused,
    loudly, at import time."""
    params = dataclasses.fields(cls)
    if not (cls.__dataclass_params__.frozen and "__slots__" in cls.__dict__):
        raise TypeError(f"{cls.__name__}: fast_init is for frozen dataclasses with slots")
    if hasattr(cls, "__post_init__") or not all(f.init and not f.kw_only for f in params):
        raise TypeError(f"{cls.__name__}: fast_init does not support __post_init__, init=False or kw_only fields")
    if "__weakref__" in cls.__slots__:  # CPython refuses the twin's class switch for such a layout
        raise TypeError(f"{cls.__name__}: fast_init does not support weakref_slot")
    namespace: dict[str, object] = {"_NO_DEFAULT": _NO_DEFAULT, "_cls": cls}
    signature, defaults, by_descriptor = [], [], []
    for f in params:
        namespace[f"_set_{f.name}"] = cls.__dict__[f.name].__set__
        if f.default is not dataclasses.MISSING:
            namespace[f"_default_{f.name}"] = f.default
            signature.append(f"{f.name}=_default_{f.name}")
        elif f.default_factory is not dataclasses.MISSING:
            namespace[f"_factory_{f.name}"] = f.default_factory
            signature.append(f"{f.name}=_NO_DEFAULT")
            defaults.append(f"    if {f.name} is _NO_DEFAULT: {f.name} = _factory_{f.name}()")
        else:
            signature.append(f.name)
        by_descriptor.append(f"_set_{f.name}(self, {f.name})")
    body = list(defaults)
    if cls.__base__ is object:
        twin_body = {"__slots__": cls.__slots__, "__module__": cls.__module__}
        namespace["_twin"] = type(f"_{cls.__name__}Twin", (), twin_body)
        namespace["_new"] = object.__new__
    if len(params) >= TWIN_FROM_FIELDS and cls.__base__ is object:
        namespace["_set_class"] = object.__setattr__
        body += [
            "    if type(self) is _cls:",
            "        _set_class(self, '__class__', _twin)",  # past the frozen __setattr__
            *(f"        self.{f.name} = {f.name}" for f in params),
            "        self.__class__ = _cls",  # a twin instance has no frozen __setattr__
            "    else:",
            *(f"        {line}" for line in by_descriptor),
        ]
    else:
        body += [f"    {line}" for line in by_descriptor]
    source = f"def __init__(self, {', '.join(signature)}):\n" + "\n".join(body or ["    pass"])
    if cls.__base__ is object:
        source += "\n".join([
            f"\ndef _build({', '.join(signature)}):", *defaults,
            "    self = _new(_twin)",
            *(f"    self.{f.name} = {f.name}" for f in params),
            "    self.__class__ = _cls",  # once: a twin instance has no frozen __setattr__
            "    return self",
        ])
    exec(source, namespace)  # noqa: S102 - how dataclasses build __init__, from field names only
    init = namespace["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    init.__doc__ = cls.__init__.__doc__
    cls.__init__ = init
    if "_build" in namespace:
        build = namespace["_build"]
        build.__qualname__ = f"{cls.__qualname__}._build"
        cls._build = staticmethod(build)  # a plain function: no bound method to make per call
    return cls
