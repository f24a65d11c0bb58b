#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""Build MJBlend's installable extension zips, one per Blender platform (`make build`).

1. Download the wheels of each package the extension bundles (`BUNDLED`:
   mujoco-core, the network bridge's pyzmq and msgpack, and what
   `mujoco.Renderer` needs for its OpenGL context: PyOpenGL and glfw), at the
   versions pinned in requirements-dev.txt, for every Python a supported Blender
   runs (`PYTHON_VERSIONS`) and every Blender platform, into ./wheels/ (cached).
   A platform gets a zip only if every package has a wheel for every Python there.
   Only mujoco-core of MuJoCo: the `mujoco` meta package pulls in the
   viewer/studio and their deps, and Blender already ships numpy. pyzmq's
   wheels carry libzmq; msgpack's its C extension; glfw's the GLFW library:
   none needs more. PyOpenGL is pure Python: its one `py3-none-any` wheel
   goes into every zip and serves every Python (a pure wheel is a wheel of
   every platform, here as in Blender's builder and installer).
2. Point `platforms = [...]` and `wheels = [...]` in blender_manifest.toml at
   exactly those platforms and files.
3. Run Blender's own builder (`blender_ext.py build --split-platforms`),
   `blender_ext.py validate` every zip, and check each zip's contents: for each
   Python, exactly one wheel of each package that Blender's installer picks.

Standard library only; pip is the running interpreter's (`sys.executable -m pip`).
"""

import argparse
import importlib.util
import re
import shutil
import subprocess
import sys
import tempfile
import tomllib
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MANIFEST = ROOT / "blender_manifest.toml"
REQUIREMENTS = ROOT / "requirements-dev.txt"
WHEELS = ROOT / "wheels"
# Every Python a supported Blender runs: 3.11 (official 4.2 - 5.0), 3.13 (official
# 5.1 - 5.2) and 3.14 (distribution builds, e.g. Debian's 5.2.2 on the system's Python).
# Blender's installer picks, per Python, the wheels whose python tag is that version,
# or stable-ABI (abi3) wheels of that version or older (`blender_picks`).
PYTHON_VERSIONS = ("3.11", "3.13", "3.14")


def _manylinux(arch: str) -> list[str]:
    # pip does not count manylinux_2_28 as covering the older manylinux_2_17 /
    # manylinux2014 (a wheel tagged only with those would not match), so name each,
    # up to Blender's own minimum, glibc 2.28.
    return [f"manylinux2014_{arch}"] + [f"manylinux_2_{minor}_{arch}" for minor in range(17, 29)]


# Every platform Blender's extension system knows -> pip `--platform` tags. pip counts
# macosx_11_0 as covering 10_x and universal2 (Blender's minimum is macOS 11).
PIP_PLATFORMS = {
    "linux-x64": _manylinux("x86_64"),
    "linux-arm64": _manylinux("aarch64"),
    "macos-x64": ["macosx_11_0_x86_64"],
    "macos-arm64": ["macosx_11_0_arm64"],
    "windows-x64": ["win_amd64"],
    "windows-arm64": ["win_arm64"],
}
# Used to recognise an already downloaded wheel's platform from its file name.
_WHEEL_OS = {"linux": "manylinux", "windows": "win", "macos": "macosx"}
_WHEEL_ARCH = {"x64": ("x86_64", "amd64", "universal2"), "arm64": ("arm64", "aarch64", "universal2")}
# (pip counts macOS's old `intel` wheels (x86_64 + i386) as x86_64 ones; Blender does not,
# so neither does wheel_fits: glfw's macOS x64 wheel is one, and macos-x64 gets no zip.)

# What each zip bundles, as pinned in requirements-dev.txt: MuJoCo's bindings; for the
# network bridge (bridge/, URLab's protocol) ZMQ sockets and msgpack frames; for
# mujoco.Renderer (engine/cameras.py) its GL context's needs: PyOpenGL (EGL and OSMesa
# on Linux) and glfw (Windows' only backend, and the fallback elsewhere: macOS when CGL
# fails, Linux with a display). mujoco-core first: it has the fewest platforms.
BUNDLED = ("mujoco-core", "pyzmq", "msgpack", "PyOpenGL", "glfw")
# Optional backends of the batch runtime, installed by whoever uses them, never zipped
# (check_zip refuses any wheel outside BUNDLED; this keeps them out of BUNDLED).
NEVER_BUNDLED = ("ray", "mujoco-warp", "warp-lang")
assert not set(BUNDLED) & set(NEVER_BUNDLED), "an optional backend must not be bundled"

# Paths that must never end up in a zip (the manifest's [build] excludes them).
FORBIDDEN_IN_ZIP = ("tests/", "docs/", "tools/", "bench/", "dist/", "build/", ".venv", ".git/", ".ci/",
                    "MUJOCO_LOG.TXT")


class BuildError(Exception):
    pass


def run(cmd: list) -> subprocess.CompletedProcess:
    return subprocess.run([str(c) for c in cmd], capture_output=True, text=True)


def pinned_versions() -> dict[str, str]:
    """{package: version} of every BUNDLED package, from its `name==version` line."""
    text = REQUIREMENTS.read_text()
    versions = {}
    for package in BUNDLED:
        match = re.search(rf"^{re.escape(package)}==(\S+)\s*$", text, re.MULTILINE)
        if not match:
            raise BuildError(f"no '{package}==<version>' line in {REQUIREMENTS}")
        versions[package] = match.group(1)
    return versions


def wheel_prefix(package: str, version: str) -> str:
    """The start of the package's wheel file names: `mujoco-core` 4.0.1 -> `mujoco_core-4.0.1-`."""
    return f"{re.sub(r'[-_.]+', '_', package).lower()}-{version}-"


def pure(wheel: str) -> bool:
    """A wheel of every platform (`py3-none-any`): pure Python, like PyOpenGL's."""
    return wheel.removesuffix(".whl").split("-")[-1] == "any"


def wheel_fits(wheel: str, platform: str) -> bool:
    """Whether Blender installs the wheel on `platform` (by its platform tag alone)."""
    if pure(wheel):
        return True
    os_name, arch = platform.split("-")
    # e.g. manylinux_2_27_x86_64.manylinux_2_28_x86_64, macosx_10_15_universal2
    tags = wheel.removesuffix(".whl").split("-")[-1].split(".")
    return any(t.startswith(_WHEEL_OS[os_name]) and t.endswith(_WHEEL_ARCH[arch]) for t in tags)


def blender_picks(wheel: str, python: str) -> bool:
    """Whether Blender's installer on Python `python` ("3.13") picks the wheel, by its
    python and abi tags (bl_pkg's `_extensions_wheel_filter_for_this_system`): a python
    tag of that version (or of its major version alone, `py3`), or a stable-ABI wheel
    (abi3) of that version or older. Like Blender it looks at no other abi tag: a
    free-threaded `cp314t` wheel would pass for 3.14 (the build never takes one)."""
    major, minor = map(int, python.split("."))
    python_tags, abi_tags = (t.split(".") for t in wheel.removesuffix(".whl").split("-")[-3:-1])
    stable = any(re.fullmatch(r"abi\d+", t) for t in abi_tags)
    for tag in python_tags:
        match = re.match(r"(?:cp|py)(\d)(\d*)", tag)
        if not match:
            continue
        tag_major, tag_minor = int(match[1]), int(match[2]) if match[2] else None
        if tag_minor is None:
            if tag_major == major:
                return True
        elif (tag_major, tag_minor) == (major, minor) or (
                stable and tag_major == major and tag_minor <= minor):
            return True
    return False


def free_threaded(wheel: str) -> bool:
    """A free-threaded build's wheel (abi tag `cp314t`): never bundled, since Blender's
    filter would take it for a plain cp314 one and load two of the package."""
    return any(re.fullmatch(r"cp\d+t", t) for t in wheel.removesuffix(".whl").split("-")[-2].split("."))


def ensure_wheel(package: str, version: str, platform: str, python: str) -> str | None:
    """File name of `package`'s wheel for `platform` and Python `python` in WHEELS,
    or None if PyPI has none that Blender installs there. A pure wheel (`py3-none-any`)
    is one file for every platform and Python: downloaded once, then found in the cache."""
    prefix = wheel_prefix(package, version)
    exact = "cp" + python.replace(".", "")
    cached = sorted((p.name for p in WHEELS.glob(f"{prefix}*.whl")
                     if wheel_fits(p.name, platform) and blender_picks(p.name, python)
                     and not free_threaded(p.name)),
                    key=lambda name: (exact not in name.split("-")[-3].split("."), name))
    if cached:  # (one made for this very Python before a stable-ABI one)
        return cached[0]
    # What PyPI was found to lack is cached too: a build needs no pip (and no network)
    # once a build with them has run (the test environments in the Debian root have neither).
    lacking = WHEELS / f".none-{prefix}{platform}-{exact}"
    if lacking.exists():
        return None
    # Download into a scratch directory so the new file is unambiguous. The explicit
    # abis (this Python's own, and the stable ABI) keep pip off free-threaded wheels.
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
               "--python-version", python, "--implementation", "cp",
               "--abi", exact, "--abi", "abi3", "--dest", tmp]
        for tag in PIP_PLATFORMS[platform]:
            cmd += ["--platform", tag]
        proc = run(cmd + [f"{package}=={version}"])
        if proc.returncode != 0:
            # pip says "No matching distribution" both when PyPI has no such wheel
            # and when it cannot reach PyPI at all; only the latter retries.
            if "No matching distribution found" in proc.stderr and "Retrying" not in proc.stderr:
                WHEELS.mkdir(exist_ok=True)
                lacking.touch()
                return None
            raise BuildError(f"pip download of {package} failed for {platform}, Python {python}:\n"
                             f"{proc.stderr}")
        (wheel,) = Path(tmp).glob("*.whl")
        WHEELS.mkdir(exist_ok=True)
        if not (wheel_fits(wheel.name, platform) and blender_picks(wheel.name, python)):
            # pip's idea of a match is wider than Blender's (a macosx_10_6_intel wheel
            # for x86_64): for Blender this platform has no wheel.
            lacking.touch()
            return None
        shutil.move(wheel, WHEELS / wheel.name)
        return wheel.name


