"""Where a submission's kernel runs: a deny-by-default bubblewrap sandbox, and the limits on what it may use.

**What the kernel sees** (``isolation`` + ``command``). Nothing of the grading machine unless named here:
the system's runtime folders read-only (``/usr`` and the ``/bin``, ``/sbin``, ``/lib*`` links or folders), a
few host files under ``/etc`` (``SYSTEM_ETC``), the course's own account and name-service files
(``autograder/data/sandbox``: uid 1000, ``localhost``, look-ups in files only), the CPU topology in ``/sys``
(thread pools size themselves from it), the Python installation and the virtual environment
(``sys.base_prefix``, ``sys.prefix``, ``sys.exec_prefix``) and the ``autograder`` package read-only, with its
reference answers (the ``course_answers`` package) and any private folder inside those replaced by an empty folder;
the GPU device nodes (and, with them, what their drivers read in ``/sys`` and ``/opt/rocm``); writable only the
submission's work folder, the kernel's run folder (its connection sockets, HOME) and the device lock.
Never the root of the host, the repository or its ``solutions/``, other checkouts, home folders, the host's
``/tmp``, ``/run`` or any host socket. Its own ``/proc`` (a PID namespace), a minimal ``/dev``, and ``/tmp``
and ``/dev/shm`` as memory file systems of a fixed size. No network, no capabilities, uid 1000, a new
session (no terminal), and it dies with the grader.

**What it may use** (``Quota`` + ``prefix``). The kernel command is started through ``LAUNCHER``, a few lines
of Python that put their own process under the limits and then ``exec`` the sandbox, so nothing runs
outside them. As root, with cgroup v1 ``memory`` and ``pids`` hierarchies the grader can write to, each
kernel gets its own child groups (memory, counting its ``/tmp`` and ``/dev/shm`` pages too, with a hard
limit a little above the memory limit, and processes);
the grader removes them afterwards (``release``). Elsewhere (not root, cgroup v2 without delegation, macOS)
resource limits stand in: RLIMIT_DATA (a backstop above the memory limit), and inside the sandbox's own
user namespace RLIMIT_NPROC, which there counts only the sandbox's processes (the kernel does not apply it
to root's: root without cgroups has the watchdog's count only). Always: RLIMIT_FSIZE (no file
past ``file_bytes``) and RLIMIT_NOFILE. The ``Watchdog`` polls as a second line: resident memory plus the
sandbox's ``/tmp`` and ``/dev/shm``, the number of tasks, the size of the writable folders, the wall time.
"""
from __future__ import annotations

import glob
import json
import importlib.util
import os
import shutil
import signal
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import autograder

PACKAGE = Path(autograder.__file__).resolve().parent
OWN_ETC = PACKAGE / "data" / "sandbox"  # passwd, group, hosts, nsswitch.conf of the sandbox
DEVICES = ("/dev/nvidia*", "/dev/dri", "/dev/kfd")  # GPUs (NVIDIA, ROCm) stay usable for measurements
SYSTEM = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")  # symbolic links are kept as links
SYSTEM_ETC = ("ld.so.cache",    # where the dynamic loader finds shared libraries
              "localtime",      # the time zone
              "alternatives",   # Debian's links behind some /usr/bin commands
              "fonts",          # fontconfig's configuration (Pillow, fc-list)
              "ssl/certs")      # public CA certificates (some libraries load them when imported)
SYSTEM_SYS = ("/sys/devices/system/cpu", "/sys/devices/system/node")  # CPU count and topology (glibc, BLAS, torch)
GPU_SYS = ("/sys/bus/pci", "/sys/devices/pci*", "/sys/module/nvidia*", "/sys/class/drm", "/sys/class/kfd",
           "/sys/devices/virtual/kfd", "/opt/rocm")  # read by the NVIDIA and ROCm user-space drivers
