#!/usr/bin/env python3
"""Writes link/hot-functions.txt: the functions of the executable a server runs, which
build.rs has lld place first so that they share pages (see `hot_functions_first` there
and docs/PERFORMANCE.md, "Start-up and operations").

It builds the release binary in the compiler's own order (TESSERA_HOT_TEXT=off), runs
`tessera serve` three times under valgrind's callgrind on a fresh SQLite database, and
reads which of the executable's functions ran, and how many instructions each:

  1. start with the default settings, answer /readyz, stay idle 3 s (what the idle
     memory figure measures);
  2. a start without rate limits (the load driver would meet them), then each kind of
     request: full PKCE flows, the login page, code exchange, refresh, introspection,
     discovery, JWKS, health, metrics, admin;
  3. a start with the default settings and a few flows through the rate limits.

The list puts first, in the order the compiler placed them, the functions that ran more
in runs 2 and 3 than two starts account for (what requests run), then the rest of what
ran (start-up), also in the compiler's order: the functions of one module stay next to
each other, as they call each other, which a list in profile order does not keep (that
costs a refresh about 8 % more CPU). Needs valgrind (Debian: valgrind) and a linker
that takes --symbol-ordering-file (lld: rustc's own on x86_64 Linux since Rust 1.90).
Takes a few minutes.

    python3 scripts/hot-functions.py

Run it again after a compiler or dependency upgrade: symbol names carry hashes that
change with them, and a name the list has that a build does not is skipped. It prints
how many of the previous list's names the new build still has.
"""

import collections
import json
import os
import pathlib
import subprocess
import sys
import tempfile
import time
import urllib.request

ROOT = pathlib.Path(__file__).resolve().parent.parent
LIST = ROOT / "link" / "hot-functions.txt"
PORT = 9391
ISSUER = f"http://127.0.0.1:{PORT}"
# Seconds per request kind: under callgrind a request costs about 50 times as much.
SECONDS = 15


def run(cmd, **kw):
    return subprocess.run(cmd, check=True, **kw)


def target_dir():
    meta = run(["cargo", "metadata", "--format-version", "1", "--no-deps"],
               cwd=ROOT, capture_output=True, text=True).stdout
    return pathlib.Path(json.loads(meta)["target_directory"])


def text_symbols(binary):
    """Function symbols of `binary`: name -> address (the first, for a name twice)."""
    out = run(["nm", "--defined-only", str(binary)], capture_output=True, text=True).stdout
    symbols = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] in "tTwW":
            symbols.setdefault(parts[2], int(parts[0], 16))
    return symbols


def self_costs(profile, binary):
    """Instructions each function of `binary` ran itself (callees not counted), from a
    callgrind output written with --compress-strings=no --compress-pos=no."""
    binary = os.path.realpath(binary)
    costs = collections.Counter()
    in_binary = ours = False
    fn = None
    after_call = False
    with open(profile) as f:
        for line in f:
            if line.startswith("ob="):
                in_binary = os.path.realpath(line[3:].strip()) == binary
            elif line.startswith("fn="):
                # A recursive call's own entry is `name'2`; it is the same function.
                fn, ours = line[3:].strip().split("'")[0], in_binary
            elif line.startswith("calls="):
                after_call = True  # the next cost line is the call's, not fn's own
            elif line[:1].isdigit() or line[:1] in "+-*":
                if after_call:
                    after_call = False
                    continue
                parts = line.split()
                if fn and ours and len(parts) >= 2:
                    costs[fn] += int(parts[1])
    return costs


def get(path):
    try:
        with urllib.request.urlopen(ISSUER + path, timeout=30) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code
    except OSError:
        return None


