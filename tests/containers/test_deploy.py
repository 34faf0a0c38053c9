"""The deployment recipes of docs/deploy.md, as far as one machine can try
them.

- deploy/kubernetes/*.yaml parse (PyYAML) and say what the docs promise:
  the DaemonSet has hostPID and no privileged mode, the sidecar pod shares
  its process namespace, each exporter container names --binary, listens
  on the port its readiness probe asks /healthz of, and adds capabilities
  instead of running privileged;
- deploy/systemd/billing-exporter.service passes `systemd-analyze verify`
  (its paths pointed at this build);
- the exporter run with exactly the DaemonSet's capabilities (uid 0, the
  bounding set cut to its list) counts a service in its own namespaces
  through --binary /srv/app-PID/renewald exactly; run as the systemd unit runs
  it (not root, its AmbientCapabilities) it counts a host service exactly.

Needs root, unshare and the exporter (CI has them); PyYAML from
python3-yaml (tests/install-deps.sh)."""
import ctypes
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "exporter"))
import containertest as ct  # noqa: E402
from containertest import bt, check, finish  # noqa: E402

try:
    import yaml
except ImportError:
    bt.skip("PyYAML is not installed (apt-get install python3-yaml; tests/install-deps.sh does)")

DEPLOY = os.path.join(bt.SOURCE_ROOT, "deploy")
ROUNDS = 3


def containers_of(doc):
    spec = doc["spec"]["template"]["spec"] if doc["kind"] == "DaemonSet" else doc["spec"]
    return spec, spec["containers"]


def check_exporter_container(where, c):
    args = c.get("args", [])
    listen = args[args.index("--listen") + 1] if "--listen" in args else ""
    port = int(listen.rsplit(":", 1)[1]) if ":" in listen else None
    ports = {p.get("name"): p["containerPort"] for p in c.get("ports", [])}
    probe = c.get("readinessProbe", {}).get("httpGet", {})
    probe_port = ports.get(probe.get("port"), probe.get("port"))
    sc = c.get("securityContext", {})
    caps = set(sc.get("capabilities", {}).get("add", []))
    check("--binary" in args and args[args.index("--binary") + 1].startswith("/"),
          "%s: the exporter names --binary with an absolute path (%s)" % (where, args))
    check(port is not None and probe.get("path") == "/healthz" and probe_port == port,
          "%s: the readiness probe asks /healthz on the port it listens on (%s, %s)" % (where, listen, probe))
    check(sc.get("privileged") is False and {"BPF", "PERFMON", "SYS_ADMIN"} <= caps
          and sc.get("capabilities", {}).get("drop") == ["ALL"],
          "%s: not privileged; all capabilities dropped, BPF, PERFMON, SYS_ADMIN added (%s)" % (where, sorted(caps)))
    return caps, args


# --- the Kubernetes manifests ---------------------------------------------------------------
manifests = sorted(os.path.join(DEPLOY, "kubernetes", f) for f in os.listdir(os.path.join(DEPLOY, "kubernetes"))
                   if f.endswith(".yaml"))
check(len(manifests) >= 2, "deploy/kubernetes holds the DaemonSet and the sidecar (%s)" % manifests)
daemonset_caps = None
kinds = set()
for path in manifests:
    try:
        docs = [d for d in yaml.safe_load_all(open(path)) if d]
    except yaml.YAMLError as e:
        check(False, "%s parses as YAML (%s)" % (path, str(e).splitlines()[0]))
        continue
    for doc in docs:
        where = "%s: %s %s" % (os.path.basename(path), doc.get("kind"), doc.get("metadata", {}).get("name"))
        check(doc.get("apiVersion") and doc.get("kind") and doc.get("metadata", {}).get("name"),
              "%s: apiVersion, kind and name" % where)
        kinds.add(doc["kind"])
        spec, containers = containers_of(doc)
        exporters = [c for c in containers if "billing-exporter" in c.get("image", "")]
        check(len(exporters) == 1, "%s: one billing-exporter container" % where)
        if doc["kind"] == "DaemonSet":
            check(spec.get("hostPID") is True, "%s: hostPID (the node's processes)" % where)
            sel = doc["spec"]["selector"]["matchLabels"]
            check(all(doc["spec"]["template"]["metadata"]["labels"].get(k) == v for k, v in sel.items()),
                  "%s: the selector matches the pod template's labels" % where)
            daemonset_caps, daemonset_args = check_exporter_container(where, exporters[0])
        else:
            check(spec.get("shareProcessNamespace") is True, "%s: the pod shares its process namespace" % where)
            check_exporter_container(where, exporters[0])
check({"DaemonSet", "Pod"} <= kinds, "a DaemonSet and a sidecar Pod (%s)" % sorted(kinds))

# --- the systemd unit ---------------------------------------------------------------------------
unit_path = os.path.join(DEPLOY, "systemd", "billing-exporter.service")
unit = open(unit_path).read()
exec_start = re.search(r"^ExecStart=(.*)$", unit, flags=re.M).group(1).split()
ambient = re.search(r"^AmbientCapabilities=(.*)$", unit, flags=re.M).group(1).split()
check(exec_start[0].endswith("/billing-exporter") and "--binary" in exec_start and "DynamicUser=yes" in unit,
      "the unit runs billing-exporter --binary as a dynamic user (%s)" % exec_start)
