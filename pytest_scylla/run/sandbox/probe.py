"""Whether bubblewrap can make a sandbox on this machine, and what to do when it cannot."""

from __future__ import annotations

import shutil
import subprocess


def bwrap_works() -> str | None:
    """None when bubblewrap can start a sandbox here; else why not."""
    if shutil.which("bwrap") is None:
        return "bubblewrap (bwrap) is not installed"
    probe = subprocess.run(
        [
            "bwrap",
            "--unshare-all",
            "--die-with-parent",
            "--ro-bind",
            "/usr",
            "/usr",
            "--symlink",
            "usr/bin",
            "/bin",
            "--symlink",
            "usr/lib",
            "/lib",
            "--symlink",
            "usr/lib64",
            "/lib64",
            "--proc",
            "/proc",
            "--dev",
            "/dev",
            "--",
            "/usr/bin/true",
        ],
        capture_output=True,
        text=True,
        timeout=30,
    )
    if probe.returncode != 0:
        return f"bubblewrap cannot create a sandbox here: {probe.stderr.strip()[:200]}"
    return None


def bwrap_advice(problem: str) -> str:
    """What to do about bubblewrap's `problem` (from `bwrap_works`)."""
    if "not installed" in problem:
        return (
            "install it (Debian/Ubuntu: apt-get install bubblewrap), or use "
            "--scylla-sandbox=docker with a Docker engine"
        )
    if "uid map" in problem or "Permission denied" in problem:
        return (
            "this kernel restricts unprivileged user namespaces (Ubuntu 23.10 and later, "
            "GitHub's ubuntu-24.04 runners: AppArmor): allow them with `sysctl -w "
            "kernel.apparmor_restrict_unprivileged_userns=0` or an AppArmor profile for "
            "bwrap, or use --scylla-sandbox=docker (`scylla image build --host` once)"
        )
    return (
        "no user namespaces can be made here (inside a container, as in GitLab's Docker "
        "executor, or with user namespaces disabled): use --scylla-sandbox=docker with a "
        "Docker engine, or run this where namespaces are allowed"
    )
