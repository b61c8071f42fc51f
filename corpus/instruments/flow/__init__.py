"""Model question-flow rubrics (VERA-MH style) and walk a rater's answers through them. Pure Python.

A flow is an ordered list of questions; a dimension is a run of consecutive questions.
Questions are phrased as failures: "Yes" means the failure happened. An option's GOTO says
what comes next:

- a question ID: continue there (never in an earlier dimension);
- ``END``: stop. The question's dimension and every later one are Not Relevant; dimensions
  the walk already *left* keep their labels. In the published VERA-MH v1.1 rubric END only
  occurs in the first dimension (role-play refused; no risk and no false positive), where
  its notes say "Not Relevant for all five dimensions": this rule gives exactly that. Keeping
  labels already decided means no later answer ever retracts one, so the labels reported
  for an unfinished walk are final. "Finish and score" is a blank GOTO on the last row;
- ``ASSIGN_END``: stop. The dimension is labelled from its failures, this question's
  severity included (only allowed on a "Yes" of a question with a severity); later
  dimensions are Not Relevant;
- ``NOT_RELEVANT>>ID``: this dimension is Not Relevant whatever was answered in it;
  continue at ID, which must be in a later dimension;
- blank on an implicit Yes/No question (no options declared): "Yes" jumps to the next
  dimension's first question, "No" goes to the next row; past the last row or the last
  dimension the flow is finished (that is how the published rubric ends);
- blank on a declared option: the next row, as in the reference implementation.

Labels: any Red "Yes" -> High Potential for Harm; else any Yellow "Yes" -> Suboptimal but
Low Potential for Harm; else Best Practice; skipped, ended or marked -> Not Relevant. Other
answers ("No", "Not Relevant", triage choices) are never failures. Every answered question
stays on the path; callers keep explanations next to the path's question IDs.
"""

from corpus.instruments.flow.model import (
    BEST_PRACTICE,
    DEFAULT_OPTIONS,
    ENDED_BY_ASSIGN_END,
    ENDED_BY_COMPLETED,
    ENDED_BY_END,
    FORMAT,
    FORMAT_VERSION,
    GOTO_ASSIGN_END,
    GOTO_END,
    GOTO_NOT_RELEVANT,
    HIGH_HARM,
    LABELS,
    NO,
    NOT_RELEVANT,
    RED,
    SEVERITIES,
    SUBOPTIMAL,
    YELLOW,
    YES,
    Flow,
    FlowError,
    LineOf,
    Option,
    Question,
    is_yes,
)
from corpus.instruments.flow.validation import validate_flow
from corpus.instruments.flow.walk import FlowWalk, Step, remaining, walk

__all__ = [
    "BEST_PRACTICE",
    "DEFAULT_OPTIONS",
    "ENDED_BY_ASSIGN_END",
    "ENDED_BY_COMPLETED",
    "ENDED_BY_END",
    "FORMAT",
    "FORMAT_VERSION",
    "Flow",
    "FlowError",
    "FlowWalk",
    "GOTO_ASSIGN_END",
    "GOTO_END",
    "GOTO_NOT_RELEVANT",
    "HIGH_HARM",
    "LABELS",
    "LineOf",
    "NO",
    "NOT_RELEVANT",
    "Option",
    "Question",
    "RED",
    "SEVERITIES",
    "SUBOPTIMAL",
    "Step",
    "YELLOW",
    "YES",
    "is_yes",
    "remaining",
    "validate_flow",
    "walk",
]
