"""Every function spacy_elmo registers with spaCy is reachable through an entry point.

A config naming ``spacy_elmo.scalar_mix.v1`` (or any other of our names) must resolve in a
process that never imported ``spacy_elmo``, as ``spacy train`` does. This test lists what the
package registers (importing it here), then asks a fresh interpreter to load each name from
the installed entry points alone, with ``Registry.get_entry_point`` (which does not consult
what is already registered in memory).
"""

import importlib
import json
import pkgutil
import subprocess
import sys

from spacy.util import registry

import spacy_elmo

PREFIX = "spacy_elmo"
SKIP_MODULES = {"spacy_elmo.__main__"}  # runs the CLI when imported


def import_every_module() -> None:
    """Registration happens at import: import all of spacy_elmo so nothing is missed."""
    for info in pkgutil.walk_packages(spacy_elmo.__path__, PREFIX + "."):
        if info.name not in SKIP_MODULES:
            importlib.import_module(info.name)


def our_registered_names() -> dict[str, list[str]]:
    """{registry name: [function names]} for every function defined in spacy_elmo."""
    import_every_module()
    found: dict[str, list[str]] = {}
    for reg_name in registry.get_registry_names():
        reg = getattr(registry, reg_name)
        for name, func in reg.get_all().items():
            module = getattr(func, "__module__", "") or ""
            if name.startswith(PREFIX + ".") or module.startswith(PREFIX):
                found.setdefault(reg_name, []).append(name)
    return found


CHILD = r"""
import json, sys
from spacy.util import registry
wanted = json.loads(sys.argv[1])
assert "spacy_elmo" not in sys.modules, "spacy_elmo imported before the check"
result = {}
for reg_name, names in wanted.items():
    # spaCy keeps component factories from entry points in a registry of their own
    reg = registry._entry_point_factories if reg_name == "factories" else getattr(registry, reg_name)
    for name in names:
        func = reg.get_entry_point(name)
        result[reg_name + ":" + name] = None if func is None else func.__module__ + "." + func.__qualname__
print(json.dumps(result))
"""


def test_every_registered_function_has_an_entry_point():
    wanted = our_registered_names()
    assert "spacy_elmo.scalar_mix.v1" in wanted.get("layers", [])
    assert "spacy_elmo.BiLM.v1" in wanted.get("architectures", [])
    assert "elmo" in wanted.get("factories", [])
    out = subprocess.run(
        [sys.executable, "-c", CHILD, json.dumps(wanted)], capture_output=True, text=True, check=True
    ).stdout
    resolved = json.loads(out.strip().splitlines()[-1])
    missing = sorted(key for key, target in resolved.items() if target is None)
    assert not missing, f"registered but without an entry point in pyproject.toml: {missing}"
    for reg_name, names in wanted.items():
        for name in names:
            func = getattr(registry, reg_name).get(name)
            assert resolved[f"{reg_name}:{name}"] == f"{func.__module__}.{func.__qualname__}"
