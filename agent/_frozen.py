"""A faster ``__init__`` for the frozen, slotted dataclasses built on hot paths.

A frozen dataclass's generated ``__init__`` sets each field through
``object.__setattr__``, which looks the attribute up again on every call: an
11-field record took 0.85 µs to build, a dozen of them are built for every
lifecycle child and a few more for its turn, and that was a tenth of the
lifecycle's own cost per child. The ``__init__`` made here has the same
signature, defaults and default factories, but stores each field straight
through its slot. The class stays frozen: assigning to a field still raises
`dataclasses.FrozenInstanceError`.
"""

from __future__ import annotations

import dataclasses
from typing import TypeVar

T = TypeVar("T", bound=type)

_NO_DEFAULT = object()


def fast_init(cls: T) -> T:
    """Replace the ``__init__`` of a frozen dataclass made with ``slots=True`` (apply this
    decorator above ``@dataclass``). Every field must be an ``init`` field without
    ``__post_init__``: anything else is refused, loudly, at import time."""
    params = dataclasses.fields(cls)
    if not (cls.__dataclass_params__.frozen and "__slots__" in cls.__dict__):
        raise TypeError(f"{cls.__name__}: fast_init is for frozen dataclasses with slots")
    if hasattr(cls, "__post_init__") or not all(f.init and not f.kw_only for f in params):
        raise TypeError(f"{cls.__name__}: fast_init does not support __post_init__, init=False or kw_only fields")
    namespace: dict[str, object] = {"_NO_DEFAULT": _NO_DEFAULT}
    signature, body = [], []
    for f in params:
        namespace[f"_set_{f.name}"] = cls.__dict__[f.name].__set__
        if f.default is not dataclasses.MISSING:
            namespace[f"_default_{f.name}"] = f.default
            signature.append(f"{f.name}=_default_{f.name}")
        elif f.default_factory is not dataclasses.MISSING:
            namespace[f"_factory_{f.name}"] = f.default_factory
            signature.append(f"{f.name}=_NO_DEFAULT")
            body.append(f"    if {f.name} is _NO_DEFAULT: {f.name} = _factory_{f.name}()")
        else:
            signature.append(f.name)
        body.append(f"    _set_{f.name}(self, {f.name})")
    source = f"def __init__(self, {', '.join(signature)}):\n" + "\n".join(body or ["    pass"])
    exec(source, namespace)  # noqa: S102 - how dataclasses build __init__, from field names only
    init = namespace["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    init.__doc__ = cls.__init__.__doc__
    cls.__init__ = init
    return cls
