"""Regenerate src/wattsched/slurm/rest_models.py from the kept slurmrestd OpenAPI spec (a dev-time step).

    python scripts/generate-slurmrestd-models.py    # needs datamodel-code-generator (pip install it)

Only the schemas the REST client reads are kept (the job, node and ping responses, the job update
response, and every schema they refer to), renamed without the dots of ``v0.0.45_`` (which the generator
takes for modules), then given to ``datamodel-codegen``; its output is then put in the repository's style
(``ruff check --fix``, ``ruff format``). The spec itself comes from the release's slurmrestd:

    slurmrestd -s openapi/slurmctld -d data_parser/v0.0.45 --generate-openapi-spec > SPEC
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent
SPEC = HERE / "src/wattsched/slurm/data/openapi/slurmctld-26.05-v0.0.45.json"
OUTPUT = HERE / "src/wattsched/slurm/rest_models.py"
PREFIX = "v0.0.45_"
WANTED = (
    "openapi_job_info_resp",
    "openapi_nodes_resp",
    "openapi_ping_array_resp",
    "openapi_job_post_response",
)


def main() -> int:
    spec = json.loads(SPEC.read_text(encoding="utf-8"))
    schemas = spec["components"]["schemas"]
    kept: dict[str, object] = {}
    todo = [PREFIX + name for name in WANTED]
    while todo:
        name = todo.pop()
        if name in kept:
            continue
        kept[name] = schemas[name]
        text = json.dumps(schemas[name])
        todo += [ref.split('"')[0] for ref in text.split('"#/components/schemas/')[1:]]
    text = json.dumps({"components": {"schemas": kept}})
    text = text.replace(f"#/components/schemas/{PREFIX}", "#/components/schemas/")
    small = {"openapi": "3.0.3", "info": spec["info"], "paths": {}, **json.loads(text)}
    small["components"]["schemas"] = {
        k.removeprefix(PREFIX): v for k, v in small["components"]["schemas"].items()
    }
    with tempfile.TemporaryDirectory() as scratch:
        source = Path(scratch) / "spec.json"
        source.write_text(json.dumps(small), encoding="utf-8")
        header = (
            f"slurmrestd {spec['info']['version']} (data_parser/{PREFIX.strip('_')}) response models: made\n"
            "by scripts/generate-slurmrestd-models.py from the spec in data/openapi/"
        )
        done = subprocess.run(
            [
                "datamodel-codegen",
                "--input",
                str(source),
                "--input-file-type",
                "openapi",
                "--output",
                str(OUTPUT),
                "--output-model-type",
                "pydantic_v2.BaseModel",
                "--target-python-version",
                "3.11",
                "--use-annotated",
                "--use-standard-collections",
                "--use-union-operator",
                "--disable-timestamp",
                "--custom-file-header",
                f'"""{header}; do not edit."""',
                "--formatters",
                "ruff-format",
            ],
            check=False,
        )
    if done.returncode != 0:
        return done.returncode
    for style in (["check", "--fix", "--quiet"], ["format", "--quiet"]):
        subprocess.run(["ruff", *style, str(OUTPUT)], check=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
