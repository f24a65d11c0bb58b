#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""Build MJBlend's installable extension zips, one per Blender platform (`make build`).

1. Download the cp311 wheel of each package the extension bundles (`BUNDLED`:
   mujoco-core, and the network bridge's pyzmq and msgpack), at the versions
   pinned in requirements-dev.txt, for each Blender platform into ./wheels/
   (cached). A platform gets a zip only if every one of them has a wheel for it.
   Only mujoco-core of MuJoCo: the `mujoco` meta package pulls in the
   viewer/studio and their deps, and Blender already ships numpy. pyzmq's
   wheels carry libzmq; msgpack's its C extension: neither needs more.
2. Point `wheels = [...]` in blender_manifest.toml at exactly those files.
3. Run Blender's own builder (`blender_ext.py build --split-platforms`),
   `blender_ext.py validate` every zip, and check each zip's contents.

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
PYTHON_VERSION = "3.11"  # Blender 4.2 - 5.0 bundle Python 3.11.

# Blender platform -> pip `--platform` tags. pip also accepts older tags of the
# same family for each (manylinux_2_28 covers 2_27/2_17..., macosx_11_0 covers
# 10_x and universal2), so one tag per platform, at Blender's own minimums
# (glibc 2.28, macOS 11), is enough.
PIP_PLATFORMS = {
    "linux-x64": ["manylinux_2_28_x86_64"],
    "windows-x64": ["win_amd64"],
    "macos-arm64": ["macosx_11_0_arm64"],
    "macos-x64": ["macosx_11_0_x86_64"],
}
# Used to recognise an already downloaded wheel's platform from its file name.
_WHEEL_OS = {"linux": "manylinux", "windows": "win", "macos": "macosx"}
_WHEEL_ARCH = {"x64": ("x86_64", "amd64", "universal2"), "arm64": ("arm64", "aarch64", "universal2")}

# What each zip bundles, as pinned in requirements-dev.txt: MuJoCo's bindings, and
# for the network bridge (bridge/, URLab's protocol) ZMQ sockets and msgpack frames.
BUNDLED = ("mujoco-core", "pyzmq", "msgpack")

# Paths that must never end up in a zip (the manifest's [build] excludes them).
FORBIDDEN_IN_ZIP = ("tests/", "docs/", "tools/", "bench/", "dist/", ".venv", ".git/", ".ci/")


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


def wheel_fits(wheel: str, platform: str) -> bool:
    os_name, arch = platform.split("-")
    # e.g. manylinux_2_27_x86_64.manylinux_2_28_x86_64, macosx_10_15_universal2
    tags = wheel.removesuffix(".whl").split("-")[-1].split(".")
    return any(t.startswith(_WHEEL_OS[os_name]) and t.endswith(_WHEEL_ARCH[arch]) for t in tags)


def python_fits(wheel: str) -> bool:
    """Whether Blender's Python 3.11 loads the wheel: cp311 itself, or a stable-ABI
    wheel of 3.11 or older (what pip would pick for `--python-version 3.11`)."""
    python, abi = wheel.removesuffix(".whl").split("-")[-3:-1]
    if abi == "abi3":
        return any(re.fullmatch(r"cp3(\d+)", tag) and int(tag[3:]) <= 11 for tag in python.split("."))
    return "cp311" in python.split(".")


def ensure_wheel(package: str, version: str, platform: str) -> str | None:
    """File name of `package`'s wheel for `platform` in WHEELS, or None if PyPI has none."""
    prefix = wheel_prefix(package, version)
    cached = sorted(p.name for p in WHEELS.glob(f"{prefix}*.whl")
                    if wheel_fits(p.name, platform) and python_fits(p.name))
    if cached:
        return cached[0]
    # Download into a scratch directory so the new file is unambiguous.
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
               "--python-version", PYTHON_VERSION, "--implementation", "cp", "--dest", tmp]
        for tag in PIP_PLATFORMS[platform]:
            cmd += ["--platform", tag]
        proc = run(cmd + [f"{package}=={version}"])
        if proc.returncode != 0:
            # pip says "No matching distribution" both when PyPI has no such wheel
            # and when it cannot reach PyPI at all; only the latter retries.
            if "No matching distribution found" in proc.stderr and "Retrying" not in proc.stderr:
                return None
            raise BuildError(f"pip download of {package} failed for {platform}:\n{proc.stderr}")
        (wheel,) = Path(tmp).glob("*.whl")
        WHEELS.mkdir(exist_ok=True)
        shutil.move(wheel, WHEELS / wheel.name)
        return wheel.name


