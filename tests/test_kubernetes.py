"""Kubernetes, offline: the DaskCluster erblock writes is what the operator accepts.

No Kubernetes cluster is needed. ``dask-kubernetes`` (in the ``test`` extra) provides the
reference: ``make_cluster_spec`` (what ``KubeCluster`` itself submits), the operator's
CustomResourceDefinition (its OpenAPI schema validates the resource as the API server
would) and the controller's builders (what the operator turns the resource into).
"""

from __future__ import annotations

import copy
import json
import os
from pathlib import Path

import jsonschema
import numpy as np
import pytest
import yaml

import erblock
from erblock.cli import main
from erblock.engine import kube

if os.environ.get("CI"):  # CI installs the test extra: a missing package is a failure
    import dask_kubernetes.operator as dk_operator
else:
    dk_operator = pytest.importorskip("dask_kubernetes.operator",
                                      reason="dask-kubernetes is in the test extra")

ROOT = Path(__file__).resolve().parents[1]
MANIFEST = ROOT / "deploy" / "kubernetes" / "daskcluster.yaml"


@pytest.fixture(scope="module")
def crd_schema() -> dict:
    """The openAPIV3Schema of the DaskCluster CRD shipped with dask-kubernetes."""
    import dask_kubernetes

    base = Path(dask_kubernetes.__file__).parent / "operator"
    candidates = [base / "deployment/helm/dask-kubernetes-operator/crds/daskcluster.yaml",
                  base / "customresources/daskcluster.yaml"]
    for path in candidates:
        if path.is_file():
            crd = yaml.safe_load(path.read_text())
            if crd.get("kind") == "CustomResourceDefinition":
                [version] = [v for v in crd["spec"]["versions"] if v["name"] == "v1"]
                assert crd["spec"]["names"]["kind"] == "DaskCluster"
                return version["schema"]["openAPIV3Schema"]
    pytest.fail(f"no DaskCluster CRD found under {base}")


def _validate(resource: dict, schema: dict) -> None:
    assert resource["apiVersion"] == "kubernetes.dask.org/v1"
    assert resource["kind"] == "DaskCluster"
    jsonschema.Draft7Validator(schema).validate(resource)


def _reference(spec: dict) -> dict:
    """``make_cluster_spec`` called with the settings read back from ``spec``."""
    worker = spec["spec"]["worker"]["spec"]["containers"][0]
    tail = ["--name", "$(DASK_WORKER_NAME)", "--dashboard", "--dashboard-address", "8788"]
    assert worker["args"][-len(tail):] == tail
    env = copy.deepcopy(worker["env"])  # make_cluster_spec takes the list form as it is
    return dk_operator.make_cluster_spec(
        spec["metadata"]["name"], image=worker["image"],
        n_workers=spec["spec"]["worker"]["replicas"], resources=worker["resources"], env=env,
        worker_command=" ".join(worker["args"][: -len(tail)]),
        idle_timeout=spec["spec"]["idleTimeout"])


@pytest.mark.parametrize("kwargs", [
    {},
    {"name": "er-big", "n_workers": 16, "threads": 4, "memory": "16Gi", "cpu": "3500m"},
    {"image": "registry.example.com/erblock:0.1.0", "memory": None, "env": {"A": "1"}},
    {"install": None, "n_workers": 0},
])
def test_cluster_spec_is_what_make_cluster_spec_writes_and_the_crd_accepts(kwargs, crd_schema):
    spec = kube.cluster_spec(**kwargs)
    assert spec == _reference(spec)
    _validate(spec, crd_schema)
    worker = spec["spec"]["worker"]["spec"]["containers"][0]
    args = worker["args"]
    assert args[args.index("--nthreads") + 1] == str(kwargs.get("threads", 2))
    if kwargs.get("memory", "4Gi") is not None:
        mem = kwargs.get("memory", "4Gi")
        assert worker["resources"]["limits"]["memory"] == mem
        assert args[args.index("--memory-limit") + 1] == mem.replace("Gi", "GiB")
    else:
        assert "--memory-limit" not in args
    env = {e["name"]: e["value"] for e in worker["env"] or []}
    if "image" in kwargs or kwargs.get("install", "auto") is None:
        assert "EXTRA_PIP_PACKAGES" not in env  # an own image carries erblock already
    else:
        assert env["EXTRA_PIP_PACKAGES"] == f"erblock=={erblock.__version__}"


def test_memory_limit_is_read_by_dask_as_the_pod_limit():
    from dask.utils import parse_bytes

    spec = kube.cluster_spec(memory="1536Mi")
    args = spec["spec"]["worker"]["spec"]["containers"][0]["args"]
    assert parse_bytes(args[args.index("--memory-limit") + 1]) == 1536 * 2**20


