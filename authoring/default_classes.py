"""Default classes in Blender: make, rename, nest and delete them on a model root;
give an element a class; keep what elements show in step with their class.

An element with a class shows the class's value for every attribute it does not
set itself (`values.own`: storage format 2 stores only those; the rest read the
class chain, components/inherit.py); the scan writes only its own ones, so MuJoCo
applies the class. Editing a class attribute therefore changes every element of
the class (and of its child classes) that does not set it, in the compiled model
and in the panels alike, with nothing copied: the resolved classes are forgotten.
"reset to class" deletes an element's own value.

References are the exception: a bpy pointer cannot be computed when read, so a
reference a class sets is copied into its elements that do not set it, marked as
the class's (values.show_class_ref), and class edits of references are copied on.
"""

from __future__ import annotations

from ..components import changes, inherit, spec_io, values
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
    inherit.forget()  # (it inherits everything from its parent: nothing to copy)
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
    inherit.forget()
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
    inherit.forget()
    root.mujoco.model.active_default = min(root.mujoco.model.active_default, len(defaults) - 1)
    changes.touch(root)


def _ref_attrs(kind: str) -> tuple:
    return tuple(attr for attr in spec_io.KINDS[kind].editable
                 if attr.type == "ref" and attr.ref != "default")


def _class_ref(root, classname: str, kind: str, attr):
    """The target of reference `attr` that class `classname` gives (set by it or a parent)."""
    items = {item.name: item for item in classes_of(root)}
    seen = set()
    while classname in items and classname not in seen:
        seen.add(classname)
        group = items[classname].get(kind)
        shown = group.get(values.CLASS_REFS) if group is not None else None
        if group is not None and attr.prop in group and not (shown is not None and attr.prop in shown):
            return group[attr.prop]  # (set by this class itself)
        classname = "" if classname == "main" else (items[classname].parent or "main")
    return None


def _show_refs(root, group, kind: str, classname: str, only=None) -> None:
    """Copy the references class `classname` gives into `group` (an element's, or a
    child class's) where it sets none itself."""
    own = values.own(group, kind)
    for attr in _ref_attrs(kind):
        if attr.name in own or (only is not None and attr.name != only):
            continue
        target = _class_ref(root, classname, kind, attr)
        if target is not None:
            values.show_class_ref(group, attr.prop, target)
        elif attr.prop in group:
            values.drop(group, attr)


def apply_class(obj) -> None:
    """The element shows its (new) class's values for every attribute it does not
    set itself: those it reads through the class chain; its references are copied."""
    inherit.forget()
    holder = obj.mujoco
    kind = holder.kind.lower()
    root = scene_scan.model_of(obj)
    if kind not in DEFAULT_KINDS or root is None:
        return
    with changes.quiet():
        _show_refs(root, getattr(holder, kind), kind, holder.classname or "main")


def propagate(group, attr_name: str) -> None:
    """A class attribute was edited: elements of the class (and child classes) that
    do not set it themselves read the new value (the resolved classes are forgotten);
    a reference is copied on to them."""
    root = group.id_data
    holder = getattr(root, "mujoco", None)
    if getattr(holder, "kind", "") != "MODEL":
        return  # classes live on model roots
    inherit.forget()
    kind = values.kind_of(group)
    if kind not in DEFAULT_KINDS:
        return  # a setting of the model, not a class
    attr = spec_io.KINDS[kind].attr(attr_name)
    if attr.type != "ref" or attr.ref == "default":
        return
    with changes.quiet():
        for item in classes_of(root):
            if item.name != "main" and (item.get(kind) is not None
                                        or _class_ref(root, item.parent or "main", kind, attr) is not None):
                _show_refs(root, getattr(item, kind), kind, item.parent or "main", attr.name)
        for obj in authoring.members(root):
            member = obj.mujoco
            if member.kind.lower() == kind and member.get(kind) is not None:
                _show_refs(root, getattr(member, kind), kind, member.classname or "main", attr.name)
                changes.touch(obj)


def reset_to_class(obj, attr_name: str) -> None:
    """Drop an element's own value of an attribute: it shows (and MuJoCo uses) its class's."""
    kind = obj.mujoco.kind.lower()
    group = getattr(obj.mujoco, kind)
    attr = spec_io.KINDS[kind].attr(attr_name)
    values.drop(group, attr)
    if attr.type == "ref":
        apply_class(obj)
    changes.touch(obj)


def on_edit(group, attr_name: str) -> None:
    """(authoring/edits.py) Class edits propagate; a class change re-applies the class."""
    if attr_name == "classname":
        apply_class(group.id_data)
        return
    propagate(group, attr_name)



