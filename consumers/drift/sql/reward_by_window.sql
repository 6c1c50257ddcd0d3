-- Raw pass rate and reshaped reward per time window, for one reshaping config.
--
-- Answers: how do the weak signal and the trained-on reward move over wall-clock time
-- (the same columns as reward_by_version, bucketed by event_time instead of version)?
--   window_start  toStartOfInterval(event_time, INTERVAL window_s SECOND, 'UTC')
--   pass_rate     mean of tests_passed / tests_total (a row without tests counts 0)
--   full_success  share of rollouts that passed every test (tests_total > 0)
--   reward_raw_mean, reward_enhanced_mean, advantage_mean from advantages of config_id
-- A window present on one side only keeps NULLs for the other (join_use_nulls).
-- Parameters: since, config_id, window_s (seconds per window).
WITH
    fb AS (
        SELECT
            toStartOfInterval(event_time, INTERVAL {window_s:UInt32} SECOND, 'UTC') AS window_start,
            count() AS rollouts,
            avg(if(tests_total > 0, tests_passed / tests_total, 0)) AS pass_rate,
            avg(tests_total > 0 AND tests_passed = tests_total) AS full_success
        FROM feedback FINAL
        WHERE event_time >= {since:DateTime64(3, 'UTC')}
        GROUP BY window_start
    ),
    adv AS (
        SELECT
            toStartOfInterval(event_time, INTERVAL {window_s:UInt32} SECOND, 'UTC') AS window_start,
            count() AS advantage_rows,
            avg(reward_raw) AS reward_raw_mean,
            avg(reward_enhanced) AS reward_enhanced_mean,
            avg(advantage) AS advantage_mean
        FROM advantages FINAL
        WHERE event_time >= {since:DateTime64(3, 'UTC')} AND config_id = {config_id:String}
        GROUP BY window_start
    )
SELECT
    window_start,
    rollouts,
    pass_rate,
    full_success,
    advantage_rows,
    reward_raw_mean,
    reward_enhanced_mean,
    advantage_mean
FROM fb
FULL OUTER JOIN adv USING (window_start)
ORDER BY window_start
SETTINGS join_use_nulls = 1
