"""The named studies. Importing this package registers every study module that exists in it.

``table2`` lives here with the engine; ``dvfs``, ``table3`` and ``real_workloads`` are written by other
parts of the project and register themselves when their module is present.
"""

from __future__ import annotations

import importlib

__all__ = ["SECTION_MODULES", "STUDY_MODULES"]

#: Study modules, imported in this order; a module that does not exist (yet) is skipped.
STUDY_MODULES: tuple[str, ...] = ("table2", "table3", "dvfs", "real_workloads", "cluster")
#: Report sections drawn from the merged summary (registered in ``SUMMARY_SECTIONS``).
SECTION_MODULES: tuple[str, ...] = ("presets_section", "gpus_section")

for _name in (*STUDY_MODULES, *SECTION_MODULES):
    _module = f"{__name__}.{_name}"
    try:
        importlib.import_module(_module)
    except ModuleNotFoundError as _exc:
        if _exc.name != _module:  # a missing dependency inside an existing study is a real error
            raise