def update_manifest(platforms: list[str], wheels: list[str]) -> None:
    """Rewrite only the `platforms = [...]` and `wheels = [...]` lists (one wheel per
    line); the rest of the file stays byte-identical."""
    text = MANIFEST.read_text()
    listings = {
        "platforms": "platforms = [" + ", ".join(f'"{p}"' for p in platforms) + "]",
        "wheels": "wheels = [\n" + "".join(f'  "./wheels/{w}",\n' for w in sorted(set(wheels))) + "]",
    }
    new_text = text
    for key, listing in listings.items():
        # (a platform's or wheel's name never holds "]": the list ends at the first one)
        new_text, count = re.subn(rf"^{key} = \[[^\]]*\]", lambda _m, listing=listing: listing, new_text,
                                  flags=re.MULTILINE)
        if count != 1:
            raise BuildError(f"expected exactly one '{key} = [...]' in {MANIFEST}, found {count}")
    if new_text != text:
        MANIFEST.write_text(new_text)
        print(f"updated {MANIFEST.name}: {len(platforms)} platforms, {len(set(wheels))} wheels")


def picks_problems(wheels: list[str], platform: str, versions: dict[str, str]) -> list[str]:
    """What is wrong with `wheels` as one platform's zip: for each Python, Blender's
    installer must pick exactly one wheel of each BUNDLED package at its pinned
    version, and every wheel must be a `platform` one that some Python picks."""
    problems = []
    for package, version in versions.items():
        prefix = wheel_prefix(package, version)
        ours = [w for w in wheels if w.rsplit("/", 1)[-1].startswith(prefix)]
        for python in PYTHON_VERSIONS:
            picked = sorted(w for w in ours if blender_picks(w, python))
            if len(picked) != 1:
                problems.append(f"Python {python} picks {len(picked)} {package} {version} wheels, "
                                f"not 1: {picked}")
    for wheel in wheels:
        name = wheel.rsplit("/", 1)[-1]
        if not wheel_fits(name, platform):
            problems.append(f"bundles {name}, not a {platform} wheel")
        if free_threaded(name):
            problems.append(f"bundles {name}, a free-threaded Python's wheel")
        if not any(blender_picks(name, python) for python in PYTHON_VERSIONS):
            problems.append(f"bundles {name}, which no Python {', '.join(PYTHON_VERSIONS)} picks")
        if not any(name.startswith(wheel_prefix(p, v)) for p, v in versions.items()):
            problems.append(f"bundles {name}, not a wheel of {', '.join(BUNDLED)} at its pinned version")
    return problems


