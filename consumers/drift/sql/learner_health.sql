-- Learner health over steps: KL to the reference, importance-weight corrections,
-- clipping, policy lag, stale drops and gradient norm (metrics with source = 'learner').
--
-- One row per learner step; when several rows share a step (restarts, several configs
-- with an empty config_id filter) their values are averaged. A metric a row did not
-- report is NULL, not 0 (a missing Map key would otherwise read as 0).
-- kl_ref is taken only from rows that say they measured it (kl_measured = 1): a learner
-- that skips the reference pass (kl_measure_every) reports none, and rows written before
-- the flag existed carried a 0 that was never computed whenever beta was 0.
-- kl_coef is the KL coefficient (beta) the step's loss used, from its schedule or controller.
-- config_id: one config, or '' for every config.
-- Parameters: since, config_id.
SELECT
    step,
    count() AS metric_rows,
    avgIf(`values`['loss/kl_ref'], mapContains(`values`, 'loss/kl_ref') AND `values`['kl_measured'] = 1) AS kl_ref,
    avgIf(`values`['kl_coef'], mapContains(`values`, 'kl_coef')) AS kl_coef,
    avgIf(`values`['loss/is_truncated_share'], mapContains(`values`, 'loss/is_truncated_share')) AS is_truncated_share,
    avgIf(`values`['loss/is_masked_share'], mapContains(`values`, 'loss/is_masked_share')) AS is_masked_share,
    avgIf(`values`['loss/clip_low_frac'], mapContains(`values`, 'loss/clip_low_frac')) AS clip_low_frac,
    avgIf(`values`['loss/clip_high_frac'], mapContains(`values`, 'loss/clip_high_frac')) AS clip_high_frac,
    avgIf(`values`['lag_mean'], mapContains(`values`, 'lag_mean')) AS lag_mean,
    avgIf(`values`['dropped_stale'], mapContains(`values`, 'dropped_stale')) AS dropped_stale,
    avgIf(`values`['grad_norm'], mapContains(`values`, 'grad_norm')) AS grad_norm
FROM metrics FINAL
WHERE event_time >= {since:DateTime64(3, 'UTC')}
  AND source = 'learner'
  AND ({config_id:String} = '' OR config_id = {config_id:String})
GROUP BY step
ORDER BY step
SETTINGS aggregate_functions_null_for_empty = 1
