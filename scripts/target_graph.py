#!/usr/bin/env python3
"""The package's targets and their dependencies, as a Mermaid diagram made
from Package.swift (`swift package dump-package`), for docs/architecture.md.

usage: target_graph.py          print the diagram
       target_graph.py write    put it into docs/architecture.md between its markers
       target_graph.py check    fail if docs/architecture.md's diagram is not the current one
Test targets, samples and the fuzz targets are left out; C modules are the
rounded boxes at the bottom.
"""
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOC = os.path.join(ROOT, "docs", "architecture.md")
BEGIN = "<!-- target graph: made by scripts/target_graph.py write; do not edit by hand -->"
END = "<!-- end of target graph -->"


def diagram():
    package = json.loads(subprocess.run(["swift", "package", "dump-package"], capture_output=True, text=True,
                                        check=True, cwd=ROOT).stdout)
    products = {name for product in package["products"] for name in product.get("targets", [])}
    targets = [target for target in package["targets"]
               if target["type"] in ("regular", "executable", "system")
               and not target["name"].startswith("Fuzz")
               and (target["type"] != "executable" or target["name"] == "CarrierCLI")
               and target["name"] != "TestSupport"]
    names = {target["name"] for target in targets}
    lines = ["```mermaid", "graph TD"]
    for target in sorted(targets, key=lambda t: t["name"]):
        name = target["name"]
        shape = f"{name}([{name}])" if target["type"] == "system" else f"{name}[{name}]"
        lines.append(f"    {shape}")
    for target in sorted(targets, key=lambda t: t["name"]):
        for dependency in target.get("dependencies", []):
            other = next(iter(dependency.values()))[0]
            if other in names:
                lines.append(f"    {target['name']} --> {other}")
    lines.append("```")
    del products
    return "\n".join(lines)


def with_diagram(text, graph):
    start, end = text.index(BEGIN), text.index(END)
    return text[:start] + BEGIN + "\n" + graph + "\n" + text[end:]


def main():
    command = sys.argv[1] if len(sys.argv) > 1 else "print"
    graph = diagram()
    if command == "print":
        print(graph)
        return 0
    with open(DOC, encoding="utf-8") as handle:
        text = handle.read()
    if BEGIN not in text or END not in text:
        print(f"target graph: {DOC} has no markers", file=sys.stderr)
        return 1
    updated = with_diagram(text, graph)
    if command == "write":
        with open(DOC, "w", encoding="utf-8") as handle:
            handle.write(updated)
        return 0
    if command == "check":
        if updated != text:
            print("target graph: docs/architecture.md's diagram is stale; run python3 scripts/target_graph.py write")
            return 1
        print("target graph: current")
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
