-- Success per bug pattern over time windows: which patterns improve, which regress.
--
-- One row per (bug_pattern, window). For each pattern, first_* and last_* are the values
-- of its earliest and latest window with rollouts, and *_delta = last - first: a
-- negative success_delta is a pattern the policy has got worse at.
--   pass_rate     mean of tests_passed / tests_total (a row without tests counts 0)
--   full_success  share of rollouts that passed every test (tests_total > 0)
-- Parameters: since, window_s (seconds per window).
WITH per_window AS (
    SELECT
        bug_pattern,
        toStartOfInterval(event_time, INTERVAL {window_s:UInt32} SECOND, 'UTC') AS window_start,
        count() AS rollouts,
        avg(if(tests_total > 0, tests_passed / tests_total, 0)) AS pass_rate,
        avg(tests_total > 0 AND tests_passed = tests_total) AS full_success
    FROM feedback FINAL
    WHERE event_time >= {since:DateTime64(3, 'UTC')}
    GROUP BY bug_pattern, window_start
)
SELECT
    bug_pattern,
    window_start,
    rollouts,
    pass_rate,
    full_success,
    first_value(full_success) OVER whole AS first_success,
    last_value(full_success) OVER whole AS last_success,
    last_success - first_success AS success_delta,
    last_value(pass_rate) OVER whole - first_value(pass_rate) OVER whole AS pass_rate_delta
FROM per_window
WINDOW whole AS (PARTITION BY bug_pattern ORDER BY window_start
                 ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING)
ORDER BY bug_pattern, window_start
