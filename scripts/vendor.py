"""Install the JavaScript the site and the decks load into build/vendor/, with `npm ci`.

Usage: python scripts/vendor.py [--dest build/vendor]     (`make site` and `make slides` run it)

package.json names the packages; package-lock.json pins each one's sha512 `integrity`,
which npm checks on every tarball. reveal.js 4.0.2, MathJax 2.7.7 (as `mathjax2`),
require.js 2.1.10 and jQuery are what nbconvert's reveal template loads from CDNs (its
jQuery 2.0.3 is not on npm: 2.1.0 is); MathJax 3.2.2 is the site's. Pages load them by
relative URLs, so they open from file:// with the network off. One install serves every
later build, which then needs neither npm nor the network. Offline with the packages
not yet in npm's cache: one line, exit 1; npm missing: one line, exit 2.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
from pathlib import Path

from lecture_utils.files import FolderLock, LockFileError

ROOT = Path(__file__).resolve().parents[1]
VENDOR = ROOT / "build" / "vendor"


class VendorError(Exception):
    """One line for the user; ``status`` is the exit code (2: npm missing, 1: npm failed)."""

    def __init__(self, message: str, status: int = 1):
        super().__init__(message)
        self.status = status


def install(dest: Path = VENDOR) -> Path:
    """``dest/node_modules``, holding the locked packages; `npm ci` installs them if needed."""
    lock = (ROOT / "package-lock.json").read_bytes()
    done = dest / "installed-package-lock.json"  # written last: the install is complete
    dest.mkdir(parents=True, exist_ok=True)
    try:
        with FolderLock(dest / ".lock").held():  # a build started meanwhile waits, then finds it done
            return _install(dest, lock, done)
    except LockFileError as err:  # a link or a folder planted as the lock: never followed, never emptied
        raise VendorError(err.strerror) from None


def _install(dest: Path, lock: bytes, done: Path) -> Path:
    """`npm ci` into ``dest`` unless ``done`` records this package-lock.json (under the lock)."""
    if done.is_file() and done.read_bytes() == lock:
        return dest / "node_modules"
    npm = shutil.which("npm")
    if npm is None:
        raise VendorError("npm not found: install Node.js and npm (apt-get install npm); "
                          "it fetches the JavaScript the pages load", status=2)
    done.unlink(missing_ok=True)
    shutil.copy2(ROOT / "package.json", dest)
    shutil.copy2(ROOT / "package-lock.json", dest)
    # --ignore-scripts: no package code runs here; --prefer-offline: npm's cache is enough.
    run = subprocess.run([npm, "ci", "--prefix", str(dest), "--ignore-scripts", "--prefer-offline",
                          "--no-audit", "--no-fund"], capture_output=True, text=True)
    if run.returncode:
        said = [line[10:] for line in run.stderr.splitlines() if line.startswith("npm error ")]
        detail = [line for line in said if not line.startswith(("code ", "syscall ", "errno "))]
        raise VendorError(f"npm ci failed ({'; '.join((said[:1] + detail[:1]) or [run.stderr.strip()])}); "
                          f"the packages are not in {dest} yet: run once with the npm registry reachable")
    done.write_bytes(lock)
    return dest / "node_modules"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dest", type=Path, default=VENDOR)
    args = parser.parse_args(argv)
    try:
        print(f"vendor: packages in {install(args.dest)}")
    except VendorError as e:
        print(f"vendor: {e}", file=sys.stderr)
        return e.status
    return 0


if __name__ == "__main__":
    sys.exit(main())