def blender_ext_path() -> Path:
    # Ships inside the bpy wheel; find bpy without importing it (importing is slow).
    spec = importlib.util.find_spec("bpy")
    if spec is None or not spec.submodule_search_locations:
        raise BuildError("bpy is not installed in this Python (run `make venv`)")
    bpy_dir = Path(next(iter(spec.submodule_search_locations)))
    found = sorted(bpy_dir.glob("*/scripts/addons_core/bl_pkg/cli/blender_ext.py"))
    if not found:
        raise BuildError(f"blender_ext.py not found under {bpy_dir}")
    return found[-1]


def check_zip(zip_path: Path, versions: dict[str, str]) -> None:
    """The zip holds the add-on and its platform's wheels: for each of PYTHON_VERSIONS
    exactly one of each BUNDLED package at its pinned version that Blender's installer
    picks (`picks_problems`); and none of the dev files."""
    with zipfile.ZipFile(zip_path) as zf:
        names = set(zf.namelist())
        generated = tomllib.loads(zf.read("blender_manifest.toml").decode())["build"]["generated"]
    problems = [f"contains {n}" for n in sorted(names) if n.startswith(FORBIDDEN_IN_ZIP)]
    if "__init__.py" not in names:
        problems.append("has no __init__.py")
    expected = {w.removeprefix("./") for w in generated["wheels"]}
    (platform,) = generated["platforms"]
    problems += picks_problems(sorted(expected), platform, versions)
    problems += [f"misses {w}" for w in sorted(expected - names)]
    problems += [f"has unexpected wheel {n}" for n in sorted(names)
                 if n.endswith(".whl") and n not in expected]
    if problems:
        raise BuildError(f"{zip_path.name}: " + "; ".join(problems))


