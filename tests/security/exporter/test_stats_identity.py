#!/usr/bin/env python3
"""Whose a stats segment is comes from the kernel, never from the file
(issue 30), replayed with services of users of the test's own (numeric
uids with no other files: no other test's segments are touched) and the
attacker of billingtest.attacker():

1. A forged segment under /dev/shm: the service (uid VICTIM) keeps its
   segment in /dev/shm/billing-stats-VICTIM, readable by group nogroup; the
   attacker makes /dev/shm/billing-stats-1-... (it sorts first) holding
   VICTIM_PID.stats with 37,500 approvals, its header naming the service's
   PID and start time (both public).  billing-exporter --pid PID as nobody
   (who cannot read the service's memory maps) serves the service's own 8
   payments, target_up 1.  Before: the forged 37,500, target_up 1.
2. A squatted directory: the attacker makes /dev/shm/billing-stats-SQUATTED
   before that user's service starts.  The service says so in one line
   naming the attacker's uid and makes no segment; --stats-dir on that
   directory is refused in one line naming its owner, exit 2.  Before: the
   service said only "must be owned by uid ...", and the exporter served
   the attacker's segment.
3. A set-id program: a set-uid copy of the stats workload, run by the
   attacker with BILLING_STATS_DIR naming a 0700 directory of the program's
   user, BILLING_STATS_GROUP the attacker's group and BILLING_STATS_THREADS
   65536.  The library ignores them, saying so in one line: the directory
   stays 0700 and its group, the segment goes to the default directory, 65
   slots.  Before: the directory became 0750 for the attacker's group, a
   17.6 GB sparse file in it.

Needs root (other users, a set-uid file)."""
import json
import os
import shutil
import stat
import struct
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sectest as st  # noqa: E402
from sectest import bt, h  # noqa: E402

bt.require_root("running services as other users")
exe = h.env_path("BX_EXPORTER")
uid, gid, as_attacker = bt.attacker()
VICTIM, SQUATTED, SETUID = 64997, 64996, 64995
NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--"]
FORGED, OWN = 37500, 8


def as_user(u, g=None, groups=None):
    return ["setpriv", "--reuid=%d" % u, "--regid=%d" % (u if g is None else g),
            "--groups=%s" % groups if groups else "--clear-groups", "--"]


def default_dir(u):
    return "/dev/shm/billing-stats-%d" % u


def start_time(pid):
    with open("/proc/%d/stat" % pid) as f:
        return int(f.read().rsplit(")", 1)[1].split()[19])


def snapshot(prefix, *args):
    """(payments, target_up values, rc, stderr lines) of one --once run."""
    r = bt.run([*prefix, exe, *args, "--once", "--interval", "1", "--format", "json"], timeout=60)
    docs = [json.loads(x) for x in r.stdout.splitlines()]
    pay = sum(d["value"] for d in docs if d.get("metric") == "billing_payments_total")
    up = [d["value"] for d in docs if d.get("metric") == "billing_exporter_target_up"]
    return pay, up, r.returncode, r.stderr.strip().splitlines()


def forged_segment(workload, tmp, pid):
    """The bytes of a segment of FORGED payments the attacker made itself,
    its header naming process pid, still running (struct bs_header: pid
    at 32, state at 36, start time at 40)."""
    d = tempfile.mkdtemp(prefix="attacker-own-", dir=tmp)
    os.chown(d, uid, gid)
    r = subprocess.run([*as_attacker, workload, "threads", "1", str(FORGED)], env=dict(os.environ,
                       BILLING_STATS_DIR=d), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=60)
    bt.check(r.returncode == 0, "the attacker's own segment of %d payments (%s)" % (FORGED, r.stdout.strip()[-200:]))
    data = bytearray(open(os.path.join(d, os.listdir(d)[0]), "rb").read())
    struct.pack_into("<IIQ", data, 32, pid, 1, start_time(pid))
    return bytes(data)


def attacker_dir(path, files):
    """A directory of the attacker's (0755) holding files {name: bytes} (0644)."""
    subprocess.run([*as_attacker, "mkdir", "-m", "0755", path], check=True)
    for name, data in files.items():
        subprocess.run([*as_attacker, "sh", "-c", 'cat > "$0" && chmod 0644 "$0"', os.path.join(path, name)],
                       input=data, check=True)


tmp = tempfile.mkdtemp(prefix="bx-stats-identity-")
os.chmod(tmp, 0o755)
made = [default_dir(u) for u in (VICTIM, SQUATTED, SETUID)]
forged_dir = "/dev/shm/billing-stats-1-forged-%d" % os.getpid()
made.append(forged_dir)
for d in made:
    shutil.rmtree(d, ignore_errors=True)  # left by an earlier run of this test
