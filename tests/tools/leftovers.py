#!/usr/bin/env python3
"""What of one sbxtop state directory runs or stays on this host that its
registry does not name: found as an outsider would, by the names every ns
sandbox's resources carry (docs/ARCHITECTURE.md, "Crash points").

    leftovers.py STATE_HOME [SEEN_FILE]

STATE_HOME is $XDG_STATE_HOME.  Prints one line per thing found, "KIND ID WHAT",
and nothing when all is named.  Every id found (named or not) is appended to
SEEN_FILE, whose ids are then checked against the cgroups too: a cgroup is
only known to be this state directory's by an id seen here before.
"""
import json
import os
import sys


def label_of(state):
    """The label sbxtop puts in each agent's --tag (core/paths.c,
    paths_state_label): FNV-1a of the machine id and the state directory."""
    try:
        with open("/etc/machine-id") as f:
            mid = f.read().split("\n")[0]
    except OSError:
        mid = ""
    h = 0xcbf29ce484222325
    for part in (mid, os.path.realpath(os.path.join(state, "sbxtop"))):
        for b in part.encode() + b"\0":
            h = ((h ^ b) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return "%016x" % h


def registry_ids(state):
    path = os.path.join(state, "sbxtop", "sandboxes.json")
    try:
        with open(path) as f:
            text = f.read()
    except FileNotFoundError:
        return set()
    if text.strip() == "":
        return set()
    return {s["id"] for s in json.loads(text)["sandboxes"]}


def agents(label):
    """Our agents: sandbox id -> pid, by their --tag ID@LABEL."""
    out = {}
    for p in os.listdir("/proc"):
        if not p.isdigit():
            continue
        try:
            with open("/proc/%s/cmdline" % p, "rb") as f:
                argv = f.read().split(b"\0")
        except OSError:
            continue
        for i, a in enumerate(argv[:-1]):
            if a == b"--tag" and argv[i + 1].endswith(b"@" + label.encode()):
                out[argv[i + 1].split(b"@")[0].decode()] = int(p)
    return out


def cgroups():
    """Sandbox cgroups anywhere: id -> path (v2 sbxtop-ID, v1 .../sbxtop/ID)."""
    out = {}
    for top, dirs, _ in os.walk("/sys/fs/cgroup"):
        if top.count("/") > 12:
            dirs[:] = []
            continue
        for d in dirs:
            if d.startswith("sbxtop-sbx-"):
                out.setdefault(d[len("sbxtop-"):], os.path.join(top, d))
            elif d.startswith("sbx-") and os.path.basename(top) == "sbxtop":
                out.setdefault(d, os.path.join(top, d))
    return out


def main():
    state = sys.argv[1]
    seen_file = sys.argv[2] if len(sys.argv) > 2 else None
    sandboxes = os.path.join(state, "sbxtop", "sandboxes")
    named = registry_ids(state)
    found = []
    seen = set()
    if seen_file and os.path.exists(seen_file):
        with open(seen_file) as f:
            seen = {l.strip() for l in f if l.strip()}
    label = label_of(state)
    for sid, pid in sorted(agents(label).items()):
        seen.add(sid)
        if sid not in named:
            found.append(("agent", sid, "pid %d" % pid))
    if os.path.isdir(sandboxes):
        for d in sorted(os.listdir(sandboxes)):
            if d.startswith("sbx-"):
                seen.add(d)
                if d not in named:
                    found.append(("directory", d, os.path.join(sandboxes, d)))
    with open("/proc/self/mountinfo") as f:
        for line in f:
            mp = line.split()[4].replace("\\040", " ")
            if mp.startswith(sandboxes + "/"):
                sid = mp[len(sandboxes) + 1:].split("/")[0]
                seen.add(sid)
                if sid not in named:
                    found.append(("mount", sid, mp))
    for dev in sorted(os.listdir("/sys/block")):
        try:
            with open("/sys/block/%s/loop/backing_file" % dev) as f:
                bf = f.read().strip()
        except OSError:
            continue
        if bf.startswith(sandboxes + "/"):
            sid = bf[len(sandboxes) + 1:].split("/")[0]
            if sid.startswith("sbx-") and sid not in named:
                found.append(("loop", sid, "/dev/%s (%s)" % (dev, bf)))
    for sid, path in sorted(cgroups().items()):
        if sid in seen and sid not in named:
            found.append(("cgroup", sid, path))
    reg_dir = os.path.join(state, "sbxtop")
    if os.path.isdir(reg_dir):
        for n in sorted(os.listdir(reg_dir)):
            if n.startswith("sandboxes.json.tmp-"):
                found.append(("file", "-", os.path.join(reg_dir, n)))
    for kind, sid, what in found:
        print("%s %s %s" % (kind, sid, what))
    if seen_file:
        with open(seen_file, "w") as f:
            f.write("".join(s + "\n" for s in sorted(seen | named)))


main()
