"""deploy/: the files that run League on a Ray cluster stay valid and in step
with pyproject.toml.

Nothing here talks to a cluster or starts Ray. The cluster launcher YAML is
checked against the schema Ray itself ships (``ray/autoscaler/ray-schema.json``)
and Ray's own config checks; the runtime_env goes through Ray's
``RuntimeEnv`` validation. There are no KubeRay CRD schemas on this machine
(no network to fetch them), so the KubeRay manifests are checked for
structure and for the references between their documents instead: the Redis
URL points at the Service defined there, the password comes from the Secret
defined there, volumes name claims defined there.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import re
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import jsonschema
import pytest
import yaml
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parent.parent
DEPLOY = ROOT / "deploy"
KUBERAY = DEPLOY / "kuberay"
MAX_NODE_CPUS = 2.0
"""The manifests are sized for 2-core Kubernetes nodes."""


# ---- helpers -----------------------------------------------------------------------


def pyproject() -> dict[str, Any]:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def pyproject_requirements() -> dict[str, Requirement]:
    """Canonical name -> requirement for every pyproject dependency."""
    reqs = [Requirement(r) for r in pyproject()["project"]["dependencies"]]
    return {canonicalize_name(r.name): r for r in reqs}


def assert_pins_match(requirements: list[str], where: str) -> None:
    """Every pyproject dependency is there with the same specifier and extras,
    and nothing there pins another version of a pyproject dependency."""
    found: dict[str, Requirement] = {}
    for text in requirements:
        req = Requirement(text)
        name = canonicalize_name(req.name)
        assert name not in found or found[name].specifier == req.specifier, (
            f"{where}: {req.name} listed twice with different versions"
        )
        found[name] = req
    for name, wanted in pyproject_requirements().items():
        assert name in found, f"{where}: pyproject dependency {wanted} is missing"
        got = found[name]
        assert got.specifier == wanted.specifier, f"{where}: {got} but pyproject says {wanted}"
        assert got.extras == wanted.extras, f"{where}: {got} but pyproject says {wanted}"


_QUOTED_REQ = re.compile(
    r"""["']([A-Za-z0-9_.\-]+(?:\[[A-Za-z0-9_,\-]+\])?(?:[=<>~!]=?)[^"']+)["']"""
)


def quoted_requirements(text: str) -> list[str]:
    """Requirement strings written in quotes (as in a shell ``pip install`` line)."""
    return _QUOTED_REQ.findall(text)


def kuberay_docs(name: str) -> list[dict[str, Any]]:
    docs = list(yaml.safe_load_all((KUBERAY / name).read_text()))
    return [d for d in docs if d is not None]


def walk(node: Any) -> Iterator[dict[str, Any]]:
    """Every mapping inside ``node``, depth first."""
    if isinstance(node, dict):
        yield node
        for value in node.values():
            yield from walk(value)
    elif isinstance(node, list):
        for value in node:
            yield from walk(value)


def by_kind(docs: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [d for d in docs if d["kind"] == kind]


def one(docs: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    found = by_kind(docs, kind)
    assert len(found) == 1, f"expected one {kind}, found {len(found)}"
    return found[0]


def ray_cluster_spec(docs: list[dict[str, Any]]) -> dict[str, Any]:
    """The RayCluster spec of a manifest: a RayCluster's or a RayJob's."""
    for doc in docs:
        if doc["kind"] == "RayCluster":
            return doc["spec"]
        if doc["kind"] == "RayJob":
            return doc["spec"]["rayClusterSpec"]
    raise AssertionError("no RayCluster spec in the manifest")


def ray_containers(spec: dict[str, Any]) -> list[dict[str, Any]]:
    groups = [spec["headGroupSpec"], *spec.get("workerGroupSpecs", [])]
    return [c for g in groups for c in g["template"]["spec"]["containers"]]


def cpus(quantity: str | int | float) -> float:
    text = str(quantity)
    return float(text[:-1]) / 1000 if text.endswith("m") else float(text)


MANIFESTS = ["raycluster.yaml", "rayjob.yaml"]


# ---- cluster launcher ----------------------------------------------------------------


def cluster_config() -> dict[str, Any]:
    return yaml.safe_load((DEPLOY / "cluster.yaml").read_text())


def test_cluster_yaml_validates_against_rays_schema() -> None:
    import ray.autoscaler

    schema = json.loads((Path(ray.autoscaler.__file__).parent / "ray-schema.json").read_text())
    errors = sorted(
        jsonschema.Draft7Validator(schema).iter_errors(cluster_config()), key=lambda e: e.path
    )
    assert not errors, "\n".join(f"{list(e.path)}: {e.message}" for e in errors)


def test_cluster_yaml_passes_rays_own_config_checks() -> None:
    """What `ray up` does before launching: fill in the provider's defaults,
    then validate (head type exists, min_workers fit max_workers, ...)."""
    from ray.autoscaler._private.util import prepare_config, validate_config

    config = prepare_config(cluster_config())
    validate_config(config)
    types = config["available_node_types"]
    assert config["head_node_type"] in types
    gpu_types = [t for t, spec in types.items() if spec["resources"].get("GPU", 0) > 0]
    assert gpu_types, "expected an optional GPU learner node type"
    assert all(types[t].get("min_workers", 0) == 0 for t in gpu_types), "GPU node must be optional"


def test_cluster_yaml_installs_the_pinned_packages() -> None:
    config = cluster_config()
    assert_pins_match(quoted_requirements("\n".join(config["setup_commands"])), "setup_commands")
    for name, spec in config["available_node_types"].items():
        if "worker_setup_commands" in spec:  # replaces setup_commands on that type
            text = "\n".join(spec["worker_setup_commands"])
            assert_pins_match(quoted_requirements(text), f"{name}.worker_setup_commands")
    ray_pin = str(pyproject_requirements()["ray"].specifier).removeprefix("==")
    assert config["docker"]["image"].startswith(f"rayproject/ray:{ray_pin}-py311")


# ---- runtime_env ---------------------------------------------------------------------


def runtime_env() -> dict[str, Any]:
    return yaml.safe_load((DEPLOY / "runtime_env.yaml").read_text())


def test_runtime_env_is_valid_for_ray() -> None:
    from ray.runtime_env import RuntimeEnv

    env = RuntimeEnv(**runtime_env())
    assert env.get("pip")["packages"]
    assert "working_dir" not in runtime_env(), "the working dir comes from --working-dir ."


def test_runtime_env_pins_match_pyproject() -> None:
    pip = runtime_env()["pip"]
    packages = pip["packages"] if isinstance(pip, dict) else pip
    assert_pins_match(packages, "runtime_env.yaml pip")
    # The project is shipped by --working-dir, not pip-installed (see the file).
    assert not any(p.strip().startswith(("-e", ".")) for p in packages)


# ---- Dockerfile ----------------------------------------------------------------------


def dockerfile() -> str:
    return (DEPLOY / "Dockerfile").read_text()


def test_dockerfile_pins_match_pyproject() -> None:
    assert_pins_match(quoted_requirements(dockerfile()), "Dockerfile")


def test_dockerfile_base_entrypoint_and_project() -> None:
    text = dockerfile()
    assert re.search(r"^FROM python:3\.11-slim\b", text, re.M)
    assert ">=3.11" in pyproject()["project"]["requires-python"]
    entrypoints = re.findall(r"^ENTRYPOINT\s+(.+)$", text, re.M)
    assert len(entrypoints) == 1
    assert json.loads(entrypoints[0]) == ["league"]
    scripts = pyproject()["project"]["scripts"]
    assert "league" in scripts
    # Every package pyproject ships is copied into the image and installed.
    for package in pyproject()["tool"]["setuptools"]["packages"]["find"]["include"]:
        top = package.rstrip("*")
        assert re.search(rf"^COPY\s+{top}\s", text, re.M), f"{top}/ is not copied"
    assert re.search(r"pip install --no-deps \.", text)


# ---- KubeRay -------------------------------------------------------------------------


@pytest.mark.parametrize("name", MANIFESTS)
def test_manifest_documents_are_well_formed(name: str) -> None:
    docs = kuberay_docs(name)
    assert docs
    seen = set()
    for doc in docs:
        assert isinstance(doc, dict)
        assert doc.get("apiVersion") and doc.get("kind"), doc
        assert doc.get("metadata", {}).get("name"), f"{doc['kind']} without metadata.name"
        key = (doc["kind"], doc["metadata"]["name"])
        assert key not in seen, f"{key} defined twice"
        seen.add(key)
    for kind in ("Secret", "Deployment", "Service"):
        assert by_kind(docs, kind), f"{name}: no {kind}"
    ray_docs = [d for d in docs if d["kind"] in ("RayCluster", "RayJob")]
    assert ray_docs and all(d["apiVersion"] == "ray.io/v1" for d in ray_docs)


@pytest.mark.parametrize("name", MANIFESTS)
def test_ray_version_matches_the_pin(name: str) -> None:
    ray_pin = str(pyproject_requirements()["ray"].specifier).removeprefix("==")
    assert ray_cluster_spec(kuberay_docs(name))["rayVersion"] == ray_pin


def test_rayjob_runs_league_train_on_the_cluster() -> None:
    job = one(kuberay_docs("rayjob.yaml"), "RayJob")
    entrypoint = job["spec"]["entrypoint"]
    assert re.match(r"^league train\b", entrypoint)
    assert "--address auto" in entrypoint, "without it `league train` starts a local Ray"
    assert "--store" in entrypoint
    if "$" in entrypoint:
        # Only the head's shell has the Secret's value; K8sJobMode's submitter
        # pod would expand the variable to an empty string.
        assert job["spec"].get("submissionMode") == "HTTPMode"
    head_env = {
        e["name"]
        for e in ray_cluster_spec([job])["headGroupSpec"]["template"]["spec"]["containers"][0][
            "env"
        ]
    }
    for var in re.findall(r"\$\{?([A-Z_][A-Z0-9_]*)", entrypoint):
        assert var in head_env, f"entrypoint uses ${var}, which the head container lacks"


def _redis(docs: list[dict[str, Any]]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The Redis Deployment and the Service in front of it."""
    deployment = one(docs, "Deployment")
    labels = deployment["spec"]["template"]["metadata"]["labels"]
    assert deployment["spec"]["selector"]["matchLabels"].items() <= labels.items()
    services = [
        s for s in by_kind(docs, "Service") if s["spec"]["selector"].items() <= labels.items()
    ]
    assert len(services) == 1, "exactly one Service must select the Redis pods"
    return deployment, services[0]


