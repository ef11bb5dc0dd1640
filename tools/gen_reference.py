#!/usr/bin/env python3
"""docs/reference.md from docs/reference.yaml, the one source of the SQL
reference: every table (module) with its columns and hidden columns, every
option of kafka_log, every function, each with examples whose output the
source records.

    tools/gen_reference.py                 write docs/reference.md
    tools/gen_reference.py --check         exit 1 when docs/reference.md is not what the source gives
    tools/gen_reference.py --record MODULE run every example with MODULE (build/kafkalog) loaded,
                                           write what each printed into the source, then reference.md

--record rewrites docs/reference.yaml in the form it reads it (a new
example's output is filled in, a changed one replaced): review its diff.
tests/hosts/reference.py runs the examples against the recorded outputs and
checks that the source names everything the module registers.

An example runs from the repository root in the sqlite3 shell, in its
default list mode (columns separated by |, NULL as nothing, no headers),
with SCRATCH, a directory made empty for each example, for examples that
write.  Only Debian's python3 and python3-yaml are needed."""
import os
import re
import shutil
import subprocess
import sys

import yaml

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
SOURCE = os.path.join(ROOT, "docs", "reference.yaml")
TARGET = os.path.join(ROOT, "docs", "reference.md")
SCRATCH = "/tmp/kafkalog-reference"


def load(path=SOURCE):
    with open(path, encoding="utf-8") as f:
        return yaml.safe_load(f)


# ---------------------------------------------------------------- examples

TEXT_FIELDS = ("intro", "options_intro", "description", "doc", "text")
INLINE = re.compile(r"```sql\n(.*?)```\n(?:\s*\n)*(?:```text\n(.*?)```\n)?", re.S)


def _entries(ref):
    """(where, entry) for the source itself, every table, option, function and chapter."""
    yield "the introduction", ref
    for t in ref["tables"]:
        yield "table " + t["name"], t
    for o in ref["options"]:
        yield "option " + o["name"], o
    for f in ref["functions"]:
        yield "function " + f["name"], f
    for c in ref.get("chapters", []):
        yield "chapter " + c["title"], c


def examples(ref):
    """Every example of the source, in source order: (where, sql, recorded output).
    An example is an entry of an `examples` list (sql, output) or a ```sql
    block in a text, followed by the ```text block of its output."""
    for where, e in _entries(ref):
        for k in TEXT_FIELDS:
            if k in e and isinstance(e[k], str):
                for m in INLINE.finditer(e[k]):
                    yield where, m.group(1), m.group(2) or "", None
        for x in e.get("examples", []):
            yield where, x["sql"], x.get("output", ""), x.get("error")


def run(module, sql):
    """What the sqlite3 shell prints for sql with module loaded: (stdout, stderr, exit status)."""
    shutil.rmtree(SCRATCH, ignore_errors=True)
    os.mkdir(SCRATCH)
    try:
        r = subprocess.run(["sqlite3", "-batch", "-cmd", ".load " + module, ":memory:"], input=sql,
                           cwd=ROOT, capture_output=True, text=True, timeout=120)
    finally:
        shutil.rmtree(SCRATCH, ignore_errors=True)
    # Paths under the repository print as the examples name them, relative
    # to it, wherever the clone is.
    return r.stdout.replace(ROOT + "/", ""), r.stderr.replace(ROOT + "/", ""), r.returncode


# ---------------------------------------------------------------- markdown

def anchor(kind, name):
    return f'<a id="{kind}-{name}"></a>' if kind else f'<a id="{name}"></a>'


def cell(text):
    return " ".join(str(text).split()).replace("|", "\\|")


def render_examples(out, exs):
    for e in exs:
        if e.get("title"):
            out.append(e["title"].strip() + "\n")
        out.append("```sql\n" + e["sql"].rstrip("\n") + "\n```\n")
        if e.get("output"):
            out.append("```text\n" + e["output"] + "```\n")
        elif e.get("error"):
            out.append("```text\n" + e["error"] + "```\n")
        else:
            out.append("(no rows)\n")
        if e.get("note"):
            out.append(e["note"].strip() + "\n")


def render_table(out, t):
    out.append(f"### {anchor('', t['name'])}`{t['name']}`\n")
    out.append(t["summary"].strip() + "\n")
    if t.get("signature"):
        out.append("`" + t["signature"] + "`\n")
    out.append("| column | type | meaning |\n|---|---|---|")
    for c in t["columns"]:
        out.append(f"| `{c['name']}` | {c.get('type', '')} | {cell(c['doc'])} |")
    out.append("")
    if t.get("hidden"):
        out.append("Hidden columns (arguments of the table-valued form, in this order, or `WHERE` "
                   "constraints):\n")
        out.append("| hidden column | meaning |\n|---|---|")
        for c in t["hidden"]:
            out.append(f"| `{c['name']}` | {cell(c['doc'])} |")
        out.append("")
    if t.get("description"):
        out.append(t["description"].strip() + "\n")
    render_examples(out, t.get("examples", []))


