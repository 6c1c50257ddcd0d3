-- Advantage statistics per policy version, for one reshaping config.
--   advantage_mean, advantage_std (population), advantage_p05, advantage_p95, abs_advantage_mean
--   excluded_share  rows left out of their group's comparison
-- Parameters: since, config_id.
SELECT
    policy_version,
    count() AS advantage_rows,
    avg(advantage) AS advantage_mean,
    stddevPop(advantage) AS advantage_std,
    quantileExact(0.05)(advantage) AS advantage_p05,
    quantileExact(0.95)(advantage) AS advantage_p95,
    avg(abs(advantage)) AS abs_advantage_mean,
    avg(excluded) AS excluded_share
FROM advantages FINAL
WHERE event_time >= {since:DateTime64(3, 'UTC')} AND config_id = {config_id:String}
GROUP BY policy_version
ORDER BY policy_version
