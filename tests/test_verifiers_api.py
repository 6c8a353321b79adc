"""The verifiers' public names are listed once (issue #29 item 16): ``anon_duck.verifiers``
exports exactly ``anon_duck.verifiers.models.__all__``, and that list names every public
function and class models.py defines (the two lists had drifted: models' lacked ``suppression``)."""
from __future__ import annotations

import inspect

import anon_duck.verifiers as verifiers
from anon_duck.verifiers import models


def test_one_list_reexported_as_it_is():
    assert verifiers.__all__ is models.__all__
    assert len(models.__all__) == len(set(models.__all__))
    for name in models.__all__:
        assert getattr(verifiers, name) is getattr(models, name)


def test_the_list_names_every_public_check_models_defines():
    defined = {name for name, obj in vars(models).items()
               if not name.startswith("_") and (inspect.isfunction(obj) or inspect.isclass(obj))
               and obj.__module__ == models.__name__}
    assert set(models.__all__) == defined
    returns_check = {name for name in defined if inspect.isfunction(getattr(models, name))
                     and inspect.signature(getattr(models, name)).return_annotation in ("CheckResult", models.CheckResult)}
    assert {"k_anonymity", "suppression", "l_diversity", "km_anonymity", "kkm_anonymity", "lkc_privacy"} <= returns_check


def test_star_import_gives_the_list():
    scope: dict = {}
    exec("from anon_duck.verifiers import *", scope)
    assert {n for n in scope if not n.startswith("__")} == set(models.__all__)
