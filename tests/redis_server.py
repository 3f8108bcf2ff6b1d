"""A real, throwaway redis-server for tests and benchmarks.

The Redis store is tested against a real server (no fakes): this starts one on
127.0.0.1 on a free port, with AOF on (so a restart in the same directory must
bring the data back, as in production), in a temp dir, optionally with
``--requirepass`` and optionally TLS only (``rediss://``, self-signed
certificate made with the openssl CLI). It is stopped by its own pid, never by name, so it cannot
touch anyone else's Redis.

    with RedisServer(password="s3cret") as server:
        url = server.url()            # redis://:s3cret@127.0.0.1:<port>/0
        server.kill()                 # SIGKILL, like a crashed node
        server.start()                # same port, same dir, same AOF
"""

from __future__ import annotations

import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path
from types import TracebackType
from urllib.parse import quote

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry
from service_helpers import free_port

REDIS_SERVER = shutil.which("redis-server") or "/usr/bin/redis-server"


class RedisServer:
    """One redis-server process; restartable on the same port and directory.

    ``appendfsync`` defaults to ``always`` (what the league store should run
    with): under Redis's default ``everysec`` a busy disk can postpone the AOF
    write past the reply, and a SIGKILL then loses acknowledged commits --
    seen in this suite as a rare flake while other jobs were writing to disk.
    """

    def __init__(
        self,
        directory: Path | str | None = None,
        *,
        password: str | None = None,
        port: int | None = None,
        appendfsync: str = "always",
        tls: bool = False,
        binary: str = REDIS_SERVER,
    ) -> None:
        self._own_dir = directory is None
        self.dir = Path(tempfile.mkdtemp(prefix="redis-")) if directory is None else Path(directory)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.password = password
        self.port = port
        self.appendfsync = appendfsync
        self.binary = binary
        self.tls = tls
        self.cert = self.dir / "tls.crt"
        if tls and not self.cert.exists():
            self._make_cert()
        self._proc: subprocess.Popen[bytes] | None = None

    @property
    def pid(self) -> int | None:
        return None if self._proc is None else self._proc.pid

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def url(self, password: str | None = "", db: int = 0) -> str:
        """URL of this server; ``password=""`` means the server's own password,
        ``None`` none at all (to test auth failures). With TLS: ``rediss://``,
        trusting this server's self-signed certificate."""
        pw = self.password if password == "" else password
        auth = f":{quote(pw, safe='')}@" if pw else ""
        if self.tls:
            return f"rediss://{auth}127.0.0.1:{self.port}/{db}?ssl_ca_certs={quote(str(self.cert))}"
        return f"redis://{auth}127.0.0.1:{self.port}/{db}"

    def _make_cert(self) -> None:
        """Self-signed certificate for 127.0.0.1 (so hostname checks pass)."""
        subprocess.run(
            [
                "openssl", "req", "-x509", "-nodes", "-days", "1",
                "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                "-keyout", str(self.dir / "tls.key"), "-out", str(self.cert),
                "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
            ],
            check=True,
            capture_output=True,
        )  # fmt: skip

    def _command(self) -> list[str]:
        if self.tls:
            ports = [
                "--port", "0",
                "--tls-port", str(self.port),
                "--tls-cert-file", str(self.cert),
                "--tls-key-file", str(self.dir / "tls.key"),
                "--tls-ca-cert-file", str(self.cert),
                "--tls-auth-clients", "no",
            ]  # fmt: skip
        else:
            ports = ["--port", str(self.port)]
        cmd = [
            self.binary,
            *ports,
            "--bind", "127.0.0.1",
            "--dir", str(self.dir),
            "--appendonly", "yes",
            "--appendfsync", self.appendfsync,
            "--save", "",  # AOF only: a restart proves the AOF, not an RDB dump
            "--daemonize", "no",
            "--logfile", "redis.log",
        ]  # fmt: skip
        if self.password:
            cmd += ["--requirepass", self.password]
        return cmd

    def start(self, timeout: float = 10.0) -> RedisServer:
        """Start (or restart) the server and wait until it answers PING (the
        AOF is loaded by then). A free port is picked on first start and kept,
        so clients holding the URL reconnect after a restart."""
        if self.running:
            raise RuntimeError(f"redis-server already running (pid {self.pid})")
        fixed_port = self.port is not None
        for _ in range(1 if fixed_port else 3):
            if not fixed_port:
                self.port = free_port()
            # Early fatal errors (bad option, port taken) go to stderr, the rest to
            # the log file; both end up in the directory for log_tail().
            with open(self.dir / "redis.stderr", "ab") as err:
                self._proc = subprocess.Popen(
                    self._command(), cwd=self.dir, stdout=subprocess.DEVNULL, stderr=err
                )
            if self._wait_ready(timeout):
                return self
            self.kill()  # port race or startup failure: try again on a new port
        raise RuntimeError(f"redis-server did not start on port {self.port}: {self.log_tail()}")

    def _wait_ready(self, timeout: float) -> bool:
        client = redis.Redis(
            host="127.0.0.1",
            port=self.port,
            password=self.password,
            socket_connect_timeout=0.2,
            socket_timeout=0.5,
            retry=Retry(NoBackoff(), 0),  # we poll ourselves; the default backs off seconds
            **({"ssl": True, "ssl_ca_certs": str(self.cert)} if self.tls else {}),
        )
        deadline = time.monotonic() + timeout
        try:
            while time.monotonic() < deadline:
                if self._proc is None or self._proc.poll() is not None:
                    return False
                try:
                    if client.ping():
                        return True
                except redis.exceptions.ConnectionError:  # includes BusyLoadingError
                    time.sleep(0.02)
            return False
        finally:
            client.close()

    def log_tail(self, lines: int = 20) -> str:
        text = ""
        for name in ("redis.stderr", "redis.log"):
            log = self.dir / name
            text += log.read_text(errors="replace") if log.exists() else ""
        return "\n".join(text.splitlines()[-lines:])

    def stop(self, timeout: float = 10.0) -> None:
        """Graceful shutdown (SIGTERM: Redis flushes and fsyncs the AOF)."""
        self._signal(signal.SIGTERM, timeout)

    def kill(self) -> None:
        """SIGKILL, like a crashed node or an OOM kill."""
        self._signal(signal.SIGKILL, 10.0)

    def _signal(self, sig: signal.Signals, timeout: float) -> None:
        proc, self._proc = self._proc, None
        if proc is None:
            return
        if proc.poll() is None:
            proc.send_signal(sig)  # to our own child's pid, nothing else
            try:
                proc.wait(timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()

    def close(self) -> None:
        """Stop the server and remove its directory if we created it."""
        self.stop()
        if self._own_dir:
            shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self) -> RedisServer:
        if not self.running:
            self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