MARKER = "--aihw-limits"  # in the launcher's command line, before its JSON settings
LAUNCHER = r"""
import json, os, resource, sys
i = sys.argv.index("--aihw-limits")
spec, cmd = json.loads(sys.argv[i + 1]), sys.argv[i + 2:]
limits = dict(spec.get("rlimits", {}))
try:
    for folder, values in spec.get("cgroups", []):
        os.makedirs(folder, exist_ok=True)
        for name, value in values:
            if os.path.exists(os.path.join(folder, name)):
                with open(os.path.join(folder, name), "w") as f:
                    f.write(str(value))
        with open(os.path.join(folder, "cgroup.procs"), "w") as f:
            f.write(str(os.getpid()))
except OSError as exc:
    print("aihw: cgroups unusable, using resource limits:", exc, file=sys.stderr)
    limits.update(spec.get("fallback", {}))
for name, value in limits.items():
    try:
        kind = getattr(resource, "RLIMIT_" + name)
        hard = resource.getrlimit(kind)[1]
        value = value if hard == resource.RLIM_INFINITY else min(value, hard)
        resource.setrlimit(kind, (value, value))
    except (AttributeError, ValueError, OSError) as exc:  # a limit this system does not have
        print("aihw: RLIMIT_" + name, "not set:", exc, file=sys.stderr)
try:
    os.execvp(cmd[0], cmd)
except OSError as exc:
    print("aihw: cannot start", cmd[0], "(PATH=" + os.environ.get("PATH", "") + "):", exc, file=sys.stderr)
    sys.exit(127)
"""


