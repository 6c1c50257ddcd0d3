-- The reshaping configs of the store, the most advantages first (the first is shown by default).
SELECT config_id, count() AS advantage_rows, max(policy_version) AS last_version
FROM advantages
GROUP BY config_id
ORDER BY advantage_rows DESC, config_id
