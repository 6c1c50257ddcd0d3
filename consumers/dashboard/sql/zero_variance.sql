-- Share of groups with zero reward variance per policy version, for one reshaping config:
-- groups whose every member earned the same enhanced reward teach the learner nothing.
--   groups              groups with at least two compared members
--   zero_variance_share of them, groups whose compared rewards spread by at most 1e-6
-- Rows left out of the comparison (excluded) do not count.
-- Parameters: since, config_id.
WITH per_group AS (
    SELECT
        policy_version,
        group_id,
        count() AS members,
        max(reward_enhanced) - min(reward_enhanced) AS spread
    FROM advantages FINAL
    WHERE event_time >= {since:DateTime64(3, 'UTC')} AND config_id = {config_id:String} AND NOT excluded
    GROUP BY policy_version, group_id
)
SELECT
    policy_version,
    count() AS groups,
    avg(spread <= 1e-6) AS zero_variance_share
FROM per_group
WHERE members >= 2
GROUP BY policy_version
ORDER BY policy_version
