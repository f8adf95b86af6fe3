#!/usr/bin/env python3
"""The import rules of docs/ARCHITECTURE.md, checked on parsed paths (`make lint`).

Reads every `use` tree (however rustfmt spreads it over lines) and every path written
in the code (`crate::db::users::find(…)`, `super::x`, a child module's name), with
comments and string literals taken out first, and resolves each to the file that
defines it. Then it fails on:

  - an import cycle between files, or between top-level modules (`auth` ↔ `lifecycle`);
  - a file of the http plumbing (HTTP_PLUMBING below) importing a handler file;
  - an import against the direction of the layers (LAYERS below: a module may import
    only modules of a lower rank);
  - a storage operation (`db::family::op`, `.db.read`/`.db.write`, `Tx`) named in
    `src/http/` or `src/cli/`, which call use cases;
  - an engine crate named outside its home, and a test in tests/ that opens the SQLite
    file itself instead of going through the binary or the storage API.

Imports against these rules that are still to be removed are listed in
scripts/import-debt.txt (`a -> b` for modules, `src/x.rs -> src/y.rs` for files); the
check skips them, and fails on a listed one that no longer occurs, so the list only
shrinks. `--graph` prints the module graph instead. Exits non-zero with every finding.
"""
import os
import re
import sys
from collections import defaultdict

ROOT = os.path.normpath(os.path.join(os.path.dirname(__file__), ".."))
SRC = os.path.join(ROOT, "src")

# Rank of each top-level module: a module imports only modules of a strictly lower
# rank (the same rank never: use cases do not import each other). Names absent from
# the table are an error, so a new module must be placed.
LAYERS = {
    # the entry points: commands, the composition root, the HTTP fronts
    "main": 90, "cli": 85, "startup": 80, "http": 70,
    # the application state the entry points build, and configuration as code
    "state": 60, "apply": 55,
    # the sign-in journey, and the use cases below it
    "signin": 50,
    "admin": 45,
    "oidc": 40, "federation": 40, "forward_auth": 40, "account": 40,
    "lifecycle": 35,
    "auth": 30, "branding": 30, "replica": 30,
    # what every use case stands on
    "context": 25,
    "audit": 20, "mail": 20, "metrics": 20,
    "db": 15,
    "crypto": 10, "i18n": 10,
    "error": 9, "config": 8,
    "domain": 5, "clock": 5,
    "lib": 0,
}

# Imports forbidden although downward: storage knows neither the settings (it is given
# its options) nor the languages (mail is rendered before the write).
FORBIDDEN = {("db", "config"), ("db", "i18n")}

# Inside src/http/, the plumbing the handlers share (errors, guards, cookies, pages,
# parameters, the language, the page's branding, what a protocol request presents, and
# what the sign-in and account pages have in common). It imports no handler file, so
# that handlers → plumbing is the one direction and no handler is needed by another.
HTTP_PLUMBING = re.compile(
    r"src/http/(errors(/tests)?|guard|cookies|pages|params|lang|branding|protocol/credentials"
    r"|signin/(portal|login_form|steps|signup_form|passkey_forms)|account/(forms|reauth|view))\.rs$")

# Crates that belong to one place: (crate regex, allowed path regex, what).
CRATE_HOMES = [
    (r"\b(rusqlite|r2d2_sqlite)::", r"src/db/sql\.rs$|src/db/sqlite/",
     "the SQLite engine is used only in src/db/sqlite/ and the executor (src/db/sql.rs)"),
    (r"\br2d2::", r"src/db/sqlite/|src/db/pg/",
     "connection pools belong to the engines (src/db/sqlite/, src/db/pg/)"),
    (r"\b(postgres|postgres_native_tls|native_tls)::", r"src/db/sql\.rs$|src/db/pg/",
     "the PostgreSQL engine is used only in src/db/pg/ and the executor (src/db/sql.rs)"),
    (r"\b(actix_web|actix_rt)\b", r"src/http/|src/startup\.rs$|src/main\.rs$",
     "actix is used only in src/http/, startup.rs and main.rs"),
    (r"\bjosekit::", r"src/crypto/", "josekit is used only in src/crypto/"),
    (r"\bopenidconnect::", r"src/federation/",
     "openidconnect (upstream sign-in) is used only in src/federation/"),
]

# Storage named from a front: a storage family's operation, the handle's read/write,
# or a transaction type.
STORAGE_CALL = re.compile(r"\bdb\s*::\s*[a-z_]+\s*::\s*[a-z_]+\s*\(|\.\s*db\s*\.\s*(read|write)\s*\(")
FRONTS = re.compile(r"src/(http|cli)/")

IDENT = r"[A-Za-z_][A-Za-z0-9_]*"


