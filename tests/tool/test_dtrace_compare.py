"""Where a real DTrace exists, `dtrace -l -P 'billing*' -c PROGRAM` lists
the same probes as billing-probes.  systemtap's /usr/bin/dtrace (builds
probes only) is not one: skip with the reason."""
import json
import shutil
import subprocess

from tooltest import PROGRAM, check, finish, need_probes, run, skip

need_probes()
dtrace = shutil.which("dtrace")
if not dtrace:
    skip("no dtrace(1) on this host")
v = subprocess.run([dtrace, "-V"], capture_output=True, text=True)
if v.returncode != 0 or "Sun D" not in v.stdout + v.stderr:
    skip("%s is not a real DTrace (systemtap's -h/-G wrapper: `dtrace -V` -> %r)"
         % (dtrace, (v.stdout + v.stderr).strip().splitlines()[0] if (v.stdout + v.stderr).strip() else ""))
out = subprocess.run([dtrace, "-l", "-P", "billing*", "-c", PROGRAM], capture_output=True, text=True,
                     timeout=60).stdout
# ID PROVIDER MODULE FUNCTION NAME; the provider carries the PID suffix.
dtrace_names = {line.split()[-1] for line in out.splitlines()[1:] if line.strip()}
rc, js, err = run(["list", PROGRAM, "--json", "-P", "billing"])
ours = {p["name"].replace("__", "-") for p in json.loads(js)["probes"]}
check(dtrace_names == ours, "dtrace -l and billing-probes list name the same probes (%d vs %d)"
      % (len(dtrace_names), len(ours)))
finish()