def update_manifest_wheels(wheels: list[str]) -> None:
    """Rewrite only the `wheels = [...]` list (one wheel per line); the rest of the
    file stays byte-identical."""
    text = MANIFEST.read_text()
    listing = "wheels = [\n" + "".join(f'  "./wheels/{w}",\n' for w in sorted(set(wheels))) + "]"
    # (a wheel's file name never holds "]": the list ends at the first one)
    new_text, count = re.subn(r"^wheels = \[[^\]]*\]", lambda _m: listing, text, flags=re.MULTILINE)
    if count != 1:
        raise BuildError(f"expected exactly one 'wheels = [...]' in {MANIFEST}, found {count}")
    if new_text != text:
        MANIFEST.write_text(new_text)
        print(f"updated {MANIFEST.name}: {len(set(wheels))} wheels")


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
    """The zip holds the add-on and its platform's wheels, exactly one of each
    BUNDLED package at its pinned version, and none of the dev files."""
    with zipfile.ZipFile(zip_path) as zf:
        names = set(zf.namelist())
        generated = tomllib.loads(zf.read("blender_manifest.toml").decode())["build"]["generated"]
    problems = [f"contains {n}" for n in sorted(names) if n.startswith(FORBIDDEN_IN_ZIP)]
    if "__init__.py" not in names:
        problems.append("has no __init__.py")
    expected = {w.removeprefix("./") for w in generated["wheels"]}
    (platform,) = generated["platforms"]
    for package, version in versions.items():
        prefix = "wheels/" + wheel_prefix(package, version)
        found = sorted(w for w in expected if w.startswith(prefix))
        if len(found) != 1:
            problems.append(f"bundles {len(found)} {package} {version} wheels for {platform}, not 1: {found}")
        elif not wheel_fits(found[0], platform):
            problems.append(f"bundles {found[0]}, not a {platform} wheel")
    problems += [f"misses {w}" for w in sorted(expected - names)]
    problems += [f"has unexpected wheel {n}" for n in sorted(names)
                 if n.endswith(".whl") and n not in expected]
    if problems:
        raise BuildError(f"{zip_path.name}: " + "; ".join(problems))


def build(output_dir: Path, platforms: list[str] | None) -> list[Path]:
    """Zips for `platforms` (None: every platform PyPI has all the wheels for)."""
    versions = pinned_versions()
    print(", ".join(f"{package} {version}" for package, version in versions.items())
          + f"; Python {PYTHON_VERSION}")

    # All platforms, whatever --platform says: the manifest must list the full set.
    wheels: dict[str, list[str]] = {}  # platform -> its wheel of every BUNDLED package
    lacking: dict[str, str] = {}  # platform -> the first package PyPI has no wheel of for it
    for platform in PIP_PLATFORMS:
        found = []
        for package, version in versions.items():  # (mujoco-core first: it has the fewest platforms)
            wheel = ensure_wheel(package, version, platform)
            if wheel is None:
                lacking[platform] = f"{package} {version}"
                break
            found.append(wheel)
        if platform in lacking:
            print(f"  {platform:12s} NOTE: PyPI has no {lacking[platform]} wheel; no zip for this platform")
        else:
            wheels[platform] = found
            print(f"  {platform:12s} " + ", ".join(found))
    if not wheels:
        raise BuildError("no platform has a wheel of every bundled package: " + ", ".join(BUNDLED))
    if platforms is None:
        platforms = list(wheels)
    elif unavailable := set(platforms) - set(wheels):
        raise BuildError("no wheel for " + "; ".join(f"{p}: {lacking[p]}" for p in sorted(unavailable)))
    used = {wheel for found in wheels.values() for wheel in found}
    for stale in set(p.name for p in WHEELS.glob("*.whl")) - used:
        print(f"removing stale wheels/{stale}")
        (WHEELS / stale).unlink()
    update_manifest_wheels(sorted(used))

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
            # Not asked for, or a wheel missing: the manifest still declares every
            # platform, and a zip without mujoco (or zmq) would install but not work.
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
