"""Scoring: each run against its scenario's reference (accuracy, qualification), and stability
indicators per scenario. ``indicators`` (of a run's result) and ``accuracy_of`` (of two stored
runs) are pure functions;
``score`` writes them to SQL once, triggered by whichever of run and reference finishes last."""

from raptorgrid.scoring.indicators import STABILITY_CRITERION, Indicators, stability_indicators
from raptorgrid.scoring.score import (
    ScoreOutcome,
    accuracy_of,
    result_from_dataset,
    score_campaign,
    score_finished_run,
    score_finished_runs,
)

__all__ = [
    "STABILITY_CRITERION",
    "Indicators",
    "ScoreOutcome",
    "accuracy_of",
    "result_from_dataset",
    "score_campaign",
    "score_finished_run",
    "score_finished_runs",
    "stability_indicators",
]