def test_the_operator_builds_pods_that_find_the_scheduler():
    """Run the operator's own builders on the spec, as it does on `kubectl apply`."""
    from dask_kubernetes.operator.controller import controller as ctl

    spec = kube.cluster_spec("erjob", n_workers=3)
    sched = ctl.build_scheduler_deployment_spec("erjob", spec["spec"]["scheduler"]["spec"],
                                                {}, {})
    service = ctl.build_scheduler_service_spec("erjob", spec["spec"]["scheduler"]["service"],
                                               {}, {})
    worker = ctl.build_worker_deployment_spec("erjob-default", "prod", "erjob", "abc",
                                              spec["spec"]["worker"]["spec"], {}, {})
    assert service["metadata"]["name"] == "erjob-scheduler"
    # the service selects the scheduler pod
    pod_labels = sched["spec"]["template"]["metadata"]["labels"]
    assert all(pod_labels[k] == v for k, v in service["spec"]["selector"].items())
    env = {e["name"]: e["value"] for e in
           worker["spec"]["template"]["spec"]["containers"][0]["env"]}
    assert env["DASK_SCHEDULER_ADDRESS"] == kube.scheduler_address("erjob", "prod")
    assert env["EXTRA_PIP_PACKAGES"] == kube.erblock_requirement()


def test_committed_manifest_parses_into_a_valid_resource_for_this_version(crd_schema):
    docs = list(yaml.safe_load_all(MANIFEST.read_text()))
    assert len(docs) == 1
    [resource] = docs
    _validate(resource, crd_schema)
    dk_operator.validation.validate_cluster_name(resource["metadata"]["name"])
    image = resource["spec"]["worker"]["spec"]["containers"][0]["image"]
    # the file is `erblock kube-spec` output for this erblock version (not stale)
    assert resource == kube.cluster_spec(
        resource["metadata"]["name"], n_workers=2, threads=2, memory="4Gi", image=image,
        install=kube.erblock_requirement())
    assert resource == _reference(resource)


def test_kube_spec_command_prints_the_spec(capsys, tmp_path, crd_schema):
    assert main(["kube-spec", "--name", "dedupe-7", "--workers", "5", "--threads", "3",
                 "--memory", "6Gi"]) == 0
    printed = yaml.safe_load(capsys.readouterr().out)
    assert printed == kube.cluster_spec("dedupe-7", n_workers=5, threads=3, memory="6Gi")
    _validate(printed, crd_schema)
    out = tmp_path / "c.json"
    assert main(["kube-spec", "--json", "-o", str(out)]) == 0
    assert yaml.safe_load(out.read_text()) == kube.cluster_spec()
    # NumPy counts are counts, written as plain numbers
    spec = kube.cluster_spec("x", n_workers=np.int64(2), threads=np.int64(3))
    assert json.loads(json.dumps(spec)) == kube.cluster_spec("x", n_workers=2, threads=3)
    kube.to_yaml(spec)


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"name": "Erblock_1"}, "name: 'Erblock_1' is not a valid DaskCluster name"),
    ({"memory": "4GB"}, "memory: '4GB' is not a Kubernetes quantity"),
    ({"cpu": "two"}, "cpu: 'two'"),
    ({"threads": 0}, "threads must be an integer >= 1"),
    ({"n_workers": -1}, "n_workers must be an integer >= 0"),
    ({"scheduler_service_type": "Ingress"}, "scheduler_service_type"),
])
def test_bad_settings_are_refused_with_the_argument_named(kwargs, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(")):
        kube.cluster_spec(**kwargs)


def test_cli_reports_bad_kube_settings_with_exit_2(capsys):
    assert main(["kube-spec", "--memory", "lots"]) == 2
    assert "memory: 'lots'" in capsys.readouterr().err


def test_kube_cluster_hands_the_spec_to_kubecluster(monkeypatch, crd_schema):
    seen: dict = {}

    class FakeKubeCluster:
        def __init__(self, **kwargs):
            seen.update(copy.deepcopy(kwargs))

    monkeypatch.setattr(dk_operator, "KubeCluster", FakeKubeCluster)
    kube.kube_cluster("er-test", namespace="data", n_workers=4, threads=1, memory="2Gi",
                      shutdown_on_close=True)
    assert seen["namespace"] == "data" and seen["shutdown_on_close"] is True
    spec = seen["custom_cluster_spec"]
    assert spec == kube.cluster_spec("er-test", n_workers=4, threads=1, memory="2Gi")
    _validate(spec, crd_schema)