def build(output_dir: Path, platforms: list[str] | None) -> list[Path]:
    """Zips for `platforms` (None: every platform PyPI has all the wheels for)."""
    versions = pinned_versions()
    print(", ".join(f"{package} {version}" for package, version in versions.items())
          + f"; Python {', '.join(PYTHON_VERSIONS)}")

    # All platforms, whatever --platform says: the manifest must list the full set.
    wheels: dict[str, list[str]] = {}  # platform -> its wheels of every BUNDLED package, every Python
    lacking: dict[str, str] = {}  # platform -> the first package PyPI lacks wheels of, and for which Pythons
    fetched: set[str] = set()  # every wheel found, of a zip's platform or not (the cache keeps them)
    for platform in PIP_PLATFORMS:
        found: list[str] = []
        for package, version in versions.items():  # (mujoco-core first: it has the fewest platforms)
            missing = []
            for python in PYTHON_VERSIONS:
                wheel = ensure_wheel(package, version, platform, python)
                if wheel is None:
                    missing.append(python)
                    continue
                fetched.add(wheel)
                if wheel not in found:  # (a stable-ABI wheel serves several Pythons)
                    found.append(wheel)
            if missing:
                lacking[platform] = f"{package} {version} for Python {', '.join(missing)}"
                break
        if platform in lacking:
            print(f"  {platform:13s} NOTE: PyPI has no {lacking[platform]}; no zip for this platform")
            continue
        if problems := picks_problems(found, platform, versions):
            raise BuildError(f"{platform}: " + "; ".join(problems))
        wheels[platform] = found
        print(f"  {platform:13s} " + "\n  {:13s} ".format("").join(found))
    if not wheels:
        raise BuildError("no platform has a wheel of every bundled package: " + ", ".join(BUNDLED))
    if platforms is None:
        platforms = list(wheels)
    elif unavailable := set(platforms) - set(wheels):
        raise BuildError("no wheel for " + "; ".join(f"{p}: {lacking[p]}" for p in sorted(unavailable)))
    used = {wheel for found in wheels.values() for wheel in found}
    for stale in set(p.name for p in WHEELS.glob("*.whl")) - fetched:
        print(f"removing stale wheels/{stale}")
        (WHEELS / stale).unlink()
    update_manifest(list(wheels), sorted(used))

    blender_ext = blender_ext_path()
    output_dir.mkdir(parents=True, exist_ok=True)
    for old in output_dir.glob("mjblend-*.zip"):
        old.unlink()
    proc = run([sys.executable, blender_ext, "build", "--split-platforms",
                "--source-dir", ROOT, "--output-dir", output_dir])
    if proc.returncode != 0:
        raise BuildError(f"blender_ext.py build failed:\n{proc.stdout}{proc.stderr}")

    zips = []
    for zip_path in sorted(output_dir.glob("mjblend-*.zip")):
        platform = zip_path.stem.rsplit("-", 1)[-1].replace("_", "-")  # mjblend-0.1.0-linux_x64
        if platform not in platforms:
            # Not asked for: the manifest declares every platform that has all the
            # wheels (a zip without mujoco or zmq would install but not work).
            zip_path.unlink()
            continue
        proc = run([sys.executable, blender_ext, "validate", zip_path])
        if proc.returncode != 0:
            raise BuildError(f"blender_ext.py validate {zip_path.name} failed:\n{proc.stdout}{proc.stderr}")
        check_zip(zip_path, versions)
        zips.append(zip_path)
    missing = set(platforms) - {z.stem.rsplit("-", 1)[-1].replace("_", "-") for z in zips}
    if missing:
        raise BuildError(f"blender_ext.py produced no zip for {sorted(missing)}")
    return zips


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--platform", action="append", choices=list(PIP_PLATFORMS),
                        help="keep only this platform's zip (repeatable; default: all)")
    parser.add_argument("--output-dir", type=Path, default=ROOT / "dist")
    args = parser.parse_args()
    try:
        zips = build(args.output_dir.resolve(), args.platform)
    except BuildError as ex:
        print(f"error: {ex}", file=sys.stderr)
        return 1
    for zip_path in zips:
        print(zip_path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
