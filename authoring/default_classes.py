"""Default classes in Blender: make, rename, nest and delete them on a model root;
give an element a class; keep what elements show in step with their class.

An element with a class shows the class's value for every attribute it does not
set itself (`values.own`); the scan writes only its own ones, so MuJoCo applies
the class. Editing a class attribute therefore changes every element of the class
(and of its child classes) that does not set it, in the compiled model and in
the panels alike; "reset to class" drops an element's own value.
"""

from __future__ import annotations

from ..components import changes, spec_io, values
from ..components.schema import DEFAULT_KINDS
from . import authoring
from ..scan import scene_scan
from ..scene.errors import MJBlendError



class ClassError(MJBlendError):
    """A default class cannot be added, renamed, moved or deleted as asked."""


def classes_of(root):
    return root.mujoco.model.defaults


def find(root, name):
    for item in classes_of(root):
        if item.name == name:
            return item
    return None


def add_class(root, name: str, parent: str = "main"):
    """A new class under `parent`, starting as a copy of it (it sets nothing itself)."""
    defaults = classes_of(root)
    if find(root, name) is not None:
        raise ClassError(f"A class {name!r} exists already")
    base = find(root, parent)
    if base is None:
        raise ClassError(f"No class {parent!r} to inherit from")
    defaults.add()
    item = defaults[-1]
    item.name, item.parent = name, parent
    base = find(root, parent)  # (the collection grew: look it up again)
    with changes.quiet():
        for kind in DEFAULT_KINDS:
            stored = base.get(kind)  # (absent while the parent's group holds only defaults)
            if stored is not None:
                item[kind] = {}
                item[kind].update(stored.to_dict())
            values.set_own(getattr(item, kind), [])
    changes.touch(root)
    return item


def rename_class(root, old: str, new: str) -> None:
    """Rename a class and every reference to it (elements, child classes, childclass)."""
    if old == "main":
        raise ClassError("The main class keeps its name")
    if find(root, new) is not None:
        raise ClassError(f"A class {new!r} exists already")
    item = find(root, old)
    if item is None:
        raise ClassError(f"No class {old!r}")
    item.name = new
    for other in classes_of(root):
        if other.parent == old:
            other.parent = new
    for obj in authoring.members(root):
        if obj.mujoco.classname == old:
            obj.mujoco.classname = new
        if obj.mujoco.kind == "BODY" and obj.mujoco.body.childclass == old:
            obj.mujoco.body.childclass = new
    changes.touch(root)


def remove_class(root, name: str) -> None:
    """Delete a class: its elements and child classes move to its parent class, which
    they then show the values of (their own values stay)."""
    if name == "main":
        raise ClassError("The main class cannot be deleted")
    item = find(root, name)
    if item is None:
        raise ClassError(f"No class {name!r}")
    parent = item.parent or "main"
    for other in classes_of(root):
        if other.parent == name:
            other.parent = parent
    for obj in authoring.members(root):
        if obj.mujoco.classname == name:
            obj.mujoco.classname = parent  # its update shows the parent's values
        if obj.mujoco.kind == "BODY" and obj.mujoco.body.childclass == name:
            obj.mujoco.body.childclass = parent
    defaults = classes_of(root)
    defaults.remove(next(i for i, c in enumerate(defaults) if c.name == name))
    root.mujoco.model.active_default = min(root.mujoco.model.active_default, len(defaults) - 1)
    changes.touch(root)


def _copy(source, target, attr) -> None:
    if attr.type == "ref":
        setattr(target, attr.prop, getattr(source, attr.prop))
    elif attr.type in ("refvec", "stringvec"):
        return  # lists of references are not class material in practice
    else:
        spec_io.write_value(target, attr, spec_io.read_value(source, attr))


def apply_class(obj) -> None:
    """Show the class's value for every attribute `obj` does not set itself. An
    element that never recorded its own attributes sets none from now on."""
    holder = obj.mujoco
    kind = holder.kind.lower()
    root = scene_scan.model_of(obj)
    if kind not in DEFAULT_KINDS or root is None:
        return
    item = find(root, holder.classname or "main")
    if item is None:
        return
    group = getattr(holder, kind)
    if not values.has_own(group):
        values.set_own(group, [])
    own = values.own(group)
    with changes.quiet():
        for attr in spec_io.KINDS[kind].editable:
            if attr.name not in own:
                _copy(getattr(item, kind), group, attr)


def propagate(group, attr_name: str) -> None:
    """A class attribute was edited: elements of the class (and child classes)
    that do not set it themselves take the new value."""
    root = group.id_data
    holder = getattr(root, "mujoco", None)
    if getattr(holder, "kind", "") != "MODEL":
        return  # classes live on model roots
    kind = values.kind_of(group)
    if kind not in DEFAULT_KINDS:
        return  # a setting of the model, not a class
    pointer = group.as_pointer()
    item = next((c for c in classes_of(root) if getattr(c, kind).as_pointer() == pointer), None)
    if item is None:
        return
    attr = spec_io.KINDS[kind].attr(attr_name)
    _propagate(root, item.name, kind, attr, group)


def _propagate(root, class_name, kind, attr, source) -> None:
    with changes.quiet():
        for obj in authoring.members(root):
            holder = obj.mujoco
            if holder.kind.lower() == kind and (holder.classname or "main") == class_name:
                target = getattr(holder, kind)
                if values.has_own(target) and attr.name not in values.own(target):
                    _copy(source, target, attr)
                    changes.touch(obj)
        for child in classes_of(root):
            if child.parent == class_name:
                target = getattr(child, kind)
                if attr.name not in values.own(target):
                    _copy(source, target, attr)
                    _propagate(root, child.name, kind, attr, target)


def reset_to_class(obj, attr_name: str) -> None:
    """Drop an element's own value of an attribute: it shows (and MuJoCo uses) its class's."""
    group = getattr(obj.mujoco, obj.mujoco.kind.lower())
    own = values.own(group)
    own.discard(attr_name)
    values.set_own(group, sorted(own))
    apply_class(obj)
    changes.touch(obj)


def on_edit(group, attr_name: str) -> None:
    """(authoring/edits.py) Class edits propagate; a class change re-applies the class."""
    if attr_name == "classname":
        apply_class(group.id_data)
        return
    propagate(group, attr_name)



