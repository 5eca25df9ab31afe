"""Real ``dask scheduler`` / ``dask worker`` processes on 127.0.0.1, for tests and benchmarks.

The session fixture ``real_cluster`` (in ``tests/conftest.py``) uses :class:`ProcCluster`;
fault tests start their own so they can kill a worker or the scheduler without disturbing
other tests. Everything listens on 127.0.0.1 on free ports, logs go to files in a
temporary directory (printed when a process fails to start), and :meth:`ProcCluster.stop`
ends exactly the processes it started (by their process group), never anything by name.

Workers run without a nanny by default, so the process we start *is* the worker: killing
it with SIGKILL loses the worker and its memory for good (a nanny would restart it).
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

#: seconds to wait for a process to listen / for workers to register
START_TIMEOUT = 60.0


def free_port() -> int:
    """A TCP port on 127.0.0.1 that is free now (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass(frozen=True)
class TLSFiles:
    """PEM files of a test certificate authority and one certificate signed by it."""

    ca_file: str
    cert: str
    key: str

    def cli_args(self) -> list[str]:
        return ["--tls-ca-file", self.ca_file, "--tls-cert", self.cert, "--tls-key", self.key]


def make_tls_files(directory: str | os.PathLike[str]) -> TLSFiles:
    """Generate a throw-away CA and a certificate for 127.0.0.1/localhost (via ``trustme``).

    One certificate serves scheduler, workers and client: Dask's TLS checks that peers
    present a certificate signed by the CA, which is what a secured deployment needs.
    """
    import trustme

    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    ca = trustme.CA()
    cert = ca.issue_cert("127.0.0.1", "localhost")
    ca_file, cert_file, key_file = d / "ca.pem", d / "cert.pem", d / "key.pem"
    ca.cert_pem.write_to_path(str(ca_file))
    cert.cert_chain_pems[0].write_to_path(str(cert_file))
    for extra in cert.cert_chain_pems[1:]:
        with open(cert_file, "ab") as f:
            f.write(extra.bytes())
    cert.private_key_pem.write_to_path(str(key_file))
    return TLSFiles(str(ca_file), str(cert_file), str(key_file))


@dataclass
class Proc:
    """One started process, its log file and what it is."""

    name: str
    popen: subprocess.Popen
    log: Path

    @property
    def pid(self) -> int:
        return self.popen.pid

    def alive(self) -> bool:
        return self.popen.poll() is None

    def log_text(self, tail: int = 4000) -> str:
        try:
            return self.log.read_text(errors="replace")[-tail:]
        except OSError:
            return ""

    def kill(self, sig: int = signal.SIGKILL) -> None:
        """Send ``sig`` to this process's group (the process and any children it forked)."""
        if self.alive():
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.popen.pid, sig)

    def stop(self, timeout: float = 10.0) -> None:
        """SIGTERM, then SIGKILL if it has not exited within ``timeout`` seconds."""
        if self.alive():
            self.kill(signal.SIGTERM)
            try:
                self.popen.wait(timeout)
            except subprocess.TimeoutExpired:
                self.kill(signal.SIGKILL)
                self.popen.wait(timeout)
        with contextlib.suppress(ChildProcessError, OSError):
            self.popen.wait(0.1)


def _spawn(name: str, args: Sequence[str], logdir: Path, env: Mapping[str, str] | None) -> Proc:
    log = logdir / f"{name}.log"
    full_env = {**os.environ, **(env or {})}
    full_env.setdefault("PYTHONUNBUFFERED", "1")
    with open(log, "wb") as f:
        popen = subprocess.Popen(
            [sys.executable, "-m", *args], stdout=f, stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL, env=full_env, start_new_session=True,
            cwd=logdir,  # not the source tree: workers import erblock as installed
        )
    return Proc(name, popen, log)


def _wait_listening(proc: Proc, port: int, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not proc.alive():
            raise RuntimeError(f"{proc.name} exited with {proc.popen.returncode}:\n{proc.log_text()}")
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.settimeout(0.5)
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.1)
    raise TimeoutError(f"{proc.name} did not listen on port {port} in {timeout}s:\n{proc.log_text()}")


