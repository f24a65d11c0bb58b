"""What a domain-randomization entry stored on an element object may say (bpy-free).

Each MuJoCo element object keeps a list of entries, `obj.mujoco.randomize`
(the property group is in properties.py); the model root keeps the seed,
`root.mujoco.model.randomize_seed`, and the option's entries (gravity: the
option element has no object of its own). An entry stores its attribute and
mode as the names batch/randomization.py uses ("mass", "scale"), so a file
keeps meaning the same entry whatever choices a later MJBlend offers; the
enums a panel shows are views of those names, limited to what the element's
kind and the attribute allow.
"""

from __future__ import annotations

from ..batch.randomization import ATTRIBUTES, DISTRIBUTIONS, MODES, attributes_of

__all__ = ("MODES", "ALL", "DISTRIBUTION_ITEMS", "MODE_DESCRIPTIONS", "DEFAULT_RANGES", "element_of",
           "attribute_choices", "modes_of", "width_of", "component_choices")

# the object kind -> the randomization's element (the model root stands for the option)
ELEMENT_OF_KIND = {"BODY": "body", "GEOM": "geom", "JOINT": "joint", "ACTUATOR": "actuator",
                   "MODEL": "option"}
ALL = -1  # an entry's `component` for every component of a vector attribute
# what each component of a vector attribute is, for the panel
_COMPONENTS = {"pos": ("X", "Y", "Z"), "gravity": ("X", "Y", "Z"),
               "friction": ("Sliding", "Torsional", "Rolling"),
               "size": ("Size 0", "Size 1", "Size 2")}
DISTRIBUTION_ITEMS = (
    ("uniform", "Uniform", "Every value of the range equally likely", 0),
    ("loguniform", "Log-uniform", "Uniform in the logarithm (a positive range: equal odds of "
                                  "x0.5 and x2)", 1),
    ("normal", "Normal", "Normal around the middle of the range (std a quarter of the range unless "
                         "given), clipped to the range", 2),
)
assert tuple(item[0] for item in DISTRIBUTION_ITEMS) == DISTRIBUTIONS
MODE_DESCRIPTIONS = {"scale": "The compiled value times the drawn factor",
                     "offset": "The compiled value plus the drawn amount",
                     "absolute": "The drawn value itself"}
# the range an entry gets when it is added or its mode changes to one whose range makes no sense
DEFAULT_RANGES = {"scale": (0.9, 1.1), "offset": (-0.01, 0.01), "absolute": (0.0, 1.0)}


def element_of(kind: str) -> str | None:
    """The randomization element of an object of MuJoCo `kind` ("BODY"), or None."""
    return ELEMENT_OF_KIND.get(kind)


def attribute_choices(element: str | None) -> list[tuple[str, str, str]]:
    """(name, label, description) of each attribute an element of this kind may randomize."""
    return [(a.name, a.label, a.description) for a in attributes_of(element)] if element else []


def modes_of(element: str | None, attribute: str) -> tuple[str, ...]:
    found = ATTRIBUTES.get((element, attribute))
    return found.modes if found else ()


def width_of(element: str | None, attribute: str) -> int:
    found = ATTRIBUTES.get((element, attribute))
    return found.width if found else 1


def component_choices(element: str | None, attribute: str) -> list[tuple[int, str]]:
    """(component, label) an entry may pick: ALL, then each component of a vector attribute."""
    width = width_of(element, attribute)
    if width == 1:
        return [(ALL, "All")]
    names = _COMPONENTS.get(attribute, tuple(str(i) for i in range(width)))
    return [(ALL, "All"), *enumerate(names[:width])]
