-- Raw pass rate and reshaped reward per policy version, for one reshaping config.
--
-- Answers: does the policy get better from version to version, on the raw weak signal
-- (feedback) and on the reward it is trained on (advantages of {config_id})?
--   pass_rate     mean of tests_passed / tests_total (a row without tests counts 0)
--   full_success  share of rollouts that passed every test (tests_total > 0)
--   reward_raw_mean, reward_enhanced_mean, advantage_mean from advantages of config_id
-- A version present on one side only keeps NULLs for the other (join_use_nulls).
-- Parameters: since (lower bound on event_time), config_id.
WITH
    fb AS (
        SELECT
            policy_version,
            count() AS rollouts,
            avg(if(tests_total > 0, tests_passed / tests_total, 0)) AS pass_rate,
            avg(tests_total > 0 AND tests_passed = tests_total) AS full_success
        FROM feedback FINAL
        WHERE event_time >= {since:DateTime64(3, 'UTC')}
        GROUP BY policy_version
    ),
    adv AS (
        SELECT
            policy_version,
            count() AS advantage_rows,
            avg(reward_raw) AS reward_raw_mean,
            avg(reward_enhanced) AS reward_enhanced_mean,
            avg(advantage) AS advantage_mean
        FROM advantages FINAL
        WHERE event_time >= {since:DateTime64(3, 'UTC')} AND config_id = {config_id:String}
        GROUP BY policy_version
    )
SELECT
    policy_version,
    rollouts,
    pass_rate,
    full_success,
    advantage_rows,
    reward_raw_mean,
    reward_enhanced_mean,
    advantage_mean
FROM fb
FULL OUTER JOIN adv USING (policy_version)
ORDER BY policy_version
SETTINGS join_use_nulls = 1
