-- Environment failures and flaky candidates per policy version (feedback).
--
-- Answers: how often did the host, not the candidate, decide an evaluation, and how often
-- did a candidate's repeated runs disagree?
--   rollouts                  feedback rows of the version
--   environment_failures      rows marked environment_failure: the host failed every re-evaluation,
--                             so the reshaping leaves them out of their groups
--   re_evaluated              rows evaluated more than once (evaluation_attempts > 1)
--   flaky_rollouts            rows whose repeats' pass fractions spread by more than flaky_tolerance
--   environment_failure_rate  environment_failures / rollouts
--   flaky_rate                flaky_rollouts / rollouts
-- Parameters: since (lower bound on event_time).
SELECT
    policy_version,
    count() AS rollouts,
    countIf(environment_failure) AS environment_failures,
    countIf(evaluation_attempts > 1) AS re_evaluated,
    countIf(flaky) AS flaky_rollouts,
    environment_failures / rollouts AS environment_failure_rate,
    flaky_rollouts / rollouts AS flaky_rate
FROM feedback FINAL
WHERE event_time >= {since:DateTime64(3, 'UTC')}
GROUP BY policy_version
ORDER BY policy_version
