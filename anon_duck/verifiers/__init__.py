"""Independent verifiers, one module per job.

:mod:`.models` holds the generic privacy-model checks (k-anonymity, l-diversity, t-closeness, k^m,
(k,k^m), LKC) that read only a released relation; the other modules audit one method's
release with them plus the method's own structural rules (catalog safety, chunk partition,
utility constraints, ...). None of them imports a method: an anonymizer bug must show up
here as violating rows, not be repeated.
"""
from . import models
from .models import *  # noqa: F401,F403  (exactly models.__all__, the one list of the generic checks)

__all__ = models.__all__