service = None
try:
    workload = st.stats_workload(tmp)
    if not workload:
        bt.finish()

    # --- 1. a forged segment in a directory that sorts first ------------------
    service = subprocess.Popen([*as_user(VICTIM, groups="65534"), workload, "hold", str(OWN)], stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, text=True,
                               env=dict(os.environ, BILLING_STATS_GROUP="nogroup"))
    line = service.stdout.readline().split()
    bt.check(len(line) == 3 and os.path.dirname(line[2]) == default_dir(VICTIM),
             "the service's segment is in %s (%r)" % (default_dir(VICTIM), line))
    pid = service.pid
    attacker_dir(forged_dir, {"%d.stats" % pid: forged_segment(workload, tmp, pid)})
    for source in ("stats", "auto"):
        pay, up, rc, err = snapshot(NOBODY, "--pid", str(pid), "--source", source)
        bt.check(rc == 0 and pay == OWN and up == [1],
                 "as nobody, --pid --source %s: the service's %d payments, target_up 1 (got %s, up %s, rc %d, %s)"
                 % (source, OWN, pay, up, rc, err[-2:]))
    # without the group, nobody cannot read the service's own segment: refused,
    # never the forgery
    pay, up, rc, err = snapshot(as_user(65534, 65533), "--pid", str(pid), "--source", "stats")
    bt.check(rc == 2 and len(err) == 1 and default_dir(VICTIM) in err[0] and forged_dir not in err[0],
             "a reader the service's segment is not for: refused in one line naming its directory (%d %r)" % (rc, err))
    bt.stop_process(service)
    service = None

    # --- 2. a squatted default directory ----------------------------------------
    squat = default_dir(SQUATTED)
    attacker_dir(squat, {"1.stats": forged_segment(workload, tmp, os.getpid())})
    r = bt.run([*as_user(SQUATTED), workload, "threads", "1", "10"])
    lines = r.stderr.strip().splitlines()
    bt.check(r.returncode == 0 and r.stdout.split()[2:] == [] and len(lines) == 1
             and "belongs to uid %d, not to uid %d" % (uid, SQUATTED) in lines[0] and "docs/stats.md" in lines[0],
             "the service of uid %d, its directory squatted: no segment, one line naming the squatter's uid %d (%r)"
             % (SQUATTED, uid, lines))
    bt.check(os.listdir(squat) == ["1.stats"], "nothing written into the squatted directory")
    pay, up, rc, err = snapshot([], "--stats-dir", squat)
    bt.check(rc == 2 and pay == 0 and len(err) == 1 and "belongs to uid %d (%s)" % (uid, bt.ATTACKER) in err[0],
             "--stats-dir on the squatted directory: refused, exit 2, its owner named (%d %r)" % (rc, err))

    # --- 3. a set-uid program -----------------------------------------------------
    program = os.path.join(tmp, "setuid-workload")
    shutil.copy(workload, program)
    os.chown(program, SETUID, SETUID)
    os.chmod(program, 0o4755)
    private = os.path.join(tmp, "private-of-%d" % SETUID)
    os.mkdir(private, 0o700)
    os.chown(private, SETUID, SETUID)
    r = bt.run([*as_attacker, program, "threads", "1", "10"],
               env=dict(os.environ, BILLING_STATS_DIR=private, BILLING_STATS_GROUP=str(gid),
                        BILLING_STATS_THREADS="65536"))
    lines = r.stderr.strip().splitlines()
    seg = r.stdout.split()[2] if len(r.stdout.split()) > 2 else ""
    s = os.stat(private)
    bt.check(r.returncode == 0 and len(lines) == 1 and "a set-id program" in lines[0] and "ignored" in lines[0],
             "the set-uid program says in one line that it ignores BILLING_STATS_* (%r)" % lines)
    bt.check(stat.S_IMODE(s.st_mode) == 0o700 and s.st_gid == SETUID and os.listdir(private) == [],
             "the directory the caller named: still 0700, group %d, empty (mode %o, group %d, %s)"
             % (SETUID, stat.S_IMODE(s.st_mode), s.st_gid, os.listdir(private)))
    hdr = open(seg, "rb").read(64) if seg else b""
    slots = struct.unpack_from("<I", hdr, 52)[0] if len(hdr) == 64 else None
    bt.check(os.path.dirname(seg) == default_dir(SETUID) and slots == 65 and os.stat(seg).st_uid == SETUID,
             "its segment in %s with the default 64 slots + 1 (%s, %s slots)" % (default_dir(SETUID), seg, slots))
finally:
    if service:
        bt.kill_all(service)
    for d in made:
        shutil.rmtree(d, ignore_errors=True)
    shutil.rmtree(tmp, ignore_errors=True)
bt.finish()
