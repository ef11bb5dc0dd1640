#!/usr/bin/env python3
"""The SQL reference (docs/reference.yaml) against the module it documents:
    - it names exactly the tables (modules), functions, kafka_log options and
      every table's columns and hidden columns that the module registers,
      read from the module itself (pragma_module_list, pragma_function_list,
      pragma_table_xinfo, and the option list of the unknown-option error);
    - each of them has an example: a table and a function one of their own,
      an option one naming it, a column one of its table's examples naming
      it (a SELECT * names every column that is not hidden);
    - every example prints what the source records (tools/gen_reference.py
      --record writes it), its error included;
    - docs/reference.md is what tools/gen_reference.py makes of the source.
    tests/hosts/reference.py <path of kafkalog.so, without or with .so>"""
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools"))
import gen_reference as ref_tool  # noqa: E402

root = ref_tool.ROOT
module = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(root, "build", "kafkalog"))
module = module[:-3] if module.endswith(".so") else module
failures = 0


def report(ok, what, details=()):
    global failures
    print(("ok   " if ok else "FAIL ") + what)
    for d in details:
        print("     " + str(d).replace("\n", "\n     "))
    failures += not ok


def query(sql):
    r = subprocess.run(["sqlite3", "-batch", "-cmd", ".load " + module, ":memory:"], input=sql,
                       cwd=root, capture_output=True, text=True, timeout=60)
    return r.stdout, r.stderr


def rows(sql):
    out, err = query(sql)
    if err:
        raise RuntimeError(f"{sql}: {err}")
    return [line.split("|") for line in out.splitlines()]


ref = ref_tool.load()

# ---------------------------------------------------------------- what the module registers
modules = [r[0] for r in rows("SELECT name FROM pragma_module_list WHERE name LIKE 'kafka%' ORDER BY 1;")]
functions = sorted({r[0] for r in rows(
    "SELECT name FROM pragma_function_list WHERE builtin = 0 AND name LIKE 'kafka%';")})
_, err = query("CREATE VIRTUAL TABLE t USING kafka_log('tests/fixtures/a-tiny/orders-0', no_such_option=1);")
m = re.search(r"the options are ([a-z_, ]+)\)", err)
options = sorted(m.group(1).split(", ")) if m else []
report(bool(modules) and bool(functions) and bool(options),
       f"the module registers {len(modules)} tables, {len(functions)} functions, "
       f"{len(options)} kafka_log options", [] if options else [f"no option list in: {err.strip()}"])


def compare(kind, code, source):
    missing = sorted(set(code) - set(source))
    extra = sorted(set(source) - set(code))
    details = ([f"registered but not in docs/reference.yaml: {', '.join(missing)}"] if missing else []) + \
              ([f"in docs/reference.yaml but not registered: {', '.join(extra)}"] if extra else [])
    report(not details, f"the reference names every {kind} the module registers, and no other "
           f"({len(source)})", details)


tables = {t["name"]: t for t in ref["tables"]}
compare("table", modules, list(tables))
compare("function", functions, [f["name"] for f in ref["functions"]])
compare("kafka_log option", options, [o["name"] for o in ref["options"]])

ncols = nhidden = 0
for name in modules:
    t = tables.get(name)
    if t is None:
        continue
    got = [(r[0], r[1], int(r[2])) for r in rows(
        f"SELECT name, type, hidden FROM pragma_table_xinfo('{name}');")]
    want = [(c["name"], c.get("type", ""), 0) for c in t["columns"]] + \
           [(c["name"], "", 1) for c in t.get("hidden", [])]
    ncols += len(t["columns"])
    nhidden += len(t.get("hidden", []))
    diff = [f"the module: {g}" for g in got if g not in want] + [f"the reference: {w}" for w in want if w not in got]
    if not diff and got != want:
        diff = ["the same columns in another order: the reference lists them as the table declares them"]
    report(not diff, f"{name}: the reference's {len(t['columns'])} columns and "
           f"{len(t.get('hidden', []))} hidden columns are the table's (name, type, hidden)", diff)

# ---------------------------------------------------------------- an example for each
by_where = {}
for where, sql, _, _ in ref_tool.examples(ref):
    by_where.setdefault(where, []).append(sql)


def words(sqls):
    return set(re.findall(r"[A-Za-z_][A-Za-z_0-9]*", " ".join(sqls)))


for name, t in tables.items():
    sqls = by_where.get("table " + name, [])
    w = words(sqls)
    star = any(re.search(r"SELECT\s+\*\s+FROM\s+" + name + r"\b", s) for s in sqls)
    unnamed = [c["name"] for c in t["columns"] if c["name"] not in w and not star]
    opt_words = words(sum((by_where.get("option " + h["name"], []) for h in t.get("hidden", [])), []))
    unnamed += [h["name"] + " (hidden)" for h in t.get("hidden", [])
                if h["name"] not in w and not (name == "kafka_log" and h["name"] in opt_words)]
    ok = bool(sqls) and not unnamed
    report(ok, f"{name}: {len(sqls)} examples, every column shown by one",
           ([] if sqls else ["no example"]) + ([f"no example shows: {', '.join(unnamed)}"] if unnamed else []))
for f in ref["functions"]:
    sqls = by_where.get("function " + f["name"], [])
    ok = any(re.search(r"\b" + f["name"] + r"\s*\(", s) for s in sqls)
    report(ok, f"{f['name']}(): an example calls it")
for o in ref["options"]:
    sqls = by_where.get("option " + o["name"], [])
    ok = o["name"] in words(sqls)
    report(ok, f"option {o['name']}: an example gives it")

# ---------------------------------------------------------------- every example prints what is recorded
n = bad = 0
for where, sql, want_out, want_err in ref_tool.examples(ref):
    n += 1
    out, err, _ = ref_tool.run(module, sql)
    problems = []
    if out != (want_out or ""):
        problems.append("printed:\n" + out + "recorded:\n" + (want_out or ""))
    if err != (want_err or ""):
        problems.append("error:\n" + err + "recorded:\n" + (want_err or ""))
    if problems:
        bad += 1
        report(False, f"{where}: example {sql.splitlines()[0][:70]}", problems)
report(bad == 0, f"{n - bad} of {n} examples print what docs/reference.yaml records")

# ---------------------------------------------------------------- the markdown is the source's
with open(ref_tool.TARGET, encoding="utf-8") as fh:
    current = fh.read() == ref_tool.render(ref)
report(current, "docs/reference.md is what tools/gen_reference.py makes of docs/reference.yaml",
       [] if current else ["run tools/gen_reference.py"])
print(f"reference: {len(tables)} tables, {ncols} columns, {nhidden} hidden columns, "
      f"{len(ref['options'])} options, {len(ref['functions'])} functions, {n} examples")
sys.exit(1 if failures else 0)