def _service_port(service: dict[str, Any], deployment: dict[str, Any]) -> int:
    (port,) = service["spec"]["ports"]
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    named = {p.get("name"): p["containerPort"] for p in container["ports"]}
    target = port.get("targetPort", port["port"])
    assert target in named or target in named.values(), "Service targets no Redis port"
    return int(port["port"])


@pytest.mark.parametrize("name", MANIFESTS)
def test_redis_urls_point_at_the_redis_service(name: str) -> None:
    docs = kuberay_docs(name)
    deployment, service = _redis(docs)
    host, port = service["metadata"]["name"], _service_port(service, deployment)
    spec = ray_cluster_spec(docs)

    # League store: redis://:$(REDIS_PASSWORD)@<service>:<port>/<db> on the head.
    urls = [
        env["value"]
        for node in walk(spec)
        for env in node.get("env", [])
        if isinstance(env, dict) and str(env.get("value", "")).startswith(("redis://", "rediss://"))
    ]
    assert urls, "no redis:// store URL in the Ray pods' env"
    for url in urls:
        parts = urlsplit(url)
        assert (parts.hostname, parts.port) == (host, port), url
        assert parts.path.strip("/") not in ("", "0"), "league store must not share GCS's db 0"

    # GCS fault tolerance: gcsFaultToleranceOptions (or the annotation + env).
    ft = spec.get("gcsFaultToleranceOptions")
    if ft is not None:
        address = ft["redisAddress"].split("://")[-1]
    else:
        ray_cluster = one(docs, "RayCluster")
        assert ray_cluster["metadata"]["annotations"]["ray.io/ft-enabled"] == "true"
        head = ray_containers(spec)[0]
        address = next(e["value"] for e in head["env"] if e["name"] == "RAY_REDIS_ADDRESS")
    assert address == f"{host}:{port}"


