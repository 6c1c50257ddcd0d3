-- Rollouts and groups left out of the group comparison per policy version, for one reshaping config.
--
-- Answers: how often does the host, not the candidate, decide an outcome, and how many
-- groups lose their comparison for it?
--   environment_failures    feedback rows marked environment_failure (whatever the config)
--   rollouts                advantage rows of config_id
--   excluded                of them, rows with excluded true: environment failures, and every
--                           row of a group left with too few comparable members
--   excluded_share          excluded / rollouts
--   groups                  groups of config_id
--   uncompared_groups       groups none of whose rows was compared (no advantage, never trained on)
--   uncompared_group_share  uncompared_groups / groups
-- A version present on one side only keeps NULLs for the other (join_use_nulls).
-- Parameters: since (lower bound on event_time), config_id.
WITH
    fb AS (
        SELECT
            policy_version,
            countIf(environment_failure) AS environment_failures
        FROM feedback FINAL
        WHERE event_time >= {since:DateTime64(3, 'UTC')}
        GROUP BY policy_version
    ),
    per_group AS (
        SELECT
            policy_version,
            group_id,
            count() AS group_rollouts,
            countIf(excluded) AS group_excluded
        FROM advantages FINAL
        WHERE event_time >= {since:DateTime64(3, 'UTC')} AND config_id = {config_id:String}
        GROUP BY policy_version, group_id
    ),
    adv AS (
        SELECT
            policy_version,
            sum(group_rollouts) AS rollouts,
            sum(group_excluded) AS excluded,
            count() AS groups,
            countIf(group_excluded = group_rollouts) AS uncompared_groups
        FROM per_group
        GROUP BY policy_version
    )
SELECT
    policy_version,
    environment_failures,
    rollouts,
    excluded,
    excluded / rollouts AS excluded_share,
    groups,
    uncompared_groups,
    uncompared_groups / groups AS uncompared_group_share
FROM fb
FULL OUTER JOIN adv USING (policy_version)
ORDER BY policy_version
SETTINGS join_use_nulls = 1
