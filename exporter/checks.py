"""What no MJCF file can keep, refused before anything is written.

MuJoCo's writer puts a name's characters into the file as they are, and its
reader gives back something else for some: a carriage return comes back as a
newline (XML reads every line break as one), a NUL ends the name, and the other
control characters make a file that is not XML for any other tool (XML 1.0 has
no place for them; a conforming reader turns tabs and newlines in an attribute
into spaces). So a name with any control character is refused, naming the
object. These are an export's checks only: a simulation compiles the spec
without a file, and MuJoCo keeps any name in memory.

NaN and infinite values, degenerate rotations and duplicate names are refused
by the scan itself (scan/scene_scan.py), since a simulation must not take them
either.
"""

from __future__ import annotations

import re

from .target import ExportFailed

# control characters (Unicode category Cc: C0, DEL, C1)
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
# what MuJoCo's reader does not give back from any attribute's text: NUL, CR, and what
# XML 1.0 forbids (tab and newline stay: MuJoCo keeps them in a text's data)
_LOST = re.compile(r"[\x00-\x08\x0b-\x1f]")


def control_characters(text: str) -> list[str]:
    """The control characters in `text`, by name ("CARRIAGE RETURN (U+000D)")."""
    found = dict.fromkeys(_CONTROL.findall(text))
    return [_char_name(c) for c in found]


def _char_name(char: str) -> str:
    names = {"\r": "carriage return", "\n": "line break", "\t": "tab", "\x00": "NUL character"}
    return f"{names.get(char, 'control character')} (U+{ord(char):04X})"


def check_names(built) -> None:
    """Every element's, class's and model's name can be written and read back as it is."""
    for scanner in built.scanners:
        root = scanner.root
        _check_name(root.mujoco.name or root.name, "the model's name", [root])
        for item in root.mujoco.model.defaults:
            _check_name(item.name, f"default class {item.name!r}", [root])
        for block, kind, element in scanner.elements.values():
            _check_name(element.name, f"its {kind} name", [block], block.name)


def _check_name(name: str, what: str, objects, owner: str | None = None) -> None:
    if not name or not _CONTROL.search(name):
        return
    owner = owner or objects[0].name
    raise ExportFailed(f"{owner}: {what} {name!r} holds a {', '.join(control_characters(name))}, "
                       "which an MJCF file cannot keep: rename it", objects)


def check_text(text: str, built) -> None:
    """The MJCF MuJoCo wrote holds nothing its reader would change (a string attribute
    that check_names does not see: a text element's data, a file name, ...)."""
    found = _LOST.search(text)
    if found is None:
        return
    # the element it is in: the last tag opened before it (its value may be CDATA text)
    tags = list(re.finditer(r"<(\w+)([^<>]*)", text[:found.start()]))
    element, attributes = (tags[-1].group(1), tags[-1].group(2)) if tags else ("element", "")
    named = re.search(r'\sname="([^"]*)"', attributes)
    name = named.group(1) if named else ""
    objects = [block for scanner in built.scanners for block, _kind, e in scanner.elements.values()
               if name and e.name == name]
    where = f"{objects[0].name}: its {element}" if objects else \
        f"a {element} element" + (f" named {name!r}" if name else "")
    raise ExportFailed(f"{where} holds a {_char_name(found.group())}, which an MJCF file "
                       "cannot keep: remove it", objects[:1])
