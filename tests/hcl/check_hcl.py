#!/usr/bin/env python3
"""Independent structural check of the HCL files csis emits.

Parses every .tf and .pkr.hcl file under the given directories with
python-hcl2 (not csis's own code) and checks, per directory (one OpenTofu
root or Packer template directory):

  * every file parses;
  * every `var.NAME` referenced is declared by a `variable` block there;
  * every local module source (./ or ../) exists relative to the directory;
  * every resource, data source, Packer source and backend type, and every
    argument and nested block used in it, is one the provider documents:
    the tables are in schema.json beside this file, each with where it
    comes from.

Prints one line per problem and exits 1 when there is any; exits 2 when
python-hcl2 is not installed. Usage: check_hcl.py DIR [DIR...]
"""

import json
import os
import re
import sys

try:
    import hcl2
except ImportError:
    print("python-hcl2 is not installed (pip install python-hcl2)", file=sys.stderr)
    sys.exit(2)

HERE = os.path.dirname(os.path.abspath(__file__))
VAR_REF = re.compile(r"\bvar\.([A-Za-z_][A-Za-z0-9_-]*)")
META_ARGS = {"count", "for_each", "depends_on", "provider", "lifecycle", "provisioner", "connection", "__is_block__"}


def unquote(s):
    return s[1:-1] if isinstance(s, str) and len(s) >= 2 and s[0] == s[-1] == '"' else s


def labelled(blocks, depth):
    """Yield (labels, body) of `depth`-labelled blocks as python-hcl2 nests them."""
    for entry in blocks or []:
        stack = [((), entry)]
        while stack:
            labels, node = stack.pop()
            if len(labels) == depth:
                yield labels, node
                continue
            for k, v in node.items():
                if k == "__is_block__":
                    continue
                stack.append((labels + (unquote(k),), v))


def check_body(kind, type_name, body, spec, where, problems):
    allowed_args = set(spec.get("arguments", []))
    blocks = spec.get("blocks", {})
    for key, value in body.items():
        if key in META_ARGS:
            continue
        if key in blocks:
            sub = blocks[key]
            for item in value if isinstance(value, list) else [value]:
                if isinstance(item, dict):
                    check_body(kind, f"{type_name}.{key}", item, sub, where, problems)
            continue
        if key not in allowed_args:
            problems.append(f"{where}: {kind} {type_name}: argument or block '{key}' is not documented (schema.json)")


def check_dir(directory, schema, problems):
    files = sorted(
        f for f in os.listdir(directory) if f.endswith(".tf") or f.endswith(".pkr.hcl")
    )
    if not files:
        return 0
    declared, referenced, parsed = set(), {}, []
    for name in files:
        path = os.path.join(directory, name)
        text = open(path, encoding="utf-8").read()
        try:
            doc = hcl2.loads(text)
        except Exception as e:  # the parser's own message
            problems.append(f"{path}: does not parse: {str(e).splitlines()[0]}")
            continue
        parsed.append((path, doc))
        for labels, _ in labelled(doc.get("variable"), 1):
            declared.add(labels[0])
        for m in VAR_REF.finditer(text):
            referenced.setdefault(m.group(1), path)
    for var, path in sorted(referenced.items()):
        if var not in declared:
            problems.append(f"{path}: var.{var} is referenced but no variable \"{var}\" is declared in {directory}")
    for path, doc in parsed:
        for labels, body in labelled(doc.get("module"), 1):
            source = unquote(body.get("source", ""))
            if source.startswith("./") or source.startswith("../"):
                if not os.path.isdir(os.path.normpath(os.path.join(directory, source))):
                    problems.append(f"{path}: module \"{labels[0]}\": source {source} does not exist relative to {directory}")
        for block, depth, table in (("resource", 2, "resource"), ("data", 2, "data"), ("source", 2, "packer_source")):
            for labels, body in labelled(doc.get(block), depth):
                spec = schema.get(table, {}).get(labels[0])
                if spec is None:
                    problems.append(f"{path}: {block} type '{labels[0]}' is not in schema.json")
                    continue
                check_body(block, labels[0], body, spec, path, problems)
        for terraform in doc.get("terraform", []) or []:
            for labels, body in labelled(terraform.get("backend"), 1):
                spec = schema.get("backend", {}).get(labels[0])
                if spec is None:
                    problems.append(f"{path}: backend type '{labels[0]}' is not in schema.json")
                else:
                    check_body("backend", labels[0], body, spec, path, problems)
    return len(files)


def main(argv):
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    schema = json.load(open(os.path.join(HERE, "schema.json"), encoding="utf-8"))
    problems, count = [], 0
    for top in argv[1:]:
        for directory, _, _ in sorted(os.walk(top)):
            count += check_dir(directory, schema, problems)
    for p in problems:
        print(p)
    print(f"checked {count} file(s): {len(problems)} problem(s)", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
