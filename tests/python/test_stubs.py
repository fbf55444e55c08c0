# SPDX-License-Identifier: Apache-2.0
"""python/vgpu/_vgpu.pyi matches the extension module, so the stubs cannot drift.

Every public name of vgpu._vgpu (functions, classes, and each class's methods and properties)
must be declared in the stub, and every name the stub declares must exist in the module, with
the same kind (a property is a property, a method a method). The stub is parsed with `ast`
(never imported), from the source tree, and must be the one installed next to the module.
"""
import ast
import inspect
import os
import types

import pytest

import vgpu
import vgpu._vgpu as ext

SOURCE_STUB = os.path.join(os.path.dirname(__file__), "..", "..", "python", "vgpu", "_vgpu.pyi")
# Dunder methods that change how a user calls an object: a stub must declare them when the
# class defines them (the rest — __repr__, __eq__, ... — are optional in the stub).
USAGE_DUNDERS = {"__init__", "__call__", "__len__", "__iter__", "__getitem__", "__setitem__", "__contains__",
                 "__enter__", "__exit__", "__bool__"}
# Attributes the module sets on instances, not on the class (so not visible on it), by class:
# vgpu.Error's parts are set on each raised instance (python/src/errors.cpp).
INSTANCE_ATTRIBUTES = {"Error": {"category", "problem", "fix"}}


def parse_stub(path):
    with open(path) as f:
        return ast.parse(f.read(), filename=path)


def is_property(node):
    return any(isinstance(d, ast.Name) and d.id == "property"
               or isinstance(d, ast.Attribute) and d.attr in ("setter", "getter", "deleter")
               for d in node.decorator_list)


def stub_members(body):
    """Returns {name: kind} of a stub module or class body; kind is 'class', 'function', 'property' or 'value'."""
    out = {}
    for node in body:
        if isinstance(node, ast.ClassDef):
            out[node.name] = ("class", node)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            kind = "property" if is_property(node) else "function"
            if out.get(node.name, ("",))[0] != "property":  # a setter after its @property stays a property
                out[node.name] = (kind, node)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            out[node.target.id] = ("value", node)
        elif isinstance(node, ast.Assign):
            for t in node.targets:
                if isinstance(t, ast.Name):
                    out[t.id] = ("value", node)
    return out


def class_stub_members(stub, node):
    """Returns a stub class's members with those of the stub-only bases it names (e.g. a
    private _DeviceFields that DeviceInfo and Device share in the stub), nearest first."""
    members = {}
    for base in node.bases:
        if isinstance(base, ast.Name) and base.id in stub and stub[base.id][0] == "class":
            members.update(class_stub_members(stub, stub[base.id][1]))
    members.update(stub_members(node.body))
    return members


def public(name):
    return not name.startswith("_") or name in USAGE_DUNDERS or name == "__version__"


def runtime_kind(owner, name):
    """Returns the kind of owner.name as the stub would write it."""
    raw = inspect.getattr_static(owner, name)
    if isinstance(raw, property) or type(raw).__name__ == "property":
        return "property"
    if inspect.isclass(raw):
        return "class"
    if isinstance(raw, (staticmethod, classmethod)) or callable(raw):
        return "function"
    return "value"


def runtime_class_members(cls):
    """Returns the public names the class itself defines (not those it inherits). A C slot
    wrapper (pybind11's "No constructor defined" __init__ of a class without py::init) is not
    a definition of the module's."""
    return {n for n, v in vars(cls).items()
            if public(n) and not (n.startswith("__") and n not in USAGE_DUNDERS)
            and type(v).__name__ != "wrapper_descriptor"}


def compatible(stub_kind, rt_kind):
    if stub_kind == rt_kind:
        return True
    # A stub may declare a read-only attribute as an annotation; a module may bind a class
    # attribute (a constant) that the stub annotates.
    return stub_kind == "value" and rt_kind in ("property", "value")