@pytest.mark.parametrize("name", MANIFESTS)
def test_the_secret_is_used_wherever_the_password_is(name: str) -> None:
    docs = kuberay_docs(name)
    secret = one(docs, "Secret")
    keys = set(secret.get("stringData", {})) | set(secret.get("data", {}))
    assert "password" in keys
    refs = [n["secretKeyRef"] for n in walk(docs) if "secretKeyRef" in n]
    assert refs
    for ref in refs:
        assert ref["name"] == secret["metadata"]["name"] and ref["key"] in keys, ref

    def password_env(container: dict[str, Any]) -> str:
        """Name of the env var holding the Secret's password (defined first)."""
        for env in container.get("env", []):
            ref = env.get("valueFrom", {}).get("secretKeyRef")
            if ref and ref["name"] == secret["metadata"]["name"]:
                return env["name"]
        raise AssertionError(f"container {container['name']} does not read the Secret")

    # Redis requires that password ...
    deployment, _ = _redis(docs)
    redis = deployment["spec"]["template"]["spec"]["containers"][0]
    var = password_env(redis)
    args = redis.get("args", []) + redis.get("command", [])
    assert args[args.index("--requirepass") + 1] == f"$({var})"

    # ... the head's store URL is built from it (Kubernetes expands $(VAR)
    # only for variables defined earlier in the same list) ...
    spec = ray_cluster_spec(docs)
    for container in ray_containers(spec):
        env = container.get("env", [])
        for i, entry in enumerate(env):
            if str(entry.get("value", "")).startswith("redis://"):
                var = password_env(container)
                assert f":$({var})@" in entry["value"]
                assert var in [e["name"] for e in env[:i]], f"{var} must be defined before use"

    # ... and GCS fault tolerance reads it from the Secret, not from the file.
    ft = spec.get("gcsFaultToleranceOptions")
    if ft is not None:
        ref = ft["redisPassword"]["valueFrom"]["secretKeyRef"]
        assert ref["name"] == secret["metadata"]["name"]