def render(ref):
    out = ["<!-- Generated by tools/gen_reference.py from docs/reference.yaml: edit that file. -->",
           "# " + ref["title"], "", ref["intro"].strip(), "", "Contents:", ""]
    out.append("- Tables: " + ", ".join(f"[`{t['name']}`](#{t['name']})" for t in ref["tables"]))
    out.append("- [Options of `kafka_log`](#options): " +
               ", ".join(f"[`{o['name']}`](#option-{o['name']})" for o in ref["options"]))
    out.append("- Functions: " + ", ".join(f"[`{f['name']}`](#{f['name']})" for f in ref["functions"]))
    if ref.get("chapters"):
        out.append("- Topics: " + ", ".join(f"[{c['title']}](#{c['id']})" for c in ref["chapters"]))
    out.append("")
    out.append("## Tables\n")
    for t in ref["tables"]:
        render_table(out, t)
    out.append(f"## {anchor('', 'options')}Options of `kafka_log`\n")
    out.append(ref["options_intro"].strip() + "\n")
    out.append("| option | values | default | given to |\n|---|---|---|---|")
    for o in ref["options"]:
        out.append(f"| [`{o['name']}`](#option-{o['name']}) | {cell(o['values'])} | "
                   f"{cell(o['default'])} | {cell(o['kept'])} |")
    out.append("")
    for o in ref["options"]:
        out.append(f"### {anchor('option', o['name'])}`{o['name']}`\n")
        out.append(o["doc"].strip() + "\n")
        render_examples(out, o.get("examples", []))
    out.append("## Functions\n")
    for f in ref["functions"]:
        out.append(f"### {anchor('', f['name'])}`{f['signature']}`\n")
        out.append(f["doc"].strip() + "\n")
        render_examples(out, f.get("examples", []))
    for c in ref.get("chapters", []):
        out.append(f"## {anchor('', c['id'])}{c['title']}\n")
        out.append(c["text"].strip() + "\n")
        render_examples(out, c.get("examples", []))
    return "\n".join(out).rstrip("\n") + "\n"


# ---------------------------------------------------------------- the source's own form

class _Dumper(yaml.SafeDumper):
    pass


def _str(dumper, s):
    style = "|" if "\n" in s else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", s, style=style)


_Dumper.add_representer(str, _str)


def dump(ref):
    header = ("# The SQL reference of kafkalog, its one source: tools/gen_reference.py makes\n"
              "# docs/reference.md from it, tests/hosts/reference.py runs every example and checks\n"
              "# that everything the module registers is here.  Outputs are recorded with\n"
              "# tools/gen_reference.py --record build/kafkalog.\n")
    return header + yaml.dump(ref, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=100)


def record(module):
    ref = load()
    n = 0

    def printed(where, sql):
        out, err, rc = run(module, sql)
        if err or rc:
            print(f"{where}: {sql.splitlines()[0][:60]}: {err.strip() or rc}", file=sys.stderr)
        return out, (err or f"exit status {rc}\n") if (err or rc) else None

    for where, e in _entries(ref):
        for k in TEXT_FIELDS:
            if k in e and isinstance(e[k], str):
                def block(m):
                    nonlocal n
                    n += 1
                    out, _ = printed(where, m.group(1))
                    shown = f"```text\n{out}```\n" if out else "\n"
                    return f"```sql\n{m.group(1)}```\n" + shown
                e[k] = INLINE.sub(block, e[k])
        for x in e.get("examples", []):
            n += 1
            out, err = printed(where, x["sql"])
            x.pop("output", None)
            x.pop("error", None)
            if out:
                x["output"] = out
            if err:
                x["error"] = err
    with open(SOURCE, "w", encoding="utf-8") as f:
        f.write(dump(ref))
    print(f"recorded {n} examples")


def main(argv):
    if len(argv) >= 2 and argv[0] == "--record":
        module = os.path.abspath(argv[1])
        record(module)
    text = render(load())
    if argv[:1] == ["--check"]:
        with open(TARGET, encoding="utf-8") as f:
            if f.read() != text:
                print("docs/reference.md is not what docs/reference.yaml gives: run tools/gen_reference.py")
                return 1
        return 0
    with open(TARGET, "w", encoding="utf-8") as f:
        f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