def strip(text):
    """Blanks comments and string/char literals, keeping newlines (line numbers)."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            depth, j = 1, i + 2
            while j < n and depth:
                if text.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif text.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c == "r" and re.match(r'r#*"', text[i:i + 10]) and (i == 0 or not re.match(r"[A-Za-z0-9_]", text[i - 1])):
            m = re.match(r'r(#*)"', text[i:])
            end = '"' + m.group(1)
            j = text.find(end, i + len(m.group(0)))
            j = n if j < 0 else j + len(end)
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c == '"' or (c == "b" and text.startswith('b"', i)):
            j = i + (2 if c == "b" else 1)
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            j += 1
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c == "'":
            m = re.match(r"'(\\.[^']*|[^\\'])'", text[i:])
            if m:  # a char literal; otherwise a lifetime
                out.append(" " * len(m.group(0)))
                i += len(m.group(0))
            else:
                out.append(c)
                i += 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def module_files():
    """Maps each module path (tuple) to its file, and each file to its module path."""
    files = {}
    for dirpath, _, names in os.walk(SRC):
        for name in names:
            if not name.endswith(".rs"):
                continue
            rel = os.path.relpath(os.path.join(dirpath, name), SRC)
            parts = rel[:-3].split(os.sep)
            if parts == ["lib"]:
                mod = ()
            elif parts == ["main"]:
                mod = ("main",)
            elif parts[-1] == "mod":
                mod = tuple(parts[:-1])
            else:
                mod = tuple(parts)
            files[mod] = "src/" + rel.replace(os.sep, "/")
    return files


def expand_use(tree):
    """Expands a use tree (`a::{b, c::{d, e}}`) into its paths, as lists of segments."""
    tree = re.sub(r"\s+as\s+" + IDENT, "", tree)
    tree = re.sub(r"\s+", "", tree)

    def split_top(s):
        parts, depth, cur = [], 0, ""
        for ch in s:
            if ch == "{":
                depth += 1
            elif ch == "}":
                depth -= 1
            if ch == "," and depth == 0:
                parts.append(cur)
                cur = ""
            else:
                cur += ch
        if cur:
            parts.append(cur)
        return parts

    def walk(prefix, s):
        brace = s.find("{")
        if brace < 0:
            path = [p for p in s.split("::") if p]
            if path and path[-1].startswith("self"):
                path = path[:-1]
            return [prefix + path]
        head = [p for p in s[:brace].split("::") if p]
        inner = s[brace + 1:s.rfind("}")]
        out = []
        for part in split_top(inner):
            out.extend(walk(prefix + head, part))
        return out

    return walk([], tree)


class Resolver:
    def __init__(self, files):
        self.files = files

    def children(self, mod):
        return {m[len(mod)] for m in self.files if len(m) == len(mod) + 1 and m[:len(mod)] == mod}

    def resolve(self, here, segs):
        """The file module a path names from module `here` (a file's module plus any
        inline modules), or None for an external crate or a local item."""
        segs = list(segs)
        if not segs:
            return None
        if segs[0] == "crate":
            base, rest = (), segs[1:]
        elif segs[0] in ("self", "super"):
            base = list(here)
            while segs and segs[0] in ("self", "super"):
                if segs[0] == "super" and base:
                    base.pop()
                segs = segs[1:]
            base, rest = tuple(base), segs
        elif segs[0] in self.children(self.file_of(here)):
            base, rest = self.file_of(here), segs
        else:
            return None
        mod = self.file_of(base)
        for seg in rest:
            if mod + (seg,) in self.files:
                mod = mod + (seg,)
            else:
                break
        return mod

    def file_of(self, mod):
        """The deepest file module that holds `mod` (inline modules live in a file)."""
        mod = tuple(mod)
        while mod not in self.files and mod:
            mod = mod[:-1]
        return mod


USE_RE = re.compile(r"\buse\s+([^;]+);")
PATH_RE = re.compile(r"(?<![A-Za-z0-9_:])((?:crate|super|self|" + IDENT + r")(?:\s*::\s*" + IDENT + r")+)")
INLINE_MOD = re.compile(r"\bmod\s+(" + IDENT + r")\s*\{")


def inline_modules(code):
    """For each offset, the inline module path it sits in: list of (start, end, names)."""
    spans = []
    for m in INLINE_MOD.finditer(code):
        depth, j = 0, m.end() - 1
        while j < len(code):
            if code[j] == "{":
                depth += 1
            elif code[j] == "}":
                depth -= 1
                if depth == 0:
                    break
            j += 1
        spans.append((m.start(), j, m.group(1)))
    return spans


def scope_at(spans, offset):
    return [name for start, end, name in spans if start <= offset <= end]


def edges_of(resolver, mod, path):
    with open(os.path.join(ROOT, path), encoding="utf-8") as f:
        code = strip(f.read())
    spans = inline_modules(code)
    found = []  # (target module, line)
    for m in USE_RE.finditer(code):
        here = mod + tuple(scope_at(spans, m.start()))
        line = code.count("\n", 0, m.start()) + 1
        for segs in expand_use(m.group(1)):
            if segs and segs[0] == "tessera":
                segs = ["crate"] + segs[1:]
            target = resolver.resolve(here, segs)
            if target is not None:
                found.append((target, line))
    body = USE_RE.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), code)
    for m in PATH_RE.finditer(body):
        segs = [s.strip() for s in m.group(1).split("::")]
        if segs[0] == "tessera":
            segs = ["crate"] + segs[1:]
        here = mod + tuple(scope_at(spans, m.start()))
        target = resolver.resolve(here, segs)
        if target is not None:
            found.append((target, code.count("\n", 0, m.start()) + 1))
    return code, found


def read_debt():
    path = os.path.join(ROOT, "scripts", "import-debt.txt")
    debt = set()
    if os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            for line in f:
                line = line.split("#", 1)[0].strip()
                if line:
                    a, b = (x.strip() for x in line.split("->"))
                    debt.add((a, b))
    return debt


def top(mod):
    if not mod:
        return "lib"
    return mod[0]


def sccs(nodes, edges):
    """Tarjan's strongly connected components with more than one member."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]
    sys.setrecursionlimit(10000)

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(nodes):
        if v not in index:
            visit(v)
    return out


