"""Repository functions (keyword-only arguments) used by every route, the worker and the CLI.

They take a ``Session`` inside a transaction the caller opened (``Database.read``/``write``)
and never commit, so one request or one worker step is one transaction.
"""

from raptorgrid.repository.campaigns import (
    bump_stats_version,
    cancel_campaign,
    create_campaign,
    delete_campaign,
    find_by_idempotency_key,
    get_campaign,
    list_campaigns,
    record_final,
    run_counts,
)
from raptorgrid.repository.reconcile import (
    Requeue,
    RunToResend,
    mark_in_transit,
    release_runs,
    requeue_expired,
    runs_to_resend,
    stale_queued,
)
from raptorgrid.repository.retry import (
    DEFAULT_RETRY_REASONS,
    RETRY_REASONS,
    NotRetryable,
    retry_failed,
)
from raptorgrid.repository.runs import (
    Claim,
    Finish,
    FinishOutcome,
    LeaseState,
    RunInputs,
    claim_run,
    claim_runs,
    finish_run,
    finish_runs,
    get_run,
    list_runs,
    recent_solve_seconds,
    renew_lease,
    renew_leases,
    runs_inputs,
    succeeded_runs,
)

__all__ = [
    "Claim",
    "DEFAULT_RETRY_REASONS",
    "NotRetryable",
    "RETRY_REASONS",
    "Finish",
    "FinishOutcome",
    "LeaseState",
    "Requeue",
    "RunToResend",
    "RunInputs",
    "bump_stats_version",
    "cancel_campaign",
    "claim_run",
    "claim_runs",
    "create_campaign",
    "delete_campaign",
    "find_by_idempotency_key",
    "finish_run",
    "finish_runs",
    "get_campaign",
    "get_run",
    "list_campaigns",
    "list_runs",
    "recent_solve_seconds",
    "record_final",
    "renew_lease",
    "renew_leases",
    "mark_in_transit",
    "release_runs",
    "requeue_expired",
    "retry_failed",
    "runs_to_resend",
    "run_counts",
    "runs_inputs",
    "stale_queued",
    "succeeded_runs",
]
