"""Independent verifiers, one module per job.

:mod:`.models` holds the generic privacy-model checks (k-anonymity, l-diversity, t-closeness, k^m,
(k,k^m), LKC) that read only a released relation; the other modules audit one method's
release with them plus the method's own structural rules (catalog safety, chunk partition,
utility constraints, ...). None of them imports a method: an anonymizer bug must show up
here as violating rows, not be repeated.
"""
from .models import (CheckResult, k_anonymity, kkm_anonymity, km_anonymity, l_diversity, lkc_groups,
                     lkc_privacy, lkc_subsets, suppression, t_closeness)

__all__ = ["CheckResult", "k_anonymity", "l_diversity", "km_anonymity", "kkm_anonymity", "lkc_privacy",
           "lkc_groups", "lkc_subsets", "suppression", "t_closeness"]