@dataclass(frozen=True)
class Quota:
    """What one kernel may use: memory (with its /tmp and /dev/shm), tasks, disk, one file, open files."""

    memory_bytes: int = 4 * 2**30
    processes: int = field(default_factory=lambda: max(1024, 16 * (os.cpu_count() or 1)))  # and threads
    disk_bytes: int = 2 * 2**30  # everything in the writable folders
    file_bytes: int = 512 * 2**20  # any one file
    open_files: int = 4096

    @property
    def hard_memory_bytes(self) -> int:
        """The memory cgroup's limit: above ``memory_bytes``, where the watchdog stops the notebook and says
        why; the kernel refuses or kills past it even when an allocation outruns the watchdog's polling."""
        return self.memory_bytes + max(256 * 2**20, self.memory_bytes // 4)

    @property
    def tmpfs_bytes(self) -> int:
        """Size of each of /tmp and /dev/shm: they count against the memory limit too."""
        return self.memory_bytes


@dataclass(frozen=True)
class Isolation:
    """What a sandboxed kernel may see and write (absolute paths)."""

    expose: tuple[Path, ...]  # read-only: the Python installation, the environment, the package
    mask: tuple[Path, ...]  # empty and read-only: reference answers, private folders inside exposed ones
    writable: tuple[Path, ...]


@dataclass
class Confinement:
    """The limits of one launched kernel: its cgroups (if any), its folders, and what happened in them."""

    quota: Quota
    cgroups: dict[str, str] = field(default_factory=dict)  # controller -> folder
    folders: tuple[str, ...] = ()  # writable folders, summed by the watchdog
    tmpfs: tuple[str, ...] = ()  # memory file systems inside the sandbox, summed with memory
    final: dict | None = None  # counters read just before the groups were removed

    @classmethod
    def from_command(cls, cmd: list[str]) -> "Confinement | None":
        if MARKER not in cmd:
            return None
        spec = json.loads(cmd[cmd.index(MARKER) + 1])
        watch = spec.get("watch", {})
        return cls(Quota(**watch.get("quota", {})), dict(watch.get("cgroups", {})), tuple(watch.get("folders", [])),
                   tuple(watch.get("tmpfs", [])))

    def counters(self) -> dict:
        """``oom_kills`` (the memory group killed a process) and ``pids_refused`` (forks refused at the limit)."""
        if self.final is not None:
            return self.final
        found = {"oom_kills": 0, "pids_refused": 0}
        memory, pids = self.cgroups.get("memory"), self.cgroups.get("pids")
        if memory:
            found["oom_kills"] = _field(Path(memory) / "memory.oom_control", "oom_kill")
        if pids:
            found["pids_refused"] = _field(Path(pids) / "pids.events", "max")
        return found

    def cgroup_memory(self) -> int | None:
        """Anonymous and tmpfs bytes charged to the memory group (None: no group)."""
        folder = self.cgroups.get("memory")
        if not folder or self.final is not None:
            return None
        stat = Path(folder) / "memory.stat"
        return _field(stat, "total_rss") + _field(stat, "total_shmem") if stat.exists() else None

    def release(self) -> None:
        """Kill what is left in the groups and remove them (idempotent)."""
        if self.final is not None:
            return
        self.final = self.counters()
        for folder in self.cgroups.values():
            _remove_group(Path(folder))

    def tmpfs_used(self, pids: list[int]) -> int:
        """Bytes in the sandbox's /tmp and /dev/shm, seen through the first process inside its mount namespace."""
        if not self.tmpfs:
            return 0
        own = _mount_ns(os.getpid())
        for pid in pids:
            ns = _mount_ns(pid)
            if ns is None or ns == own:
                continue
            used = 0
            for path in self.tmpfs:
                try:
                    st = os.statvfs(f"/proc/{pid}/root{path}")
                    used += (st.f_blocks - st.f_bfree) * st.f_frsize
                except OSError:
                    pass
            return used
        return 0

    def disk_used(self) -> int:
        """Bytes allocated in the writable folders (each entry at least one block)."""
        return sum(_du(folder) for folder in self.folders)


_RUNNING: dict[int, Confinement] = {}  # launched kernel pid -> its confinement (kernel manager and watchdog)


def register(pid: int, confinement: Confinement) -> None:
    _RUNNING[pid] = confinement


def confinement(pid: int | None) -> Confinement | None:
    return _RUNNING.get(pid) if pid is not None else None


def forget(pid: int | None) -> None:
    _RUNNING.pop(pid, None)


@lru_cache(maxsize=1)
def binary() -> str | None:
    """The sandbox program: ``bwrap`` found on this process's PATH (the instructor's), as an absolute path.

    Resolved once: the probe and every kernel's launcher use this path, never a look-up on the kernel's own
    PATH (a ``bwrap`` outside the standard folders is not on it)."""
    found = shutil.which("bwrap")
    return str(Path(found).absolute()) if found else None


@lru_cache(maxsize=1)
def available() -> bool:
    """True if bubblewrap is installed and this module's sandbox starts Python here.

    ``COURSE_NO_SANDBOX=1`` says no (CI grades the corpus once this way, as on a machine without bubblewrap).
    """
    if os.environ.get("COURSE_NO_SANDBOX", "") not in ("", "0") or binary() is None:
        return False
    probe = command(isolation([], []), Quota()) + [sys.executable, "-I", "-c", "import autograder"]
    try:
        return subprocess.run(probe, capture_output=True, timeout=60).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def answers_folder() -> list[Path]:
    """Where the instructor's ``course_answers`` package is installed (none in a learner's install)."""
    spec = importlib.util.find_spec("course_answers")
    return [Path(p).resolve() for p in (spec.submodule_search_locations or [])] if spec else []


def isolation(private: list[Path], writable: list[Path]) -> Isolation:
    """Python and the package visible read-only, minus the answers and any ``private`` folder inside them."""
    expose = _existing({Path(sys.prefix), Path(sys.base_prefix), Path(sys.exec_prefix),
                        Path(sys.base_exec_prefix), Path(sys.executable).resolve().parent.parent, PACKAGE})
    inside = [p for p in _existing(private) if any(p == e or e in p.parents for e in expose)]
    mask = _existing([*answers_folder(), *inside])
    return Isolation(expose=expose, mask=mask, writable=tuple(Path(p).resolve() for p in writable))


def command(iso: Isolation, quota: Quota = Quota(), bwrap: str | None = None) -> list[str]:
    """The bwrap argument list to put before the kernel's own command (``bwrap``: the program, default
    ``binary()``)."""
    args = [bwrap or binary() or "bwrap", "--unshare-user", "--unshare-ipc", "--unshare-pid", "--unshare-net",
            "--unshare-uts", "--unshare-cgroup-try", "--hostname", "grading", "--uid", "1000", "--gid", "1000", "--cap-drop", "ALL",
            "--die-with-parent", "--new-session", "--unsetenv", "JPY_PARENT_PID"]
    for path in SYSTEM:
        if os.path.islink(path):
            args += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            args += ["--ro-bind", path, path]
    for name in SYSTEM_ETC:
        if os.path.exists(f"/etc/{name}"):
            args += ["--ro-bind", f"/etc/{name}", f"/etc/{name}"]
    for own in sorted(OWN_ETC.iterdir()):
        if own.name != "README.md":
            args += ["--ro-bind", str(own), f"/etc/{own.name}"]
    args += ["--proc", "/proc", "--dev", "/dev", "--size", str(quota.tmpfs_bytes), "--tmpfs", "/tmp",
             "--size", str(quota.tmpfs_bytes), "--tmpfs", "/dev/shm"]
    for path in SYSTEM_SYS:
        if os.path.isdir(path):
            args += ["--ro-bind", path, path]
    devices = [d for pattern in DEVICES for d in sorted(glob.glob(pattern))]
    for device in devices:
        args += ["--dev-bind", device, device]
    if devices:
        for path in sorted({p for pattern in GPU_SYS for p in glob.glob(pattern)}):
            args += ["--ro-bind", path, path]
    for path in iso.expose:
        args += ["--ro-bind", str(path), str(path)]
    for path in iso.mask:
        args += ["--tmpfs", str(path), "--remount-ro", str(path)]
    for path in sorted(iso.writable, key=lambda p: len(p.parts)):
        args += ["--bind", str(path), str(path)]
    return args + ["--remount-ro", "/"]


def prefix(writable: list[Path], memory_bytes: int, private: list[Path] | None = None,
           isolate: bool = True, bwrap: str | None = None) -> list[str]:
    """What goes before the kernel command: the launcher that sets the limits, then (``isolate``) the sandbox.

    ``writable``: the folders the kernel may write (summed by the watchdog); ``private``: folders it must not see;
    ``bwrap``: the sandbox program (default ``binary()``).
    """
    quota = Quota(memory_bytes=memory_bytes)
    if not isolate and sys.platform == "win32":  # no resource limits there: the watchdog only
        return []
    groups = cgroup_folders(f"aihw-{uuid.uuid4().hex[:12]}") if cgroups_usable() else {}
    hard = quota.hard_memory_bytes
    settings = [("memory.limit_in_bytes", hard), ("memory.memsw.limit_in_bytes", hard),
                ("pids.max", quota.processes)]
    outer = {"cgroups": [[folder, [s for s in settings if s[0].startswith(controller)]]
                         for controller, folder in groups.items()],
             "rlimits": {"FSIZE": quota.file_bytes, "NOFILE": quota.open_files},
             "fallback": {"DATA": 2 * quota.memory_bytes},
             "watch": {"quota": quota.__dict__, "cgroups": groups,
                       "folders": [str(Path(p).resolve()) for p in writable if Path(p).is_dir()],
                       "tmpfs": ["/tmp", "/dev/shm"] if isolate else []}}
    if not groups:
        outer["rlimits"].update(outer.pop("fallback"))
    launch = [sys.executable, "-I", "-S", "-c", LAUNCHER, MARKER]
    cmd = launch + [json.dumps(outer)]
    if isolate:
        # RLIMIT_NPROC is set inside the sandbox's user namespace, where it counts only the sandbox's tasks
        # (set outside, it would count every process of the grading account).
        cmd += command(isolation(private or [], writable), quota, bwrap)
        cmd += launch + [json.dumps({"rlimits": {"NPROC": quota.processes}})]
    return cmd


def describe(cmd: list[str]) -> str:
    """A launched kernel's command in one line: each program it went through (the launcher's settings and the
    sandbox's options left out), then the kernel's own command."""
    steps, rest = [], list(cmd)
    while MARKER in rest:
        steps.append(f"{rest[0]} (limits)")
        rest = rest[rest.index(MARKER) + 2:]
        if rest and Path(rest[0]).name == "bwrap":
            end = next((i for i in range(len(rest) - 1) if rest[i:i + 2] == ["--remount-ro", "/"]), len(rest) - 2)
            steps.append(f"{rest[0]} (sandbox)")
            rest = rest[end + 2:]
    return " → ".join(steps + [" ".join(rest)])


def mechanism(isolate: bool) -> str:
    """One line for the grading notes: how the kernel was isolated and limited on this machine."""
    where = "bubblewrap (deny by default)" if isolate else "no isolation"
    if cgroups_usable():
        limits = "cgroup v1 memory+pids"
    elif isolate and os.geteuid() != 0:
        limits = "RLIMIT_DATA+RLIMIT_NPROC (per sandbox)"
    else:  # RLIMIT_NPROC does not hold root's processes, and outside a user namespace it is per account
        limits = "RLIMIT_DATA (processes: watchdog only)"
    return f"{where}; limits: {limits}, RLIMIT_FSIZE+RLIMIT_NOFILE, watchdog"


@lru_cache(maxsize=1)
def cgroups_usable() -> bool:
    """Root with writable cgroup v1 memory and pids hierarchies: a group can be made, limited and removed."""
    if os.environ.get("COURSE_NO_CGROUPS", "") not in ("", "0") or not hasattr(os, "geteuid") or os.geteuid() != 0:
        return False
    folders = cgroup_folders(f"aihw-probe-{os.getpid()}")
    if set(folders) != {"memory", "pids"}:
        return False
    made = []
    try:
        for controller, folder in folders.items():
            os.mkdir(folder)
            made.append(folder)
            name = "memory.limit_in_bytes" if controller == "memory" else "pids.max"
            Path(folder, name).write_text("1073741824" if controller == "memory" else "64")
        return True
    except OSError:
        return False
    finally:
        for folder in made:
            _remove_group(Path(folder))


def cgroup_folders(name: str) -> dict[str, str]:
    """``name`` as a child of this process's cgroup v1 ``memory`` and ``pids`` groups (paths; not created)."""
    mounts = {}
    try:
        for line in Path("/proc/self/mounts").read_text().splitlines():
            parts = line.split()
            if len(parts) >= 4 and parts[2] == "cgroup":
                for option in parts[3].split(","):
                    if option in ("memory", "pids"):
                        mounts[option] = parts[1]
        own = {}
        for line in Path("/proc/self/cgroup").read_text().splitlines():
            _, controllers, path = line.split(":", 2)
            for controller in controllers.split(","):
                own[controller] = path
    except OSError:
        return {}
    folders = {}
    for controller, mount in mounts.items():
        parent = Path(mount) / own.get(controller, "/").lstrip("/")
        if parent.is_dir():
            folders[controller] = str(parent / name)
    return folders


def kill_tree(pids: list[int]) -> None:
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


def _remove_group(folder: Path) -> None:
    for _ in range(50):
        if not folder.exists():
            return
        try:
            kill_tree([int(p) for p in (folder / "cgroup.procs").read_text().split()])
            folder.rmdir()
            return
        except OSError:
            time.sleep(0.1)


def _field(path: Path, key: str) -> int:
    try:
        for line in path.read_text().splitlines():
            name, _, value = line.partition(" ")
            if name == key:
                return int(value)
    except (OSError, ValueError):
        pass
    return 0


def _mount_ns(pid: int) -> str | None:
    try:
        return os.readlink(f"/proc/{pid}/ns/mnt")
    except OSError:
        return None


def _du(folder: str, limit: int = 200_000) -> int:
    """Allocated bytes under ``folder``, at least 4 KiB an entry; stops counting after ``limit`` entries."""
    used, stack, seen = 0, [folder], 0
    while stack and seen < limit:
        try:
            with os.scandir(stack.pop()) as entries:
                for entry in entries:
                    seen += 1
                    try:
                        st = entry.stat(follow_symlinks=False)
                    except OSError:
                        continue
                    used += max(st.st_blocks * 512, 4096)
                    if entry.is_dir(follow_symlinks=False):
                        stack.append(entry.path)
        except OSError:
            pass
    return used if seen < limit else max(used, 2**62)


def _existing(paths) -> tuple[Path, ...]:
    """Resolved existing paths, parents before children (bwrap mounts in order)."""
    found = {Path(p).resolve() for p in paths if Path(p).exists()}
    return tuple(sorted(found, key=lambda p: (len(p.parts), str(p))))
