"""Fetch the pinned JavaScript packages the site and slides load, from the npm registry.

Usage: python scripts/vendor.py [--dest build/vendor] [name@version ...]
With no packages, fetches every pin below. Each package lands in
``build/vendor/<name>-<version>/`` (the contents of the npm tarball's ``package/``), so
built pages load it by a relative URL and open from file:// with the network off.
A package already there is not fetched again. The download is checked against the
registry's ``dist.integrity`` (sha512) pinned here, and extracted into a temporary
folder that is renamed into place only when complete, so a failed run leaves nothing
half-written. Offline and not yet cached: one line, exit 1. Unknown package: exit 2.

From Python: ``vendor.fetch("reveal.js", "4.0.2") -> Path``.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import sys
import tarfile
import tempfile
import urllib.error
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
VENDOR = ROOT / "build" / "vendor"
REGISTRY = "https://registry.npmjs.org"

# (name, version) -> the registry's dist.integrity for that tarball.
# reveal.js 4.0.2, MathJax 2.7.7, require.js 2.1.10 and jQuery 2.0.3 are what nbconvert's
# reveal template loads from CDNs by default; jQuery 2.0.3 is not on npm, so the nearest
# release there, 2.1.0. font-awesome 4.7.0 is nbconvert's icon font. MathJax 3.2.2 is
# for the Sphinx site.
PINS: dict[tuple[str, str], str] = {
    ("reveal.js", "4.0.2"): "sha512-LWZSUenufF1gpD7npxJ7KfoQQFKgc1D6XrLTFgKlwWNP1BQ74hT48KONFWMAw+8R/QUeaScCLCLrBVHDfFIEiw==",
    ("mathjax", "2.7.7"): "sha512-OOl0B2/0tSJAtAZarXnQuLDBLgTNRqiI9VqHTQzPsxf4okT2iIpDrvaklK9x2QEMD1sDj4yRn11Ygci41DxMAQ==",
    ("mathjax", "3.2.2"): "sha512-Bt+SSVU8eBG27zChVewOicYs7Xsdt40qm4+UpHyX7k0/O9NliPc+x77k1/FEsPsjKPZGJvtRZM1vO+geW0OhGw==",
    ("requirejs", "2.1.10"): "sha512-4JqdTihK3kOnT387LxCHuJZ/9QsKg2EIl7LmaW35PIyM4LwCI2jwyy4fy6pbY/ZZH2JoY/QEcb5PzULFPP6gcQ==",
    ("jquery", "2.1.0"): "sha512-QyJAvw0LUlUPci88C5LTFNtg4WFs70Dkqmwq4rZyOBflduKnHZakpIIDjhZVygAQbUqaghv6msUyP5TmRoNevQ==",
}
TIMEOUT_S = 60


class VendorError(Exception):
    """A package could not be fetched; the message is one line for the user."""


def tarball_url(name: str, version: str) -> str:
    return f"{REGISTRY}/{name}/-/{name}-{version}.tgz"


def integrity(data: bytes) -> str:
    """The npm ``dist.integrity`` string (Subresource Integrity, sha512) of ``data``."""
    return "sha512-" + base64.b64encode(hashlib.sha512(data).digest()).decode()


def fetch(name: str, version: str, dest: Path = VENDOR) -> Path:
    """``dest/<name>-<version>/`` holding the package, downloading it if not there yet."""
    key = (name, version)
    if key not in PINS:
        choices = ", ".join(f"{n}@{v}" for n, v in PINS)
        raise VendorError(f"no pin for {name}@{version}; pinned packages: {choices}")
    target = dest / f"{name}-{version}"
    if target.is_dir():
        return target
    url = tarball_url(name, version)
    try:
        with urllib.request.urlopen(url, timeout=TIMEOUT_S) as response:
            data = response.read()
    except (urllib.error.URLError, OSError) as e:
        reason = getattr(e, "reason", e)
        raise VendorError(f"cannot download {name}@{version} from {url} ({reason}); "
                          f"it is not in {dest} yet: run once with the npm registry reachable") from None
    got = integrity(data)
    if got != PINS[key]:
        raise VendorError(f"{name}@{version}: the download from {url} has integrity {got}, "
                          f"expected the pinned {PINS[key]}; nothing was written")
    dest.mkdir(parents=True, exist_ok=True)
    # Extract next to the target (same file system) and rename: atomic, so a target
    # folder that exists is always complete.
    with tempfile.TemporaryDirectory(dir=dest, prefix=f".{name}-{version}-") as tmp:
        archive = Path(tmp) / "package.tgz"
        archive.write_bytes(data)
        with tarfile.open(archive) as tar:
            tar.extractall(tmp, filter="data")  # refuses absolute paths, links out, ..
        try:
            (Path(tmp) / "package").rename(target)
        except OSError:
            if not target.is_dir():  # not a concurrent run that finished first
                raise
    return target


def parse_spec(spec: str) -> tuple[str, str]:
    """``"name@version"`` -> ``(name, version)``."""
    name, sep, version = spec.rpartition("@")
    if not sep or not name or not version:
        raise VendorError(f"package {spec!r} is not name@version, e.g. reveal.js@4.0.2")
    return name, version


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("packages", nargs="*", metavar="name@version",
                        help="default: every pinned package")
    parser.add_argument("--dest", type=Path, default=VENDOR)
    args = parser.parse_args(argv)
    try:
        wanted = [parse_spec(s) for s in args.packages] or list(PINS)
    except VendorError as e:
        print(f"vendor: {e}", file=sys.stderr)
        return 2
    unknown = [f"{n}@{v}" for n, v in wanted if (n, v) not in PINS]
    if unknown:
        choices = ", ".join(f"{n}@{v}" for n, v in PINS)
        print(f"vendor: no pin for {', '.join(unknown)}; pinned packages: {choices}", file=sys.stderr)
        return 2
    try:
        for name, version in wanted:
            print(f"vendor: {name}@{version} in {fetch(name, version, args.dest)}")
    except VendorError as e:
        print(f"vendor: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
