"""A real single-node SLURM cluster on loopback, for the tests (Debian's slurmctld,
slurmd, slurm-client and munge).

Everything lives in one temporary directory: a munge key and socket, a generated
``slurm.conf`` (free ports, this host as the only node, one partition ``debug``
with a 10-minute limit, a second partition ``short`` with a 1-minute limit), the
controller's state, the node's spool, the daemons' logs and pid files.  The
daemons run as the current user (root in CI); ``SLURM_CONF`` points every client
(sbatch, squeue, scancel, and dask-jobqueue or submitit through them) at it.
"""

from __future__ import annotations

from limits import limit
import os
import shutil
import socket
import subprocess
import time
from pathlib import Path

DAEMONS = ("slurmctld", "slurmd", "munged")
INSTALL = ("apt-get install slurmctld slurmd slurm-client munge (Debian/Ubuntu, as root); "
           "the daemons run as the current user, so the tests need root")


def missing() -> str | None:
    """Why a cluster cannot start here, or None."""
    absent = [d for d in (*DAEMONS, "sbatch", "squeue", "scancel") if shutil.which(d) is None]
    if absent:
        return f"no {', '.join(absent)}: {INSTALL}"
    if os.geteuid() != 0:
        return f"not root: {INSTALL}"
    return None


def _free_ports(n: int) -> list:
    socks, ports = [], []
    for _ in range(n):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        socks.append(s)
        ports.append(s.getsockname()[1])
    for s in socks:
        s.close()
    return ports


class SlurmCluster:
    def __init__(self, root: Path):
        self.root = Path(root)
        self.host = socket.gethostname().split(".")[0]
        self.conf = self.root / "slurm.conf"
        self.env = {**os.environ, "SLURM_CONF": str(self.conf)}

    # ------------------------------------------------------------------ start / stop
    def start(self, timeout: float = 60.0) -> "SlurmCluster":
        r = self.root
        for d in ("state", "spool", "munge", "logs"):
            (r / d).mkdir(parents=True, exist_ok=True)
        os.chmod(r / "munge", 0o700)
        key = r / "munge" / "munge.key"
        key.write_bytes(os.urandom(1024))
        os.chmod(key, 0o600)
        sock = r / "munge" / "sock"
        subprocess.run(["munged", "--force", f"--socket={sock}", f"--key-file={key}",
                        f"--log-file={r / 'munge' / 'log'}", f"--pid-file={r / 'munge' / 'pid'}",
                        f"--seed-file={r / 'munge' / 'seed'}"], check=True, capture_output=True)
        ctl, node = _free_ports(2)
        cpus = os.cpu_count() or 1
        self.conf.write_text(f"""\
ClusterName=antiamptest
SlurmctldHost={self.host}(127.0.0.1)
SlurmctldPort={ctl}
SlurmdPort={node}
SlurmUser={_user()}
SlurmdUser={_user()}
AuthType=auth/munge
AuthInfo=socket={sock}
CredType=cred/munge
StateSaveLocation={r / 'state'}
SlurmdSpoolDir={r / 'spool'}
SlurmctldPidFile={r / 'slurmctld.pid'}
SlurmdPidFile={r / 'slurmd.pid'}
SlurmctldLogFile={r / 'logs' / 'slurmctld.log'}
SlurmdLogFile={r / 'logs' / 'slurmd.log'}
ProctrackType=proctrack/pgid
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
MpiDefault=none
ReturnToService=2
SchedulerType=sched/backfill
SchedulerParameters=sched_interval=1
InactiveLimit=0
KillWait=2
MinJobAge=60
SlurmctldTimeout=30
SlurmdTimeout=30
NodeName={self.host} NodeAddr=127.0.0.1 CPUs={cpus} RealMemory=2048 State=UNKNOWN
PartitionName=debug Nodes={self.host} Default=YES MaxTime=10 State=UP OverSubscribe=FORCE:8
PartitionName=short Nodes={self.host} MaxTime=1 State=UP OverSubscribe=FORCE:8
""")
        subprocess.run(["slurmctld", "-c"], check=True, env=self.env, capture_output=True)
        subprocess.run(["slurmd", "-N", self.host], check=True, env=self.env,
                       capture_output=True)
        deadline = time.time() + timeout
        while time.time() < deadline:
            r2 = self.run("sinfo", "-h", "-o", "%t", check=False)
            if r2.returncode == 0 and r2.stdout.strip() in ("idle", "mix", "alloc"):
                return self
            time.sleep(0.5)
        self.stop()
        raise RuntimeError(f"the test SLURM cluster did not come up in {timeout} s: "
                           + self.log_tail())

    def stop(self) -> None:
        self.run("scancel", "--user", _user(), check=False)
        for pid in (self.root / "slurmd.pid", self.root / "slurmctld.pid",
                    self.root / "munge" / "pid"):
            try:
                os.kill(int(pid.read_text().strip()), 15)
            except (OSError, ValueError):
                pass

    # ------------------------------------------------------------------ clients
    def run(self, *args, check=True) -> subprocess.CompletedProcess:
        return subprocess.run(list(args), env=self.env, capture_output=True, text=True,
                              check=check, timeout=limit(60))

    def jobs(self) -> list:
        """(job id, name, state) of every job the controller still lists."""
        r = self.run("squeue", "-h", "-t", "all", "-o", "%i|%j|%T", check=False)
        return [tuple(ln.split("|")) for ln in r.stdout.split()]

    def log_tail(self, n: int = 20) -> str:
        out = []
        for f in ("slurmctld.log", "slurmd.log"):
            p = self.root / "logs" / f
            if p.exists():
                out.append(f"--- {f}\n" + "\n".join(p.read_text().splitlines()[-n:]))
        return "\n".join(out)


def _user() -> str:
    import pwd

    return pwd.getpwuid(os.geteuid()).pw_name