@pytest.mark.parametrize("name", MANIFESTS)
def test_volumes_name_claims_defined_in_the_manifest(name: str) -> None:
    docs = kuberay_docs(name)
    claims = {d["metadata"]["name"] for d in by_kind(docs, "PersistentVolumeClaim")}
    used = [
        n["persistentVolumeClaim"]["claimName"] for n in walk(docs) if "persistentVolumeClaim" in n
    ]
    assert used and set(used) <= claims


@pytest.mark.parametrize("name", MANIFESTS)
def test_pods_fit_two_core_nodes(name: str) -> None:
    spec = ray_cluster_spec(kuberay_docs(name))
    for container in ray_containers(spec):
        resources = container["resources"]
        request = cpus(resources["requests"]["cpu"])
        assert 0 < request < MAX_NODE_CPUS, "leave room for the node's own daemons"
        assert cpus(resources["limits"]["cpu"]) <= MAX_NODE_CPUS
        assert resources["requests"]["memory"] == resources["limits"]["memory"]
    groups = [spec["headGroupSpec"], *spec.get("workerGroupSpecs", [])]
    for group in groups:
        assert float(group["rayStartParams"].get("num-cpus", MAX_NODE_CPUS)) <= MAX_NODE_CPUS


def test_shared_documents_are_identical_in_both_manifests() -> None:
    """Applying both files in one namespace updates the same Redis, Secret and
    volumes; they must not disagree (one would silently win)."""
    cluster = {(d["kind"], d["metadata"]["name"]): d for d in kuberay_docs("raycluster.yaml")}
    job = {(d["kind"], d["metadata"]["name"]): d for d in kuberay_docs("rayjob.yaml")}
    shared = set(cluster) & set(job)
    assert {k for k, _ in shared} >= {"Secret", "Deployment", "Service", "PersistentVolumeClaim"}
    for key in shared:
        assert cluster[key] == job[key], f"{key} differs between the two manifests"


