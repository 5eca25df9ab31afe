"""Dask clusters on Kubernetes for erblock, through the Dask Kubernetes operator.

Two ways to run erblock on Kubernetes (see ``deploy/kubernetes/README.md``):

1. **From Python** with ``dask-kubernetes`` (``pip install 'erblock[kubernetes]'``):
   :func:`kube_cluster` creates a ``DaskCluster`` resource from :func:`cluster_spec` and
   returns the ``KubeCluster``; pass ``Client(cluster)`` as ``client=`` to
   ``erblock.link``/``dedupe``.
2. **From the shell**: ``erblock kube-spec > cluster.yaml`` (or the committed
   ``deploy/kubernetes/daskcluster.yaml``), ``kubectl apply -f cluster.yaml``, then
   ``erblock link … --scheduler tcp://<name>-scheduler.<namespace>:8786``.

Either way the scheduler and workers must import the same erblock version as the client
(checked before every run). With the stock ``ghcr.io/dask/dask`` image the spec sets
``EXTRA_PIP_PACKAGES=erblock==<version>``, which the image's entrypoint installs when a
pod starts; an image built from ``deploy/kubernetes/Dockerfile`` has erblock already.

:func:`cluster_spec` needs no Kubernetes package: it writes exactly the structure that
``dask_kubernetes.operator.make_cluster_spec`` produces (the test suite compares the two),
with erblock's worker settings (threads, memory limit) in the worker command.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Mapping
from typing import Any

import yaml

from .._version import __version__
from ..scalars import is_int


def erblock_requirement() -> str:
    """``erblock==<this version>``: what the workers must run (see the worker check)."""


    return f"erblock=={__version__}"


def default_image() -> str:
    """The Dask image matching this client's Dask and Python versions.

    Client, scheduler and workers should run the same Dask and Python (minor) versions;
    ``distributed`` warns about mismatches and pickled functions may not load otherwise.
    """
    import dask

    version = dask.__version__.split("+")[0]
    return f"ghcr.io/dask/dask:{version}-py{sys.version_info.major}.{sys.version_info.minor}"


_NAME = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_QUANTITY = re.compile(r"^[0-9]+(\.[0-9]+)?(m|k|Ki|M|Mi|G|Gi|T|Ti|P|Pi|E|Ei)?$")


def cluster_spec(
    name: str = "erblock",
    *,
    n_workers: int = 2,
    image: str | None = None,
    threads: int = 2,
    memory: str | None = "4Gi",
    cpu: str | None = None,
    env: Mapping[str, str] | None = None,
    install: str | None = "auto",
    idle_timeout: int = 0,
    scheduler_service_type: str = "ClusterIP",
) -> dict[str, Any]:
    """A ``DaskCluster`` resource (a dict, ready for ``yaml.safe_dump``) for erblock.

    ``name`` becomes the resource name and the scheduler service ``<name>-scheduler``.
    Each of ``n_workers`` workers runs ``threads`` threads (rapidfuzz releases the GIL, so
    threads scale) with ``memory`` as both the Kubernetes memory limit/request and Dask's
    ``--memory-limit``; ``cpu`` (default: ``threads``) is its CPU request and limit.
    ``install``: the pip requirement the stock Dask image installs at start
    (``EXTRA_PIP_PACKAGES``); ``"auto"`` means ``erblock==<this version>`` unless
    ``image`` is given (an image of your own is expected to contain erblock), None
    installs nothing.
    """
    if not isinstance(name, str) or not _NAME.match(name) or len(name) > 53:
        raise ValueError(
            f"name: {name!r} is not a valid DaskCluster name (lower-case letters, digits, '-' "
            "and '.', starting and ending with a letter or digit, at most 53 characters)")
    if not is_int(n_workers) or n_workers < 0:
        raise ValueError(f"n_workers must be an integer >= 0, got {n_workers!r}")
    if not is_int(threads) or threads < 1:
        raise ValueError(f"threads must be an integer >= 1, got {threads!r}")
    n_workers, threads = int(n_workers), int(threads)  # NumPy's as Python's (JSON, YAML)
    for arg, value in (("memory", memory), ("cpu", cpu)):
        if value is not None and not _QUANTITY.match(str(value)):
            raise ValueError(
                f"{arg}: {value!r} is not a Kubernetes quantity (e.g. '4Gi', '500Mi', '2', "
                "'1500m')")
    if scheduler_service_type not in ("ClusterIP", "NodePort", "LoadBalancer"):
        raise ValueError("scheduler_service_type must be ClusterIP, NodePort or LoadBalancer, "
                         f"got {scheduler_service_type!r}")
    if install == "auto":
        install = erblock_requirement() if image is None else None
    image = image or default_image()
    env_vars = dict(env or {})
    if install:
        extra = env_vars.get("EXTRA_PIP_PACKAGES", "")
        env_vars["EXTRA_PIP_PACKAGES"] = f"{extra} {install}".strip()
    # a list even when empty: the CRD's schema has no null for env
    env_list = [{"name": k, "value": str(v)} for k, v in env_vars.items()]

    cpu = cpu or str(threads)
    resources: dict[str, dict[str, str]] = {"limits": {"cpu": cpu}, "requests": {"cpu": cpu}}
    if memory is not None:
        resources["limits"]["memory"] = memory
        resources["requests"]["memory"] = memory
    worker_command = ["dask-worker", "--nthreads", str(threads)]
    if memory is not None:
        worker_command += ["--memory-limit", _dask_bytes(memory)]

    return {
        "apiVersion": "kubernetes.dask.org/v1",
        "kind": "DaskCluster",
        "metadata": {"name": name},
        "spec": {
            "idleTimeout": idle_timeout,
            "worker": {
                "replicas": n_workers,
                "spec": {
                    "containers": [
                        {
                            "name": "worker",
                            "image": image,
                            "args": worker_command + ["--name", "$(DASK_WORKER_NAME)",
                                                      "--dashboard", "--dashboard-address",
                                                      "8788"],
                            "env": env_list,
                            "resources": resources,
                            "ports": [{"name": "http-dashboard", "containerPort": 8788,
                                       "protocol": "TCP"}],
                        }
                    ]
                },
            },
            "scheduler": {
                "spec": {
                    "containers": [
                        {
                            "name": "scheduler",
                            "image": image,
                            "args": ["dask-scheduler", "--host", "0.0.0.0"],
                            "env": env_list,
                            "resources": resources,
                            "ports": [
                                {"name": "tcp-comm", "containerPort": 8786, "protocol": "TCP"},
                                {"name": "http-dashboard", "containerPort": 8787,
                                 "protocol": "TCP"},
                            ],
                            "readinessProbe": {
                                "httpGet": {"port": "http-dashboard", "path": "/health"},
                                "initialDelaySeconds": 0,
                                "periodSeconds": 1,
                                "timeoutSeconds": 300,
                            },
                            "livenessProbe": {
                                "httpGet": {"port": "http-dashboard", "path": "/health"},
                                "initialDelaySeconds": 15,
                                "periodSeconds": 20,
                            },
                        }
                    ]
                },
                "service": {
                    "type": scheduler_service_type,
                    "selector": {"dask.org/cluster-name": name,
                                 "dask.org/component": "scheduler"},
                    "ports": [
                        {"name": "tcp-comm", "protocol": "TCP", "port": 8786,
                         "targetPort": "tcp-comm"},
                        {"name": "http-dashboard", "protocol": "TCP", "port": 8787,
                         "targetPort": "http-dashboard"},
                    ],
                },
            },
        },
    }


def _dask_bytes(quantity: str) -> str:
    """A Kubernetes memory quantity in the form ``dask worker --memory-limit`` reads."""
    units = {"Ki": "KiB", "Mi": "MiB", "Gi": "GiB", "Ti": "TiB", "k": "kB", "M": "MB",
             "G": "GB", "T": "TB"}
    for suffix, dask_unit in units.items():
        if quantity.endswith(suffix):
            return quantity[: -len(suffix)] + dask_unit
    return quantity


def scheduler_address(name: str = "erblock", namespace: str = "default") -> str:
    """The in-cluster address of the scheduler service the operator creates for ``name``."""
    return f"tcp://{name}-scheduler.{namespace}.svc.cluster.local:8786"


def to_yaml(spec: Mapping[str, Any]) -> str:
    """``spec`` as YAML (keys in the order written, as ``kubectl`` shows them)."""


    class _NoAliases(yaml.SafeDumper):
        def ignore_aliases(self, data: Any) -> bool:
            return True

    return yaml.dump(dict(spec), Dumper=_NoAliases, sort_keys=False, default_flow_style=False)


def kube_cluster(name: str = "erblock", *, namespace: str | None = None,
                 n_workers: int = 2, image: str | None = None, threads: int = 2,
                 memory: str | None = "4Gi", cpu: str | None = None,
                 env: Mapping[str, str] | None = None, install: str | None = "auto",
                 **kwargs: Any) -> Any:
    """Start a Dask cluster for erblock on Kubernetes (needs ``erblock[kubernetes]``).

    Creates the ``DaskCluster`` of :func:`cluster_spec` through the operator (which must be
    installed in the Kubernetes cluster) and returns the ``KubeCluster``; ``kwargs`` go to
    ``KubeCluster`` (e.g. ``shutdown_on_close``, ``resource_timeout``). Use it as::

        with kube_cluster(n_workers=8) as cluster, Client(cluster) as client:
            erblock.link(r, s, key=..., compare=..., client=client, output="s3://…")
    """
    try:
        from dask_kubernetes.operator import KubeCluster
    except ImportError as exc:
        raise ImportError(
            "kube_cluster needs dask-kubernetes: pip install 'erblock[kubernetes]' (or use "
            "`erblock kube-spec`, `kubectl apply` and --scheduler)") from exc
    spec = cluster_spec(name, n_workers=n_workers, image=image, threads=threads,
                        memory=memory, cpu=cpu, env=env, install=install)
    return KubeCluster(custom_cluster_spec=spec, namespace=namespace, **kwargs)
