"""One parameter check for disassociation and its CBA baseline (issue #29 item 16): the keys they
share are declared once (``params.SHARED_PARAMS``) and checked once (``params.check_shared``),
so a bad value gets the same error, word for word, from both methods. The two copies had
drifted: cba's errors lacked the policy found, the hierarchy example and the footnote."""
from __future__ import annotations

import dataclasses

import pytest

from anon_duck.errors import JobError
from anon_duck.methods import get_method
from anon_duck.methods.disassociation import params as dis_params

JOBS = {"disassociation": "disassociation_toy.toml", "cba": "disassociation_cba_toy.toml"}
U = {"u1": ["401.0"], "u2": ["480.1"]}


def _job(job_file, method: str, **params):
    job = job_file(JOBS[method])
    base = {k: v for k, v in job.params.items() if k not in params or params[k] is not None}
    return dataclasses.replace(job, params={**base, **{k: v for k, v in params.items() if v is not None}})


def _error(job_file, method: str, **params) -> str:
    with pytest.raises(JobError) as err:
        get_method(method).check_params(_job(job_file, method, **params))
    return str(err.value)


SHARED_ERRORS = [
    (dict(k=4, max_cluster_size=3, partition="horpart"),
     "method.max_cluster_size = 3: must be >= k = 4 (HORPART's clusters hold at least k records; "
     "Loukides et al., 2014, footnote 3)"),
    (dict(policy="level1", constraints=None),
     "method.policy = 'level1' groups codes by their hierarchy: set input.codes.hierarchy (e.g. the built-in "
     "icd9cm tree)"),
    (dict(policy="none"),
     "method.constraints is used exactly when method.policy = \"explicit\"; got policy = 'none' with constraints"),
    (dict(policy="explicit", constraints=None),
     "method.constraints is used exactly when method.policy = \"explicit\"; got policy = 'explicit' without "
     "constraints"),
    (dict(policy="sup", constraints=None, sup_percent=0.0),
     "method.sup_percent must be > 0 with method.policy = \"sup\""),
    (dict(constraints={"u1": ["401.0"], "u2": ["401.0"]}),
     "method.constraints.u2: code '401.0' is also in method.constraints.u1; utility constraints must be disjoint"),
    (dict(m=0), "method.m = 0: must be >= 1"),
    (dict(queries=0), "method.queries = 0: must be >= 1"),
    (dict(sim_size="ten"), "method.sim_size = 'ten': expected int"),
]


@pytest.mark.parametrize("params, message", SHARED_ERRORS)
def test_both_methods_refuse_a_shared_key_with_the_same_error(job_file, params, message):
    dis = _error(job_file, "disassociation", **{k: v for k, v in params.items() if k != "partition"})
    cba = _error(job_file, "cba", **params)
    assert message in dis and dis == cba


def test_the_shared_keys_are_declared_once():
    from anon_duck.methods.disassociation import cba
    shared = {p.name for p in dis_params.SHARED_PARAMS}
    for spec in (dis_params.PARAMS, cba.PARAMS):
        names = [p.name for p in spec]
        assert shared <= set(names) and len(names) == len(set(names))
        assert [p for p in spec if p.name in shared] == list(dis_params.SHARED_PARAMS)   # the same objects


def test_cbas_own_rule_and_each_methods_own_keys(job_file):
    assert _error(job_file, "cba", max_cluster_size=6) == \
        "method.max_cluster_size is used only with method.partition = \"horpart\""
    assert "unknown key 'refine'" in _error(job_file, "cba", refine=False)            # disassociation's only
    assert "unknown key 'partition'" in _error(job_file, "disassociation", partition="global")


def test_defaults_and_parsed_constraints_are_the_same_for_both(job_file):
    dis = get_method("disassociation").check_params(_job(job_file, "disassociation", max_cluster_size=None,
                                                         constraints=U))
    cba = get_method("cba").check_params(_job(job_file, "cba", partition="horpart", constraints=U))
    assert dis.max_cluster_size == cba.max_cluster_size == 6          # 2k, k = 3
    assert dis.constraints == cba.constraints == (("u1", ("401.0",)), ("u2", ("480.1",)))