def main():
    files = module_files()
    resolver = Resolver(files)
    debt = read_debt()
    used = set()
    findings = []
    file_edges = defaultdict(set)
    mod_edges = defaultdict(set)
    where = {}
    for mod, path in sorted(files.items()):
        code, found = edges_of(resolver, mod, path)
        for target, line in found:
            # A parent names its children to declare and re-export them; a child's
            # `super::` is the real dependency, so parent → child edges are not counted.
            if target == mod or target[:len(mod)] == mod:
                continue
            a, b = top(mod), top(target)
            if (a, b) in debt:
                used.add((a, b))
                continue
            if (path, files[target]) in debt:
                used.add((path, files[target]))
                continue
            file_edges[path].add(files[target])
            if a != b:
                mod_edges[a].add(b)
                where.setdefault((a, b), f"{path}:{line}")
        findings += check_code(path, code)
    if "--graph" in sys.argv:
        for a in sorted(mod_edges):
            print(f"{a} -> {', '.join(sorted(mod_edges[a]))}")
        for comp in sccs(set(file_edges) | {t for s in file_edges.values() for t in s}, file_edges):
            print(f"file cycle ({len(comp)}): {' '.join(comp)}")
        return 0
    for name in sorted({top(m) for m in files}):
        if name not in LAYERS:
            findings.append(f"src/{name}: a top-level module missing from LAYERS in scripts/check-imports.py")
    for comp in sccs(set(file_edges) | {t for s in file_edges.values() for t in s}, file_edges):
        findings.append(f"import cycle between {len(comp)} files: {' '.join(comp)}")
    for a, targets in sorted(file_edges.items()):
        if HTTP_PLUMBING.match(a):
            for b in sorted(targets):
                if b.startswith("src/http/") and not HTTP_PLUMBING.match(b):
                    findings.append(f"{a}: the http plumbing imports the handler file {b} "
                                    "(HTTP_PLUMBING in scripts/check-imports.py)")
    for comp in sccs(set(mod_edges), mod_edges):
        findings.append(f"import cycle between modules: {' ↔ '.join(comp)}")
    for (a, b), at in sorted(where.items()):
        if (a, b) in FORBIDDEN:
            findings.append(f"{at}: `{a}` may not import `{b}` (FORBIDDEN in scripts/check-imports.py)")
        elif a in LAYERS and b in LAYERS and LAYERS[a] <= LAYERS[b]:
            findings.append(f"{at}: `{a}` imports `{b}`, which is not below it "
                            f"(ranks {LAYERS[a]} and {LAYERS[b]} in scripts/check-imports.py)")
    for a, b in sorted(debt - used):
        findings.append(f"scripts/import-debt.txt: `{a} -> {b}` no longer occurs: delete the line")
    findings += check_tests()
    for f in findings:
        print(f"imports: {f}")
    return 1 if findings else 0


def check_code(path, code):
    """Crates used outside their home, and storage named from a front."""
    out = []
    for crate, allowed, what in CRATE_HOMES:
        for m in re.finditer(crate, code):
            if not re.search(allowed, path):
                out.append(f"{path}:{code.count(chr(10), 0, m.start()) + 1}: {what}")
    if FRONTS.match(path):
        for m in STORAGE_CALL.finditer(code):
            out.append(f"{path}:{code.count(chr(10), 0, m.start()) + 1}: a front calls a storage "
                       "operation; http/ and cli/ call signin:: or a use case")
    return out


def check_tests():
    """Tests drive the binary, HTTP or the storage API, never the SQLite file itself."""
    out = []
    for dirpath, _, names in os.walk(os.path.join(ROOT, "tests")):
        if "node_modules" in dirpath:
            continue
        for name in names:
            if not name.endswith(".rs"):
                continue
            path = os.path.relpath(os.path.join(dirpath, name), ROOT)
            with open(os.path.join(ROOT, path), encoding="utf-8") as f:
                code = strip(f.read())
            for m in re.finditer(r"\b(rusqlite|r2d2_sqlite)::", code):
                line = code.count("\n", 0, m.start()) + 1
                out.append(f"{path}:{line}: a test reaches into SQLite; use the binary "
                           "(`tessera` commands), HTTP or `tessera::db::Db`")
    return out


if __name__ == "__main__":
    sys.exit(main())