# ---- flags and config keys named in deploy/ and the README exist --------------------

TRAIN_COMMAND = re.compile(
    r"league(?:\.cli)? train\b|scripts/(?:submit_job|train)\.sh\b(?:[^\n]*?\s--(?=\s))?"
)
FLAG = re.compile(r"(?<![\w-])--[a-z][a-z0-9.-]*")


def _command_lines(text: str) -> list[str]:
    """Lines without a leading comment marker (commands are often in comments)."""
    return [re.sub(r"^\s*#+ ?", "", line) for line in text.splitlines()]


def train_commands(text: str) -> list[str]:
    """Each `league train ...` command in a text, from `league train` (or a script that
    passes its arguments on) to its end: lines continue after a trailing backslash, and
    on a next line that starts with a flag (YAML folded scalars)."""
    lines = _command_lines(text)
    commands = []
    for i, line in enumerate(lines):
        for match in TRAIN_COMMAND.finditer(line):
            parts = [line[match.end() :]]
            j = i
            while j + 1 < len(lines) and (
                lines[j].rstrip().endswith("\\") or lines[j + 1].lstrip().startswith("--")
            ):
                j += 1
                parts.append(lines[j])
            commands.append(" ".join(parts))
    return commands


def train_flags() -> set[str]:
    from league.cli import build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return {s for action in sub.choices["train"]._actions for s in action.option_strings}


DOCUMENTED = [
    *sorted(p.relative_to(ROOT).as_posix() for p in DEPLOY.rglob("*") if p.is_file()),
    "README.md",
    *sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "docs").glob("*.md")),
]


@pytest.mark.parametrize("name", DOCUMENTED)
def test_every_league_train_flag_named_exists(name: str) -> None:
    known = train_flags()
    text = (ROOT / name).read_text()
    named = {flag for command in train_commands(text) for flag in FLAG.findall(command)}
    # Flags of `ray job submit` before the `--` that hands over to league train are
    # not in `train_commands` (the command starts after it).
    unknown = sorted(named - known)
    assert not unknown, f"{name} names flags `league train` does not have: {unknown}"


def test_the_flag_extraction_sees_the_commands() -> None:
    """The extraction is not vacuous: it finds the deploy files', the docs' and README's flags."""
    rayjob = train_commands((KUBERAY / "rayjob.yaml").read_text())
    assert any("--stop-minutes" in c and "--store" in c for c in rayjob)  # folded YAML
    cluster = " ".join(train_commands((ROOT / "docs" / "cluster.md").read_text()))
    for flag in (
        "--resources.num-learners",
        "--resources.num-gpus-per-learner",
        "--resources.env-runner-resources",
    ):
        assert flag in cluster
    readme = " ".join(train_commands((ROOT / "README.md").read_text()))
    assert "--env-kwargs" in readme and "--stop-minutes" in readme
    assert "--no-such-flag" not in train_flags()
    assert FLAG.findall(train_commands("league train --bogus 1 \\\n  --run-dir x")[0]) == [
        "--bogus",
        "--run-dir",
    ]


def test_train_config_keys_named_in_deploy_exist() -> None:
    """Setting names in deploy/ (`num_gpus_per_learner`, ...) are TrainConfig fields."""
    from league.config import GROUPS, TrainConfig

    fields = {
        f.name
        for group in dataclasses.fields(TrainConfig)
        for f in dataclasses.fields(GROUPS[group.name])
    }
    named = set()
    for path in DEPLOY.rglob("*"):
        if path.is_file():
            words = re.findall(r"\b(?:num|env_runner)_[a-z_]+\b", path.read_text())
            named |= {w for w in words if "_per_" in w or w.startswith("num_learner")} | {
                w for w in words if w.startswith("env_runner_")
            }
    assert named, "expected deploy/ to name the learner settings it is sized for"
    assert named <= fields, sorted(named - fields)
