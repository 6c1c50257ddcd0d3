-- Two reshaping configs side by side on the same feedback (after a replay).
--
-- The advantages of config_a and config_b are matched on rollout_id, so both are judged
-- on exactly the same rollouts; one row per config (side 'a' then 'b'), over the
-- matched rollouts only, none when nothing matched. When a config holds several
-- advantages for one rollout (it was replayed twice) the latest event counts.
--   rows_in_config    rollouts with an advantage of that config since `since`
--   rows_matched      rollouts present under both configs
--   advantage_mean, advantage_std  (population std)
--   zero_group_share  share of matched groups whose every advantage is 0 (|A| <= 1e-6):
--                     groups with zero reward variance, which teach the learner nothing
--   corr_advantage_raw  Pearson corr(advantage, reward_raw): how much of the plain pass
--                     rate survives the reshaping (nan when either side is constant)
--   reward_enhanced_mean
-- One scan and one GROUP BY rollout_id (-If combinators per config) instead of a join
-- of two subqueries: ClickHouse inlines each CTE reference, so a join would rescan.
-- Parameters: since, config_a, config_b.
WITH
    per_rollout AS (
        SELECT
            rollout_id,
            any(group_id) AS group_id,
            countIf(config_id = {config_a:String}) > 0 AS in_a,
            countIf(config_id = {config_b:String}) > 0 AS in_b,
            argMaxIf(advantage, event_time, config_id = {config_a:String}) AS adv_a,
            argMaxIf(advantage, event_time, config_id = {config_b:String}) AS adv_b,
            argMaxIf(reward_raw, event_time, config_id = {config_a:String}) AS raw_a,
            argMaxIf(reward_raw, event_time, config_id = {config_b:String}) AS raw_b,
            argMaxIf(reward_enhanced, event_time, config_id = {config_a:String}) AS enh_a,
            argMaxIf(reward_enhanced, event_time, config_id = {config_b:String}) AS enh_b
        FROM advantages FINAL
        WHERE event_time >= {since:DateTime64(3, 'UTC')}
          AND config_id IN ({config_a:String}, {config_b:String})
        GROUP BY rollout_id
    ),
    stats AS (
        SELECT
            countIf(in_a) AS rows_a,
            countIf(in_b) AS rows_b,
            countIf(in_a AND in_b) AS matched,
            uniqExactIf(group_id, in_a AND in_b) AS groups,
            avgIf(adv_a, in_a AND in_b) AS mean_a,
            avgIf(adv_b, in_a AND in_b) AS mean_b,
            stddevPopIf(adv_a, in_a AND in_b) AS std_a,
            stddevPopIf(adv_b, in_a AND in_b) AS std_b,
            -- a group is zero unless some member's advantage is not
            1 - uniqExactIf(group_id, in_a AND in_b AND abs(adv_a) > 1e-6) / groups AS zero_a,
            1 - uniqExactIf(group_id, in_a AND in_b AND abs(adv_b) > 1e-6) / groups AS zero_b,
            corrIf(adv_a, raw_a, in_a AND in_b) AS corr_a,
            corrIf(adv_b, raw_b, in_a AND in_b) AS corr_b,
            avgIf(enh_a, in_a AND in_b) AS enh_mean_a,
            avgIf(enh_b, in_a AND in_b) AS enh_mean_b
        FROM per_rollout
    )
-- unpivot the one stats row into a row per config
SELECT
    s.1 AS side,
    s.2 AS config_id,
    s.3 AS rows_in_config,
    s.4 AS rows_matched,
    s.5 AS advantage_mean,
    s.6 AS advantage_std,
    s.7 AS zero_group_share,
    s.8 AS corr_advantage_raw,
    s.9 AS reward_enhanced_mean
FROM stats
ARRAY JOIN [
    ('a', {config_a:String}, rows_a, matched, mean_a, std_a, zero_a, corr_a, enh_mean_a),
    ('b', {config_b:String}, rows_b, matched, mean_b, std_b, zero_b, corr_b, enh_mean_b)
] AS s
WHERE matched > 0
ORDER BY side