@dataclass
class ProcCluster:
    """A scheduler and ``n_workers`` worker processes on 127.0.0.1.

    ``worker_env`` entries are added to the workers' environment (e.g. a ``PYTHONPATH``
    that shadows erblock with another version); ``tls`` secures every connection.
    """

    n_workers: int = 2
    nthreads: int = 1
    memory_limit: str = "0"
    tls: TLSFiles | None = None
    worker_env: Mapping[str, str] | None = None
    logdir: Path | None = None
    scheduler: Proc | None = None
    workers: list[Proc] = field(default_factory=list)
    address: str = ""
    _tmp: tempfile.TemporaryDirectory | None = None

    @property
    def protocol(self) -> str:
        return "tls" if self.tls else "tcp"

    def security(self):
        """``distributed.security.Security`` for a client of this cluster (None without TLS)."""
        if self.tls is None:
            return None
        from erblock.engine.cluster import make_security

        return make_security(self.tls.ca_file, self.tls.cert, self.tls.key)

    def start(self) -> ProcCluster:
        if self.logdir is None:
            self._tmp = tempfile.TemporaryDirectory(prefix="erblock-procs-")
            self.logdir = Path(self._tmp.name)
        port = free_port()
        args = ["distributed.cli.dask_scheduler", "--host", "127.0.0.1", "--port", str(port),
                "--no-dashboard", "--protocol", self.protocol]
        if self.tls:
            args += self.tls.cli_args()
        self.scheduler = _spawn("scheduler", args, self.logdir, None)
        self.address = f"{self.protocol}://127.0.0.1:{port}"
        try:
            _wait_listening(self.scheduler, port, START_TIMEOUT)
            for _ in range(self.n_workers):
                self.add_worker()
            self.wait_for_workers(self.n_workers)
        except BaseException:
            self.stop()
            raise
        return self

    def add_worker(self, env: Mapping[str, str] | None = None) -> Proc:
        """Start one more worker process (without a nanny) attached to the scheduler."""
        i = len(self.workers)
        args = ["distributed.cli.dask_worker", self.address, "--nthreads", str(self.nthreads),
                "--no-nanny", "--no-dashboard", "--host", "127.0.0.1", "--name", f"w{i}",
                "--memory-limit", self.memory_limit, "--death-timeout", "60"]
        if self.tls:
            args += self.tls.cli_args()
        assert self.logdir is not None
        proc = _spawn(f"worker{i}", args, self.logdir, {**(self.worker_env or {}), **(env or {})})
        self.workers.append(proc)
        return proc

    def wait_for_workers(self, n: int, timeout: float = START_TIMEOUT) -> None:
        """Block until the scheduler knows ``n`` workers (fails fast if a worker died)."""
        from distributed import Client

        with Client(self.address, security=self.security(), set_as_default=False,
                    timeout="30s") as c:
            deadline = time.monotonic() + timeout
            while len(c.scheduler_info(n_workers=-1)["workers"]) < n:
                dead = [w for w in self.workers if not w.alive()]
                if dead:
                    raise RuntimeError(f"{dead[0].name} exited:\n{dead[0].log_text()}")
                if time.monotonic() > deadline:
                    logs = "\n".join(w.log_text(1500) for w in self.workers)
                    raise TimeoutError(f"{n} workers did not register in {timeout}s:\n{logs}")
                time.sleep(0.1)

    def worker_pids(self) -> list[int]:
        return [w.pid for w in self.workers if w.alive()]

    def stop(self) -> None:
        """Stop the workers, then the scheduler; remove the log directory."""
        from erblock.engine.cluster import close_remote

        if self.address:
            close_remote(self.address)
        for w in self.workers:
            w.stop()
        if self.scheduler is not None:
            self.scheduler.stop()
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None

    def __enter__(self) -> ProcCluster:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


@contextlib.contextmanager
def proc_cluster(**kwargs) -> Iterator[ProcCluster]:
    """``with proc_cluster(n_workers=2) as pc: Client(pc.address)``."""
    pc = ProcCluster(**kwargs)
    pc.start()
    try:
        yield pc
    finally:
        pc.stop()
