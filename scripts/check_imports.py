#!/usr/bin/env python3
"""Fails when a target imports a module of this package that its entry in
Package.swift does not name: such an import compiles only while the module
comes in through another dependency, and hides the real graph.

usage: check_imports.py   (from the package root; reads `swift package dump-package`)
Prints each undeclared import as TARGET imports MODULE (FILE) and exits 1 if any.
"""
import json
import os
import re
import subprocess
import sys

IMPORT = re.compile(r"^\s*(?:@testable\s+|@_exported\s+)?import\s+(?:(?:struct|class|enum|func|protocol)\s+)?([A-Za-z_]\w*)", re.M)


def dependency_names(target):
    names = []
    for dependency in target.get("dependencies", []):
        for kind in ("byName", "target", "product"):
            if kind in dependency:
                names.append(dependency[kind][0])
    return names


def main():
    package = json.loads(subprocess.run(["swift", "package", "dump-package"], capture_output=True, text=True,
                                        check=True).stdout)
    targets = {target["name"]: target for target in package["targets"]}
    undeclared = []
    for name, target in sorted(targets.items()):
        if target["type"] == "system":
            continue
        directory = target.get("path") or os.path.join("Tests" if target["type"] == "test" else "Sources", name)
        declared = set(dependency_names(target)) | {name}
        for root, _, files in os.walk(directory):
            for file in sorted(files):
                if not file.endswith(".swift"):
                    continue
                path = os.path.join(root, file)
                with open(path, encoding="utf-8") as handle:
                    text = handle.read()
                for module in sorted(set(IMPORT.findall(text))):
                    if module in targets and module not in declared:
                        undeclared.append(f"{name} imports {module} ({path})")
    for line in undeclared:
        print(line)
    print(f"imports: {len(undeclared)} not declared in Package.swift" if undeclared else "imports: all declared")
    return 1 if undeclared else 0


if __name__ == "__main__":
    sys.exit(main())
