-- Events per second over time windows: rollouts evaluated (feedback) and advantages
-- written for one reshaping config, each counted by its own event time.
-- Parameters: since, config_id, window_s (seconds per window).
WITH
    fb AS (
        SELECT
            toStartOfInterval(event_time, INTERVAL {window_s:UInt32} SECOND, 'UTC') AS window_start,
            count() / {window_s:UInt32} AS feedback_per_s
        FROM feedback FINAL
        WHERE event_time >= {since:DateTime64(3, 'UTC')}
        GROUP BY window_start
    ),
    adv AS (
        SELECT
            toStartOfInterval(event_time, INTERVAL {window_s:UInt32} SECOND, 'UTC') AS window_start,
            count() / {window_s:UInt32} AS advantages_per_s
        FROM advantages FINAL
        WHERE event_time >= {since:DateTime64(3, 'UTC')} AND config_id = {config_id:String}
        GROUP BY window_start
    )
SELECT
    window_start,
    feedback_per_s,
    advantages_per_s
FROM fb
FULL OUTER JOIN adv USING (window_start)
ORDER BY window_start
SETTINGS join_use_nulls = 1
