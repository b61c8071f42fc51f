"""The alternative annotator test (alt-test): may an LLM judge replace the human raters?

Calderon, Reichart & Dror (2025), "The Alternative Annotator Test for LLM-as-a-Judge: How to
Statistically Justify Replacing Human Annotators with LLMs", Proceedings of ACL 2025 (long
papers), pp. 16051-16081. The procedure, as the paper gives it:

1. Leave one human annotator ``j`` out. On each instance ``i`` that ``j`` annotated, score the
   judge ``f`` and the left-out annotator against the *remaining* annotators of ``i`` with an
   alignment scoring function ``S``: ACC (the share of the remaining annotators whose label
   equals the candidate's) for categories, -RMSE for numbers.
2. Indicators: ``W_f(i, j) = 1`` when ``S(f) >= S(h_j)``; ``W_h(i, j) = 1`` when
   ``S(h_j) >= S(f)`` (a tie counts for both). The advantage probabilities are their means
   over ``j``'s instances: ``rho_f_j`` and ``rho_h_j``.
3. Per annotator, a one-sided paired t-test of ``H0: rho_h_j - rho_f_j >= epsilon`` against
   ``H1: rho_h_j - rho_f_j < epsilon`` on the differences ``W_h - W_f``. ``epsilon`` is the
   cost-benefit margin: the advantage the judge is granted for being cheaper and faster.
4. The Benjamini-Yekutieli procedure at ``q = 0.05`` over the annotators' p-values (the tests
   share instances, so they are dependent; BY controls the false discovery rate under any
   dependence). The judge "wins" against ``j`` when ``H0_j`` is rejected.
5. The winning rate ``omega`` is the share of annotators the judge wins against; the judge
   passes when ``omega >= 0.5``. The average advantage probability ``rho`` is the mean of
   ``rho_f_j`` over annotators: the measure to compare judges (higher is better; a judge equal
   to the majority of the others scores ``rho = 1`` under ACC).

The paper's numbers, enforced here: each instance needs at least two annotators (leaving one
out must leave a reference; the authors' code drops other instances), an annotator needs at
least 30 instances for the t-test's normality (fewer: the annotator is left out of the test,
and listed), and the test needs at least three annotators (the paper recommends three or more:
with two the judge is compared with a single other person, without a consensus signal). It
suggests 50-100 instances. Below these minimums there is no verdict, only "cannot decide
yet: <reason>". Guidance on epsilon (the paper's FAQ): 0.2 for expert annotators (reliable,
expensive), 0.15 for skilled annotators (trained students or workers), 0.1 for crowd workers,
and smaller when inter-annotator agreement is low.

Instances are whatever the caller makes them; evalsite uses (conversation, item) pairs,
pooled over items or per item. Pooled instances of one conversation are not independent, which
the paper's t-test assumes; the per-item tests do not have that issue.
"""

from .baseline import CANNOT_TELL, CONSTANT_JUDGE, constant_judge_baseline
from .long import AltTestReport, alt_test_long
from .procedure import (
    DEFAULT_Q,
    EPSILON_ADVICE,
    EPSILON_GUIDANCE,
    MIN_INSTANCES_PER_RATER,
    MIN_RATERS,
    MIN_RATERS_PER_INSTANCE,
    PASS_WINNING_RATE,
    SCORINGS,
    SUGGESTED_INSTANCES,
    AltTest,
    AltTestRater,
    ExcludedRater,
    Scoring,
    alt_test,
    benjamini_yekutieli,
)

__all__ = [
    "CANNOT_TELL",
    "CONSTANT_JUDGE",
    "DEFAULT_Q",
    "EPSILON_ADVICE",
    "EPSILON_GUIDANCE",
    "MIN_INSTANCES_PER_RATER",
    "MIN_RATERS",
    "MIN_RATERS_PER_INSTANCE",
    "PASS_WINNING_RATE",
    "SCORINGS",
    "SUGGESTED_INSTANCES",
    "AltTest",
    "AltTestRater",
    "AltTestReport",
    "ExcludedRater",
    "Scoring",
    "alt_test",
    "alt_test_long",
    "benjamini_yekutieli",
    "constant_judge_baseline",
]
