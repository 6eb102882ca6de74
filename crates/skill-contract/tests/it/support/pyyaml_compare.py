"""Compares YAML files with the JSON they were written from, as PyYAML (a YAML 1.1 reader) reads them.

Usage: python pyyaml_compare.py FOLDER  — for every NAME.json in FOLDER, NAME.yaml must load with
yaml.safe_load to the same value, with the same types and key order. Prints one line per difference
and "checked N, M differ"; exits 1 when any differ.
"""
import json, math, pathlib, sys, yaml

def same(a, b, at="$"):
    if type(a) is not type(b):
        return f"{at}: {type(a).__name__} {a!r} vs {type(b).__name__} {b!r}"
    if isinstance(a, dict):
        if list(a) != list(b):
            return f"{at}: keys {list(a)} vs {list(b)}"
        for k in a:
            problem = same(a[k], b[k], f"{at}.{k}")
            if problem:
                return problem
        return None
    if isinstance(a, list):
        if len(a) != len(b):
            return f"{at}: length {len(a)} vs {len(b)}"
        for i, (x, y) in enumerate(zip(a, b)):
            problem = same(x, y, f"{at}[{i}]")
            if problem:
                return problem
        return None
    if isinstance(a, float) and (math.copysign(1, a) != math.copysign(1, b) or a != b):
        return f"{at}: {a!r} vs {b!r}"
    return None if a == b else f"{at}: {a!r} vs {b!r}"

folder = pathlib.Path(sys.argv[1])
failures = 0
count = 0
for expected_path in sorted(folder.glob("*.json")):
    count += 1
    yaml_path = expected_path.with_suffix(".yaml")
    expected = json.loads(expected_path.read_text(encoding="utf-8"))
    try:
        loaded = yaml.safe_load(yaml_path.read_text(encoding="utf-8"))
    except yaml.YAMLError as error:
        failures += 1
        print(f"{yaml_path.name}: PyYAML cannot read it: {error}")
        continue
    problem = same(loaded, expected)
    if problem:
        failures += 1
        print(f"{yaml_path.name}: {problem}")
print(f"checked {count}, {failures} differ")
sys.exit(1 if failures else 0)
