"""The scene's domain randomization: the entries authored on element objects ->
a `batch.Randomization` naming the elements as the scanned model does.

    randomization = scene_randomization(roots)   # RandomizationInvalid names the object
    randomization = checked(roots, model)         # and each entry applies to `model`

An entry names its element by MJCF name, with the prefix `compile_spec.build_spec`
gives a root's elements when several roots are attached ("arm/torso"), so
`Randomization.bind` finds it in the compiled scene and in its exported file
alike. The option's entries (gravity) sit on the model root; the scene has one
option (the first root's), and the seed is the first root's too.
"""

from __future__ import annotations

from ..batch.randomization import Entry, Randomization, RandomizationError
from ..components import randomization as stored
from ..components.stored_keys import ORDER
from ..components.values import shortest_float32
from ..scene.errors import MJBlendError
from .compile_spec import root_prefixes


class RandomizationInvalid(MJBlendError):
    """An authored randomization entry that cannot be used (the message names the object)."""


def scene_randomization(roots) -> Randomization:
    """Every entry authored on the roots' objects (roots in scene order, objects in
    MJCF order, entries as listed); empty when there are none."""
    return Randomization([entry for entry, _obj in _entries(roots)],
                         seed=roots[0].mujoco.model.randomize_seed if roots else None)


def checked(roots, model) -> Randomization:
    """`scene_randomization(roots)`, each entry checked against the compiled `model`
    (the element exists; kp is on a position actuator, a size on a primitive geom...)."""
    owned = _entries(roots)
    for entry, obj in owned:
        try:
            Randomization([entry]).bind(model)
        except RandomizationError as error:
            raise RandomizationInvalid(f"{obj.name}: {error}", [obj]) from None
    return Randomization([entry for entry, _obj in owned],
                         seed=roots[0].mujoco.model.randomize_seed if roots else None)


def has_entries(roots) -> bool:
    return any(len(obj.mujoco.randomize) for root in roots for obj in (root, *root.children_recursive))


def entry_of(item, obj, prefix: str = "") -> Entry:
    """The batch Entry of one stored item of `obj` (not checked); RandomizationInvalid
    when the object is no element that can be randomized, or has no MJCF name."""
    element = stored.element_of(obj.mujoco.kind)
    if element is None:
        what = obj.mujoco.kind.lower() if obj.mujoco.kind != "NONE" else "no MuJoCo element"
        raise RandomizationInvalid(f"{obj.name}: a {what} has no attributes to randomize "
                                   "(remove its randomization entries)", [obj])
    name = ""
    if element != "option":
        if not obj.mujoco.name:
            raise RandomizationInvalid(f"{obj.name}: the {element} has no MJCF name, so a randomization "
                                       "cannot find it in the compiled model: give it an MJCF Name", [obj])
        name = prefix + obj.mujoco.name
    return Entry(element, item.attribute_name, shortest_float32(item.low), shortest_float32(item.high),
                 name=name, distribution=item.distribution, mode=item.mode_name,
                 index=None if item.component == stored.ALL else item.component,
                 independent=item.independent,
                 std=shortest_float32(item.std) if item.use_std and item.distribution == "normal" else None)


def entry_problem(item, obj, prefix: str = "") -> str:
    """What is wrong with one stored item on its own ("" when nothing), for the panel."""
    try:
        entry_of(item, obj, prefix).check()
    except (RandomizationInvalid, RandomizationError) as error:
        return str(error)
    return ""


def _entries(roots) -> list[tuple[Entry, object]]:
    """(entry, the object it is authored on), checked on their own and against each other."""
    out = []
    seen: dict[tuple, object] = {}  # (element, name, attribute, component) -> its object
    for root, prefix in zip(roots, root_prefixes(roots), strict=True):
        for obj in (root, *sorted(root.children_recursive, key=_order)):
            for item in obj.mujoco.randomize:
                entry = entry_of(item, obj, prefix)
                try:
                    entry.check()
                except RandomizationError as error:
                    raise RandomizationInvalid(f"{obj.name}: {error}", [obj]) from None
                # two entries writing one value: the later would silently win
                for component in _components(entry):
                    key = (entry.element, entry.name, entry.attribute, component)
                    other = seen.get(key)
                    if other is not None:
                        also = "" if other is obj else f" (also on {other.name})"
                        raise RandomizationInvalid(f"{obj.name}: {entry.label} is randomized twice{also}: "
                                                   "keep one entry", [obj] if other is obj else [obj, other])
                    seen[key] = obj
                out.append((entry, obj))
    return out


def _components(entry: Entry) -> list:
    width = stored.width_of(entry.element, entry.attribute)
    return list(range(width)) if entry.index is None else [entry.index]


def _order(obj):
    return (obj.get(ORDER, 1 << 30), obj.name)