tmp = tempfile.mkdtemp(prefix="bp-deploy-")
try:
    if shutil.which("systemd-analyze") and ct.EXPORTER:
        host_binary = os.path.join(tmp, "billingd")
        shutil.copy(ct.SERVICE, host_binary)
        os.chmod(tmp, 0o755)
        local = unit.replace(exec_start[0], ct.EXPORTER).replace(exec_start[exec_start.index("--binary") + 1],
                                                                 host_binary)
        local_path = os.path.join(tmp, "billing-exporter.service")
        with open(local_path, "w") as f:
            f.write(local)
        r = bt.run(["systemd-analyze", "verify", local_path], timeout=120)
        problems = [l for l in (r.stdout + r.stderr).splitlines() if "billing-exporter.service" in l]
        check(r.returncode == 0 and not problems,
              "systemd-analyze verify accepts the unit (rc=%d %s)" % (r.returncode, problems[:3]))
    else:
        check(False, "systemd-analyze and the exporter are there to verify the unit")

    if not ct.EXPORTER:
        bt.skip("BX_EXPORTER not set (-Dexporter=enabled)")
    bt.require_root("running the exporter with the manifests' capabilities")
    import exportertest as h  # noqa: E402  (tests/exporter)

    CAP = {"DAC_READ_SEARCH": 2, "SYS_PTRACE": 19, "SYS_ADMIN": 21, "SYS_RESOURCE": 24, "PERFMON": 38, "BPF": 39}
    libc = ctypes.CDLL(None, use_errno=True)

    class CapHeader(ctypes.Structure):
        _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]

    class CapData(ctypes.Structure):
        _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32),
                    ("inheritable", ctypes.c_uint32)]

    def bounding():
        line = [l for l in open("/proc/self/status") if l.startswith("CapBnd:")][0]
        return int(line.split()[1], 16)

    def with_caps(names, uid=None):
        """A preexec_fn: the bounding set cut to names (those this machine
        grants: a capability its root lacks cannot be given), and for a
        uid, a switch to it keeping those as ambient capabilities."""
        have = bounding()
        nums = [CAP[n] for n in names if have >> CAP[n] & 1]
        last = int(open("/proc/sys/kernel/cap_last_cap").read())

        def fn():
            for c in range(last + 1):
                if c not in nums:
                    libc.prctl(24, c, 0, 0, 0)  # PR_CAPBSET_DROP
            if uid is None:
                return  # root: exec gives it the bounding set, no more
            libc.prctl(8, 1, 0, 0, 0)  # PR_SET_KEEPCAPS
            os.setgroups([])
            os.setgid(uid)
            os.setuid(uid)
            mask = sum(1 << c for c in nums)
            data = (CapData * 2)()
            for i in (0, 1):
                part = (mask >> (32 * i)) & 0xffffffff
                data[i].effective = data[i].permitted = data[i].inheritable = part
            if libc.capset(ctypes.byref(CapHeader(0x20080522, 0)), data) != 0:
                os._exit(90)
            for c in nums:
                if libc.prctl(47, 2, c, 0, 0) != 0:  # PR_CAP_AMBIENT_RAISE
                    os._exit(91)
        return fn, sorted(n for n in names if have >> CAP[n] & 1)

    class CappedExporter(h.Exporter):
        def __init__(self, preexec, *args):
            self.preexec = preexec
            real_popen = subprocess.Popen

            def popen(cmd, **kw):
                return real_popen(cmd, preexec_fn=self.preexec, **kw)
            subprocess.Popen = popen
            try:
                super().__init__(ct.EXPORTER, *args)
            finally:
                subprocess.Popen = real_popen

    # The DaemonSet's capabilities, on a service in its own namespaces.
    bt.require_program("unshare", "util-linux")
    program = os.path.join(tmp, "hidden", "renewald")
    os.makedirs(os.path.dirname(program))
    shutil.copy(ct.SERVICE, program)
    svc = ct.ns_service(program, os.path.dirname(program))
    ex = None
    try:
        fn, granted = with_caps(daemonset_caps or [])
        binary = daemonset_args[daemonset_args.index("--binary") + 1]
        ex = CappedExporter(fn, "--binary", ct.NS_INSIDE, "--metrics", "business")
        svc.fire(svc.host_pids(), ROUNDS)
        got = h.total(ex.samples(), "billing_invoices_total")
        check(got == ROUNDS * len(svc.host_pids()),
              "the exporter with the DaemonSet's capabilities (%s; uid 0) counts a namespaced service through "
              "--binary %s exactly (%d of %d; the manifest names %s)"
              % (",".join(granted), ct.NS_INSIDE, got, ROUNDS * len(svc.host_pids()), binary))
    finally:
        if ex:
            ex.stop()
        svc.stop()

    # The systemd unit's way: not root, its ambient capabilities.
    caps = [c[len("CAP_"):] for c in ambient]
    fn, granted = with_caps(caps, uid=65534)
    host = subprocess.Popen([host_binary, "1"], stdout=subprocess.PIPE, text=True)
    lines = ct.Lines(host.stdout)
    ex = None
    try:
        lines.wait_for(lambda l: l.startswith("parent "), "the host service")
        ex = CappedExporter(fn, "--binary", host_binary, "--metrics", "business")
        pids = [host.pid] + ct.children(host.pid)
        for _ in range(ROUNDS):
            for p in pids:
                os.kill(p, 10)
            for _ in pids:
                lines.wait_for(lambda l: l.startswith("fired "), "fired lines")
        got = h.total(ex.samples(), "billing_invoices_total")
        check(got == ROUNDS * len(pids), "the exporter as the unit runs it (uid 65534, ambient %s) counts a host "
              "service exactly (%d of %d)" % (",".join(granted), got, ROUNDS * len(pids)))
    finally:
        if ex:
            ex.stop()
        host.terminate()
        host.wait(timeout=ct.DEADLINE)
finally:
    shutil.rmtree(tmp, ignore_errors=True)
finish()
