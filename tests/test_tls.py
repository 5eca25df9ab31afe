"""Security basics: a TLS-secured scheduler with generated certificates, and data that is
never evaluated as code.

The scheduler and workers are real processes started with ``--tls-ca-file``,
``--tls-cert`` and ``--tls-key``; the client connects with the
``distributed.security.Security`` built by ``erblock.engine.cluster.make_security`` from
the same kind of files (what the CLI's ``--tls-*`` flags pass).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pandas as pd
import pytest
from distributed import Client
from oracle import brute_dedupe, brute_link, pair_list
from procs import ProcCluster, make_tls_files

import erblock
from erblock import cli
from erblock.engine.cluster import get_client, make_security

pytestmark = pytest.mark.cluster

DF = pd.DataFrame({"k": list("aaabbc"), "name": ["ann", "anne", "anna", "bob", "rob", "cy"]})


@pytest.fixture(scope="module")
def tls_cluster(tmp_path_factory):
    files = make_tls_files(tmp_path_factory.mktemp("tls"))
    with ProcCluster(n_workers=2, tls=files) as pc:
        yield pc, files


def test_run_on_a_tls_secured_scheduler(tls_cluster):
    pc, files = tls_cluster
    assert pc.address.startswith("tls://127.0.0.1:")
    security = make_security(files.ca_file, files.cert, files.key)
    with Client(pc.address, security=security, set_as_default=False) as c:
        pairs = erblock.dedupe(DF, key="k", compare={"name": "jaro_winkler"}, client=c,
                               n_tasks=3)
        link = erblock.link(DF, DF, key="k", compare={"name": "jaro"}, client=c)
        workers = c.scheduler_info(n_workers=-1)["workers"]
    assert set(pair_list(pairs)) == brute_dedupe(DF, ["k"])
    assert set(pair_list(link)) == brute_link(DF, DF, ["k"])
    assert len(workers) == 2 and all(a.startswith("tls://") for a in workers)


def test_get_client_with_security_by_address(tls_cluster):
    pc, files = tls_cluster
    c = get_client(pc.address, security=make_security(files.ca_file, files.cert, files.key))
    pairs = erblock.dedupe(DF, key="k", compare={"name": "exact"}, client=c)
    assert set(pair_list(pairs)) == brute_dedupe(DF, ["k"])


def test_cli_tls_flags(tls_cluster, tmp_path, capsys):
    pc, files = tls_cluster
    src = tmp_path / "in.csv"
    DF.to_csv(src, index=False)
    out = tmp_path / "pairs"
    code = cli.main(["dedupe", str(src), "--key", "k", "--compare", "name:jaro_winkler",
                     "--scheduler", pc.address, "--tls-ca-file", files.ca_file,
                     "--tls-cert", files.cert, "--tls-key", files.key, "-o", str(out),
                     "--quiet"])
    assert code == 0, capsys.readouterr().err
    got = pd.read_parquet(out)
    # the CLI's record ids are row numbers in input order, as DF's index is
    assert set(pair_list(got)) == brute_dedupe(DF, ["k"])


def test_cli_tls_without_certificates_or_with_a_missing_one_is_a_usage_error(
        tls_cluster, tmp_path, capsys):
    pc, files = tls_cluster
    src = tmp_path / "in.csv"
    DF.to_csv(src, index=False)
    code = cli.main(["dedupe", str(src), "--key", "k", "--compare", "name:jaro",
                     "--scheduler", pc.address, "--quiet"])
    assert code == 2
    assert "is a TLS address; give --tls-ca-file and --tls-cert" in capsys.readouterr().err
    # a certificate file that does not exist: a usage error naming it
    code = cli.main(["dedupe", str(src), "--key", "k", "--compare", "name:jaro",
                     "--scheduler", pc.address, "--tls-ca-file", files.ca_file,
                     "--tls-cert", str(tmp_path / "nope.pem"), "--quiet"])
    assert code == 2
    assert "nope.pem" in capsys.readouterr().err


def test_certificate_from_another_authority_is_refused(tls_cluster, tmp_path):
    pc, files = tls_cluster
    stranger = make_tls_files(tmp_path / "other")  # a different CA signed this certificate
    with pytest.raises(ConnectionError, match="could not connect to the Dask scheduler"):
        get_client(pc.address, security=make_security(stranger.ca_file, stranger.cert,
                                                      stranger.key), timeout="3s")


def test_plain_tcp_to_a_tls_scheduler_is_refused(tls_cluster):
    pc, _ = tls_cluster
    with pytest.raises(ConnectionError, match="could not connect"):
        get_client(pc.address.replace("tls://", "tcp://"), timeout="3s")


def test_make_security_checks_the_files(tmp_path):
    files = make_tls_files(tmp_path)
    with pytest.raises(FileNotFoundError, match="tls_ca_file: no such file"):
        make_security(str(tmp_path / "nope.pem"), files.cert, files.key)
    with pytest.raises(FileNotFoundError, match="tls_key: no such file"):
        make_security(files.ca_file, files.cert, str(tmp_path / "nope.key"))
    with pytest.raises(ValueError, match="TLS needs at least tls_ca_file and tls_cert"):
        make_security(files.ca_file, None, None)
    sec = make_security(files.ca_file, files.cert, files.key)
    assert sec.require_encryption
    assert sec.tls_ca_file == files.ca_file and sec.tls_client_cert == files.cert


# -- nothing from the data is evaluated as code ----------------------------------------

HOSTILE = [
    "__import__('os').system('touch PWNED')",
    "{0.__class__.__mro__}",
    "%(x)s %s %n",
    "${jndi:ldap://x}",
    "'; DROP TABLE pairs; --",
    "\x00\x1f\x1e",
    "cos\nsystem\n(S'touch PWNED'\ntR.",  # a pickle program as text
    "lambda: 1",
]


def test_data_that_looks_like_code_is_only_ever_compared_as_text(client, tmp_path,
                                                                 monkeypatch):
    monkeypatch.chdir(tmp_path)
    df = pd.DataFrame({"k": HOSTILE + HOSTILE, "name": HOSTILE + HOSTILE[::-1]})
    df.columns = ["k", "name"]
    pairs = erblock.dedupe(df, key="k", compare={"name": "exact"}, client=client, sort=True)
    assert set(pair_list(pairs)) == brute_dedupe(df, ["k"])
    n = len(HOSTILE)
    sims = dict(zip(pair_list(pairs), pairs["name_exact"]))
    for i in range(n):
        expected = 1.0 if HOSTILE[i] == HOSTILE[n - 1 - i] else 0.0
        assert sims[(i, n + i)] == expected
    assert not list(tmp_path.iterdir()), "nothing may be executed or written"
    # and a column named like code is just a column name
    odd = df.rename(columns={"name": "__import__('os')"})
    pairs = erblock.dedupe(odd, key="k", compare={"__import__('os')": "exact"}, client=client)
    assert len(pairs) == n


def test_package_never_evaluates_or_unpickles_text():
    """Static check: no eval/exec/compile of strings and no pickle loads in erblock/."""
    root = Path(erblock.__file__).parent
    banned_calls = {"eval", "exec", "compile", "__import__"}
    banned_attrs = {("pickle", "loads"), ("pickle", "load"), ("yaml", "load"),
                    ("marshal", "loads"), ("dill", "loads"), ("cloudpickle", "loads")}
    found = []
    for path in root.rglob("*.py"):
        tree = ast.parse(path.read_text(), str(path))
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            f = node.func
            if isinstance(f, ast.Name) and f.id in banned_calls:
                found.append(f"{path.relative_to(root)}:{node.lineno} {f.id}()")
            if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and (
                    (f.value.id, f.attr) in banned_attrs):
                found.append(f"{path.relative_to(root)}:{node.lineno} {f.value.id}.{f.attr}()")
    assert not found, found