@pytest.fixture(scope="module")
def stub():
    assert os.path.isfile(SOURCE_STUB), f"{SOURCE_STUB} is missing"
    return stub_members(parse_stub(SOURCE_STUB).body)


def module_names():
    return {n for n in dir(ext) if public(n)}


def instance_attributes(cls):
    """Returns the attribute names set on instances of cls (or of a base it has) by the module."""
    bases = cls.__mro__ if inspect.isclass(cls) else ()
    return set().union(*(INSTANCE_ATTRIBUTES.get(b.__name__, set()) for b in bases))


def test_the_installed_stub_is_the_source_one():
    built = os.path.join(os.path.dirname(vgpu.__file__), "_vgpu.pyi")
    assert os.path.isfile(built), f"{built} is missing: add _vgpu.pyi to VGPU_PYTHON_FILES (python/CMakeLists.txt)"
    with open(built) as a, open(SOURCE_STUB) as b:
        assert a.read() == b.read(), "the built package's _vgpu.pyi differs from python/vgpu/_vgpu.pyi: rebuild"
    assert os.path.isfile(os.path.join(os.path.dirname(vgpu.__file__), "py.typed")), "py.typed is missing (PEP 561)"


def test_every_module_name_is_in_the_stub(stub):
    missing = sorted(n for n in module_names() if n not in stub)
    assert not missing, f"in vgpu._vgpu but not in python/vgpu/_vgpu.pyi: {missing}"


def test_every_stub_name_is_in_the_module(stub):
    extra = sorted(n for n in stub if public(n) and not hasattr(ext, n))
    assert not extra, f"in python/vgpu/_vgpu.pyi but not in vgpu._vgpu: {extra}"


def test_module_level_kinds_match(stub):
    wrong = []
    for name, (kind, _) in stub.items():
        if public(name) and hasattr(ext, name):
            rt = "class" if isinstance(getattr(ext, name), types.ModuleType) else runtime_kind(ext, name)
            if not compatible(kind, rt):
                wrong.append(f"{name}: stub says {kind}, the module has a {rt}")
    assert not wrong, "; ".join(wrong)


def test_class_members_match(stub):
    problems = []
    for name, (kind, node) in sorted(stub.items()):
        if kind != "class" or not hasattr(ext, name):
            continue
        cls = getattr(ext, name)
        members = class_stub_members(stub, node)
        if inspect.isclass(cls):
            defined = runtime_class_members(cls)
        else:  # a submodule, declared in the stub as a namespace class
            defined = {n for n in dir(cls) if public(n) and not n.startswith("__")}
        for m in sorted(defined - members.keys()):
            problems.append(f"{name}.{m} is in the module, not in the stub")
        for m, (mkind, _) in sorted(members.items()):
            if not public(m) or m in instance_attributes(cls):
                continue
            if not hasattr(cls, m):
                problems.append(f"{name}.{m} is in the stub, not in the module")
                continue
            rt = runtime_kind(cls, m)
            if not compatible(mkind, rt) and not (m == "__init__" and rt == "function"):
                problems.append(f"{name}.{m}: stub says {mkind}, the module has a {rt}")
    assert not problems, "\n".join(problems)


def test_instance_attributes_are_declared(stub):
    # The attributes set on instances (not visible on the class) are still declared in the stub.
    for cls_name, attrs in INSTANCE_ATTRIBUTES.items():
        assert cls_name in stub, cls_name
        declared = stub_members(stub[cls_name][1].body)
        assert attrs <= declared.keys(), f"{cls_name}: declare {sorted(attrs - declared.keys())} in the stub"


def test_the_check_can_fail():
    # The comparison itself: a module name missing from a stub, and a stub name missing from a
    # module, are both found (guards against a check that passes vacuously).
    fake = stub_members(ast.parse("class Error(RuntimeError):\n    category: str\nclass Nowhere: ...\n").body)
    assert "Nowhere" in fake and not hasattr(ext, "Nowhere")
    assert module_names() - fake.keys(), "the module has more than Error"
    assert "Error" in module_names()
