"""File operations and search run INSIDE a sandbox by its own python3.

Sent as ``python3 -I -S -c SOURCE OP JSON`` through the sandbox agent, so the
check that a path stays in the workspace happens where the files are: the
parent directory is resolved inside the sandbox (a symlink a command planted
pointing out is seen and refused) and the last component is opened with
``O_NOFOLLOW``. Exit codes: 0 done, 2 missing, 3 outside the workspace,
4 another OS error (message on stderr). Standard library only, no prism.
"""

SOURCE = r"""
import fnmatch, json, os, re, stat, sys, tempfile
op, args = sys.argv[1], json.loads(sys.argv[2])
root = os.path.realpath(args["root"])

def inside(real):
    return real == root or real.startswith(root + "/")

def parent_checked(path):
    if os.path.normpath(path) == root:
        return root
    parent = os.path.realpath(os.path.dirname(path))
    if not inside(parent):
        sys.stderr.write("resolves outside the workspace")
        sys.exit(3)
    return os.path.join(parent, os.path.basename(path))

def stat_json(info):
    return {"size": info.st_size, "mtime_ns": info.st_mtime_ns,
            "mode": stat.S_IMODE(info.st_mode), "inode": info.st_ino,
            "is_file": stat.S_ISREG(info.st_mode), "is_dir": stat.S_ISDIR(info.st_mode)}

def walk(top, hidden):
    for current, dirs, names in os.walk(top):
        dirs[:] = sorted(d for d in dirs if d != ".git" and (hidden or not d.startswith(".")))
        for name in sorted(names):
            if hidden or not name.startswith("."):
                full = os.path.join(current, name)
                if os.path.isfile(full) and not os.path.islink(full):
                    yield os.path.relpath(full, top), full

def wanted(rel, globs):
    keep = [g for g in globs if not g.startswith("!")]
    drop = [g[1:] for g in globs if g.startswith("!")]
    name = os.path.basename(rel)
    def hit(g):
        return fnmatch.fnmatch(rel, g) or fnmatch.fnmatch(name, g)
    return (not keep or any(hit(g) for g in keep)) and not any(hit(g) for g in drop)

def search(a):
    flags = re.IGNORECASE if a["ignore_case"] else 0
    pattern = re.compile(re.escape(a["pattern"]) if a["literal"] else a["pattern"], flags)
    files, total, searched, truncated = [], 0, 0, False
    for rel, full in walk(a["path"], a["hidden"]):
        if not wanted(rel, a["globs"]) or os.path.getsize(full) > a["max_filesize"]:
            continue
        with open(full, "rb") as handle:
            data = handle.read()
        if b"\0" in data[:8192]:
            continue
        searched += 1
        lines = data.decode("utf-8", "replace").splitlines()
        hits = [i for i, line in enumerate(lines) if pattern.search(line)]
        if not hits:
            continue
        if len(hits) > a["max_per_file"]:
            hits, truncated = hits[: a["max_per_file"]], True
        if total + len(hits) > a["max_total"]:
            hits, truncated = hits[: a["max_total"] - total], True
        total += len(hits)
        shown = sorted({j for i in hits for j in range(max(0, i - a["context"]),
                                                       min(len(lines), i + a["context"] + 1))})
        marks = set(hits)
        files.append({"path": rel, "lines": [[j + 1, lines[j], j in marks] for j in shown]})
        if total >= a["max_total"]:
            break
    return {"files": files, "total_matches": total, "files_searched": searched,
            "truncated": truncated}

def listing(a):
    found = [(os.stat(full).st_mtime_ns, rel) for rel, full in walk(a["path"], a["hidden"])
             if wanted(rel, a["globs"])]
    found.sort(key=lambda item: (-item[0], item[1]))
    return {"files": [rel for _, rel in found[: a["max"]]], "total": len(found),
            "truncated": len(found) > a["max"]}

try:
    if op == "stat":
        path = parent_checked(args["path"])
        try:
            info = os.lstat(path)
        except FileNotFoundError:
            print("null")
        else:
            print(json.dumps(stat_json(info)))
    elif op == "read":
        fd = os.open(parent_checked(args["path"]), os.O_RDONLY | os.O_NOFOLLOW)
        with os.fdopen(fd, "rb") as handle:
            sys.stdout.buffer.write(handle.read(args["max_bytes"]))
    elif op == "write":
        path = parent_checked(args["path"])
        fd, temp = tempfile.mkstemp(prefix="." + os.path.basename(path) + ".",
                                    suffix=".prism-tmp", dir=os.path.dirname(path))
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(sys.stdin.buffer.read())
                handle.flush()
                os.fsync(handle.fileno())
            os.chmod(temp, args["mode"] if args["mode"] is not None else 0o644)
            os.replace(temp, path)
        except BaseException:
            os.unlink(temp)
            raise
    elif op == "mkdirs":
        if not inside(os.path.realpath(args["path"])):
            sys.stderr.write("resolves outside the workspace")
            sys.exit(3)
        os.makedirs(args["path"], exist_ok=True)
    elif op == "remove":
        os.unlink(parent_checked(args["path"]))
    elif op in ("search", "list"):
        if not inside(os.path.realpath(args["path"])):
            sys.stderr.write("resolves outside the workspace")
            sys.exit(3)
        try:
            print(json.dumps(search(args) if op == "search" else listing(args)))
        except re.error as error:
            sys.stderr.write("invalid pattern: %s" % error)
            sys.exit(5)
except FileNotFoundError as error:
    sys.stderr.write(str(error))
    sys.exit(2)
except OSError as error:
    sys.stderr.write(str(error))
    sys.exit(4)
"""