def profile_serve(binary, db, out, work, *flags):
    """Runs `tessera serve FLAGS` under callgrind until `work()` returns; returns the
    profile. The log level is the default one: the log lines a server writes are code
    it runs."""
    env = {k: v for k, v in os.environ.items() if k != "RUST_LOG"}
    server = subprocess.Popen(
        ["valgrind", "--tool=callgrind", "--dump-instr=no", "--compress-strings=no",
         "--compress-pos=no", "--demangle=no", f"--callgrind-out-file={out}",
         str(binary), "--db", str(db), "serve", "--listen", f"127.0.0.1:{PORT}",
         "--issuer", ISSUER, *flags],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(600):
            if get("/readyz") == 200:
                break
            if server.poll() is not None:
                sys.exit(f"tessera serve exited with {server.returncode} under valgrind")
            time.sleep(0.1)
        else:
            sys.exit("tessera serve did not become ready under valgrind in 60 s")
        work()
    finally:
        server.terminate()
        try:
            server.wait(timeout=120)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
    return out


def main():
    for tool in ("valgrind", "nm", "cargo"):
        if subprocess.run(["sh", "-c", f"command -v {tool}"], capture_output=True).returncode:
            sys.exit(f"scripts/hot-functions.py needs {tool}")
    # Each package on its own: built together, Cargo would unify their dependencies'
    # features, and the server's symbols (hashes included) would not be those of the
    # `cargo build --release` that users run.
    env = dict(os.environ, TESSERA_HOT_TEXT="off")
    run(["cargo", "build", "--release", "-p", "tessera"], cwd=ROOT, env=env)
    run(["cargo", "build", "--release", "-p", "tessera-stress"], cwd=ROOT)
    release = target_dir() / "release"
    binary, stress = release / "tessera", release / "tessera-stress"
    symbols = text_symbols(binary)

    if LIST.is_file():
        old = [l.strip() for l in LIST.read_text().splitlines() if l.strip() and not l.startswith("#")]
        kept = sum(1 for name in old if name in symbols)
        print(f"the previous list names {len(old)} functions; {kept} of them are in this build")

    with tempfile.TemporaryDirectory() as tmp:
        tmp = pathlib.Path(tmp)
        db = tmp / "t.db"
        tessera = lambda *args, **kw: run([str(binary), "--db", str(db), *args], cwd=tmp, **kw)
        tessera("init", capture_output=True)
        # Cost 4: the code a login runs is the same, and under callgrind cost 10 takes seconds.
        tessera("user", "seed", "stress", "20", "--password-stdin", input=b"stress-password\n",
                capture_output=True, env=dict(os.environ, TESSERA_BCRYPT_COST="4"))
        added = tessera("client", "add", "stress", "--redirect-uri", "http://127.0.0.1:9999/callback",
                        "--json", capture_output=True, text=True).stdout
        secret = json.loads(added)["client_secret"]

        # As a server is started by hand: rate limits and lockout on, default logging.
        idle = profile_serve(binary, db, tmp / "idle.out", lambda: time.sleep(3))

        driver = dict(os.environ, TESSERA_ISSUER=ISSUER, STRESS_CLIENT_ID="stress",
                      STRESS_CLIENT_SECRET=secret, STRESS_USER_PREFIX="stress",
                      STRESS_USERS="20", STRESS_PASSWORD="stress-password",
                      STRESS_REDIRECT_URI="http://127.0.0.1:9999/callback")

        def requests():
            for kind in ("flow", "authorize-only", "token-only", "refresh-only", "introspect-only"):
                run([str(stress), kind, "--vus", "2", "--duration", f"{SECONDS}s"], env=driver,
                    stdout=subprocess.DEVNULL)
            for path in ("/.well-known/openid-configuration", "/jwks", "/healthz", "/readyz",
                         "/metrics", "/admin", "/device", "/account"):
                get(path)

        def limited():
            # A few flows through the rate limits and lockout; being refused is expected.
            subprocess.run([str(stress), "flow", "--vus", "1", "--duration", "5s"], env=driver,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

        # The load driver signs in far more often than a person; limits would refuse it.
        busy = profile_serve(binary, db, tmp / "busy.out", requests,
                             "--rate-limit", "false", "--lockout", "false")
        checked = profile_serve(binary, db, tmp / "limited.out", limited)
        at_idle = self_costs(idle, binary)
        serving = self_costs(busy, binary) + self_costs(checked, binary)

    ran = [name for name in serving.keys() | at_idle.keys() if name in symbols]
    by_place = lambda names: sorted(names, key=symbols.get)
    # `serving` has two starts in it, so start-up's functions ran twice as much there.
    hot = by_place(n for n in ran if serving[n] > 2 * at_idle[n])
    start = by_place(n for n in ran if serving[n] <= 2 * at_idle[n])
    rustc = run(["rustc", "--version"], capture_output=True, text=True).stdout.strip()
    head = run(["git", "rev-parse", "--short=12", "HEAD"], cwd=ROOT, capture_output=True,
               text=True).stdout.strip()
    LIST.parent.mkdir(exist_ok=True)
    with open(LIST, "w") as f:
        f.write("# Functions lld places first in the executable (build.rs, hot_functions_first):\n"
                "# what requests run, then what only start-up runs, each in the compiler's order.\n"
                f"# Written by scripts/hot-functions.py from commit {head} with {rustc}.\n")
        f.write("".join(name + "\n" for name in hot + start))
    print(f"{LIST.relative_to(ROOT)}: {len(hot)} functions requests run, "
          f"{len(start)} that only start-up runs")
    # Link again with the new list, so that target/release/tessera is the build to use.
    run(["cargo", "build", "--release", "-p", "tessera"], cwd=ROOT)


if __name__ == "__main__":
    main()
