-- Every reshaping config side by side: mean enhanced reward and advantage spread per
-- policy version (a replay writes a config beside the one trained on).
-- Parameters: since.
SELECT
    config_id,
    policy_version,
    count() AS advantage_rows,
    avg(reward_enhanced) AS reward_enhanced_mean,
    stddevPop(advantage) AS advantage_std
FROM advantages FINAL
WHERE event_time >= {since:DateTime64(3, 'UTC')}
GROUP BY config_id, policy_version
ORDER BY config_id, policy_version
