-- Proxy reward against held-out success per policy version: the reward-hacking gap.
--
-- proxy_reward    mean reward_enhanced of the advantages of config_id (what is optimised)
-- heldout_success mean values['success_at_1'] of metrics rows with source = 'eval'
-- gap             proxy_reward - heldout_success (NULL unless both sides exist)
-- The policy version of an eval row is labels['policy_version'] when that label holds
-- an integer, else the row's step. Eval rows count for config_id when their config_id
-- is config_id or empty (an evaluation that did not record the config). Eval rows
-- without a success_at_1 value are ignored. A version on one side only keeps NULLs.
-- Parameters: since, config_id.
WITH
    proxy AS (
        SELECT
            policy_version,
            count() AS advantage_rows,
            avg(reward_enhanced) AS proxy_reward
        FROM advantages FINAL
        WHERE event_time >= {since:DateTime64(3, 'UTC')} AND config_id = {config_id:String}
        GROUP BY policy_version
    ),
    heldout AS (
        SELECT
            ifNull(toInt64OrNull(labels['policy_version']), step) AS policy_version,
            count() AS eval_rows,
            avg(`values`['success_at_1']) AS heldout_success
        FROM metrics FINAL
        WHERE event_time >= {since:DateTime64(3, 'UTC')}
          AND source = 'eval'
          AND config_id IN ({config_id:String}, '')
          AND mapContains(`values`, 'success_at_1')
        GROUP BY policy_version
    )
SELECT
    policy_version,
    advantage_rows,
    proxy_reward,
    eval_rows,
    heldout_success,
    proxy_reward - heldout_success AS gap
FROM proxy
FULL OUTER JOIN heldout USING (policy_version)
ORDER BY policy_version
SETTINGS join_use_nulls = 1
