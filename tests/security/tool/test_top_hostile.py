"""billing-probes top, run by root, against what other users put in its way
(issue 46: finding 4 for top, 5 for top, 6).

A service of the test's own user (many_handlers, a real stats writer)
fires requests of 70 handler names into its directory billing-stats-UID:

1. Its writer keeps 64 names and counts the rest as "other": `top --once
   --stats-dir` shows those 65 rows, exactly (6 requests a round in
   other).  Before: refused, "more than 64 handlers".
2. The directory made sticky and open to all (mode 1777), the attacker
   drops a file whose name holds ESC ] 0 ; owned BEL ESC [ 2 J (retitle
   the terminal, clear it) and a symbolic link, both named *.stats:
   `top --once` leaves each out in one escaped stderr line and shows the
   service's figures (exit 0).  Before: the whole directory refused.
3. The live view in a real terminal (tmux): the service's figures, the
   skipped files named escaped, the terminal's title untouched.  Before:
   the reading's error text, holding the attacker's file name, went to the
   screen raw (the title became "owned", the screen was cleared).

Needs root (other users), tmux and a stats build."""
import os
import re
import shutil
import subprocess
import tempfile

from sectest import TOOL, check, finish, remove, skip
import billingtest as bt

PROGRAM = os.environ.get("BP_MANY_HANDLERS", "")
if not PROGRAM:
    skip("no many_handlers in this build (no stats writer)")
bt.require_root("a service user and an attacker of its own")
if not shutil.which("tmux"):
    skip("no tmux (apt-get install tmux)")
HANDLERS, KEPT = 70, 64  # names fired; names a writer keeps (billing.d's @@label-values)
SEQ = "\x1b]0;owned\x07\x1b[2J"
ESCAPED = "\\x1b]0;owned\\x07\\x1b[2J"
svc_uid, svc_gid, as_service = bt.system_user("bp-top-service")
_, _, as_attacker = bt.attacker()


def raw_controls(data):
    return sorted({b for b in data if (b < 0x20 and b != 0x0a) or b == 0x7f})


class Service:
    def __init__(self, stats_dir, program):
        env = {k: v for k, v in os.environ.items() if not k.startswith("BILLING_STATS")}
        env["BILLING_STATS_DIR"] = stats_dir
        self.p = subprocess.Popen(as_service + [program, str(HANDLERS)], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, text=True, env=env)
        self.out = bt.Lines(self.p.stdout)
        self.segment = self.out.wait_for(lambda s: s.startswith("segment "), "the segment line").split()[1]
        self.out.wait_for(lambda s: s == "ready", "ready")

    def round(self):
        self.p.stdin.write("go\n")
        self.p.stdin.flush()
        self.out.wait_for(lambda s: s == "done", "a round done")

    def end(self):
        self.p.stdin.close()
        self.p.wait(timeout=30)


def once(stats_dir, svc, rounds=1):
    """top --once as root with ROUNDS rounds fired inside its interval:
    (exit, stdout bytes, stderr bytes)."""
    p = subprocess.Popen([TOOL, "top", "--once", "--interval", "1.5", "--stats-dir", stats_dir],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    first = p.stdout.readline()
    for _ in range(rounds):
        svc.round()
    out, err = p.communicate(timeout=60)
    return p.returncode, first + out, err


def handler_rows(text):
    return {m.group(1): int(m.group(2)) for m in re.finditer(r"(?m)^(handler-\d\d|other) (\d+) ", text)}


WANT = dict({"handler-%02d" % i: 1 for i in range(KEPT)}, other=HANDLERS - KEPT)
base = tempfile.mkdtemp(prefix="bp-sec-top-")
os.chmod(base, 0o755)
place = os.path.join(base, "many_handlers")  # where the service's user may run it
shutil.copy(PROGRAM, place)
os.chmod(place, 0o755)
stats = os.path.join(base, "billing-stats-%d" % svc_uid)
os.mkdir(stats, 0o700)
os.chown(stats, svc_uid, svc_gid)
svc = Service(stats, place)
sock = os.path.join(base, "tmux.sock")
try:
    # 1. the writer's 64 names and other: 65 rows
    rc, out, err = once(stats, svc)
    rows = handler_rows(out.decode(errors="replace"))
    check(rc == 0 and rows == WANT, "top --once, %d handler names fired: %d rows, %d names and other with %d "
          "(exit %d, %d rows, %r)" % (HANDLERS, KEPT + 1, KEPT, HANDLERS - KEPT, rc, len(rows), err.decode()[-300:]))

    # 2. the directory sticky and open; the attacker's files in it
    os.chmod(stats, 0o1777)
    evil = os.path.join(stats, SEQ + "1.stats")
    r = bt.run(as_attacker + ["sh", "-c", 'echo not a segment > "$1" && ln -s /etc/passwd "$2"', "sh", evil,
                              os.path.join(stats, "2.stats")])
    check(r.returncode == 0, "the attacker put a file and a link in the sticky directory (%s)" % r.stderr.strip())
    rc, out, err = once(stats, svc)
    lines = err.decode(errors="replace").splitlines()
    check(rc == 0 and handler_rows(out.decode(errors="replace")) == WANT,
          "top --once beside another user's files: exit 0 and the service's figures (exit %d, %r)" % (rc, lines))
    check(len(lines) == 2 and all("skipped" in x for x in lines) and ESCAPED in lines[0] + lines[1],
          "each of the other user's files left out in one line, its name escaped: %r" % lines)
    check(not raw_controls(out + err), "no raw control byte in top's output (%s)" % raw_controls(out + err))

    # 3. the live view in a real terminal
    def tmux(*args):
        return subprocess.run(["tmux", "-S", sock] + list(args), capture_output=True, text=True, timeout=30).stdout

    def screen():
        return tmux("capture-pane", "-p", "-t", "top")

    tmux("new-session", "-d", "-s", "top", "-x", "160", "-y", "100", "sh")
    tmux("set-option", "-t", "top", "set-titles", "on")
    title0 = tmux("display", "-p", "-t", "top", "#{pane_title}").strip()
    tmux("send-keys", "-t", "top", "%s top --interval 1 --stats-dir %s" % (TOOL, stats), "Enter")
    shown = None
    for _ in range(20):
        svc.round()
        try:
            shown = bt.wait_for("figures on the live screen", lambda: "handler-63 1 " in screen() and screen(),
                                timeout=1.5, interval=0.1)
            break
        except RuntimeError:
            pass
    s = shown or screen()
    title = tmux("display", "-p", "-t", "top", "#{pane_title}").strip()
    check(bool(shown) and ESCAPED in s and "live" in s,
          "the live view shows the service's figures and names the attacker's file escaped (%r)"
          % [x for x in s.splitlines() if "skipped" in x or "no figures" in x][:3])
    check(title == title0 and "owned" not in title,
          "the terminal's title untouched by the attacker's file name (%r, was %r)" % (title, title0))
    tmux("send-keys", "-t", "top", "q")
finally:
    if os.path.exists(sock):
        subprocess.run(["tmux", "-S", sock, "kill-server"], capture_output=True)
    svc.end()
    remove(base)
finish()
