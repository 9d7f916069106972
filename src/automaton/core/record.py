"""`record`: `@dataclass` for the modules every agent hook loads, without importing `dataclasses`.

The hook (`automaton --hook`) starts a Python process before every agent tool call, so its
imports are its cost. `import dataclasses` imports `inspect` (and with it `ast`, `dis`,
`tokenize`, `linecache`): about 10 ms, a third of a bare interpreter's start, before the
decorator's own class processing (bench/bench_hook.py, BENCHMARKS.md figure 1). `record`
generates the same methods for the plain cases those modules use and nothing else:

- `@record` / `@record(frozen=True)`; fields are the class's own annotations, in order;
  a default is a class attribute, `field(default_factory=f)` a factory called per instance;
- `__init__(self, <fields>)` with those defaults (positional or keyword), `__repr__`
  (`Name(a=1, b='x')`), `__eq__` (same class, equal fields), and `__hash__`: over the fields
  when frozen, None (unhashable) when not, as `dataclass(eq=True)` does; a method the class
  body defines itself is kept;
- frozen: assigning or deleting an attribute raises FrozenInstanceError (an AttributeError).

Not supported, refused with TypeError: inheriting from a record, `ClassVar`/`InitVar`
fields, mutable defaults (list, dict, set). The type checker sees `dataclasses.dataclass`
itself (the `TYPE_CHECKING` branch), so mypy checks every use exactly as for a dataclass;
tests/core/test_record.py checks that the runtime behaves like one. `dataclasses.fields`
and `asdict` do not work on records: modules that need them use `@dataclass`. `replace` here
is `dataclasses.replace` for records and dataclasses alike.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (mypy reads the name)
if TYPE_CHECKING:
    from dataclasses import FrozenInstanceError, field, replace
    from dataclasses import dataclass as record
else:
    from operator import attrgetter  # loaded on every path already: `re` imports it (via functools)

    class FrozenInstanceError(AttributeError):
        """Assignment to (or deletion of) an attribute of a frozen record."""

    class _Factory:
        __slots__ = ("make",)

        def __init__(self, make):
            self.make = make

    def field(*, default_factory):
        """A field whose default is `default_factory()`, called for each new instance."""
        return _Factory(default_factory)

    def record(cls=None, /, *, frozen=False):
        """Decorate a class like `@dataclass` / `@dataclass(frozen=True)` (module docstring)."""
        if cls is None:
            return lambda c: _build(c, frozen)
        return _build(cls, frozen)

    _NO_ARG = object()  # the default of a factory field: "call the factory"

    def _frozen_setattr(self, name, value):
        raise FrozenInstanceError(f"cannot assign to field {name!r}")

    def _frozen_delattr(self, name):
        raise FrozenInstanceError(f"cannot delete field {name!r}")

    def _build(cls, frozen):
        if any("__record_fields__" in vars(base) for base in cls.__mro__[1:]):
            raise TypeError(f"{cls.__qualname__}: a record cannot inherit from a record; use @dataclass")
        names = tuple(cls.__dict__.get("__annotations__", {}))  # noqa: RUF063 - inspect is what this avoids
        scope = {"_NO_ARG": _NO_ARG, "_object_setattr": object.__setattr__}
        params, body = [], []
        for name in names:
            note = str(cls.__annotations__[name])
            if "ClassVar" in note or "InitVar" in note:
                raise TypeError(f"{cls.__qualname__}.{name}: ClassVar/InitVar fields are not supported; use @dataclass")
            default = cls.__dict__.get(name, _NO_ARG)
            value = name
            if isinstance(default, _Factory):
                scope[f"_make_{name}"] = default.make
                params.append(f"{name}=_NO_ARG")
                value = f"_make_{name}() if {name} is _NO_ARG else {name}"
                delattr(cls, name)  # like dataclass: the factory is not a class attribute
            elif default is not _NO_ARG:
                if isinstance(default, list | dict | set):
                    raise TypeError(f"{cls.__qualname__}.{name}: mutable default; use field(default_factory=...)")
                scope[f"_default_{name}"] = default
                params.append(f"{name}=_default_{name}")
            elif params and "=" in params[-1]:
                raise TypeError(f"{cls.__qualname__}.{name}: a field without a default follows one with a default")
            else:
                params.append(name)
            body.append(f"_object_setattr(self, {name!r}, {value})" if frozen else f"self.{name} = {value}")
        source = f"def __init__(self, {', '.join(params)}):\n    " + ("\n    ".join(body) or "pass") + "\n"
        own = cls.__dict__
        values = _getter(names)
        methods = {"__init__": _lazy_init(cls, source, scope), "__repr__": _repr(names), "__eq__": _eq(values)}
        for method, func in methods.items():
            if method not in own:
                func.__qualname__ = f"{cls.__qualname__}.{method}"
                setattr(cls, method, func)
        if not ("__hash__" in own and not (own["__hash__"] is None and "__eq__" in own)):  # no explicit one
            cls.__hash__ = _hash(values) if frozen else None
        if frozen:
            cls.__setattr__ = _frozen_setattr
            cls.__delattr__ = _frozen_delattr
        cls.__record_fields__ = names
        cls.__match_args__ = names
        return cls

    # Only `__init__` is generated source, and it is compiled when the class is first
    # instantiated: compiling costs about 0.1 ms a class, and a hook call instantiates few of
    # the classes it imports. The other methods are closures over the field names.

    def _lazy_init(cls, source, scope):
        def __init__(self, *args, **kwargs):
            made = {}
            exec(source, scope, made)
            init = made["__init__"]
            init.__qualname__ = f"{cls.__qualname__}.__init__"
            if cls.__dict__.get("__init__") is __init__:
                cls.__init__ = init
            init(self, *args, **kwargs)

        return __init__

    def _getter(names):
        if len(names) > 1:
            return attrgetter(*names)  # a tuple of the values, like dataclass's field tuples
        if names:
            one = names[0]
            return lambda obj: (getattr(obj, one),)
        return lambda obj: ()

    def _repr(names):
        def __repr__(self):
            shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in names)
            return f"{self.__class__.__qualname__}({shown})"

        return __repr__

    def _eq(values):
        def __eq__(self, other):
            if other.__class__ is self.__class__:
                return values(self) == values(other)
            return NotImplemented

        return __eq__

    def _hash(values):
        def __hash__(self):
            return hash(values(self))

        return __hash__

    def replace(obj, /, **changes):
        """A copy of record (or dataclass) `obj` with `changes` (field -> value), as
        `dataclasses.replace`: TypeError for a name that is not a field."""
        names = getattr(type(obj), "__record_fields__", None)
        if names is None:
            import dataclasses

            return dataclasses.replace(obj, **changes)
        unknown = sorted(set(changes) - set(names))
        if unknown:
            raise TypeError(f"{type(obj).__qualname__} has no field {unknown[0]!r}")
        return type(obj)(**{name: changes[name] if name in changes else getattr(obj, name) for name in names})


__all__ = ["FrozenInstanceError", "field", "record", "replace"]
