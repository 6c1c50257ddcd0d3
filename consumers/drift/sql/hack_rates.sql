-- Reward-hack flag rates over time: the share of feedback rows raising each flag.
--
-- One row per (window, flag) for every flag seen since `since`, including windows where
-- the flag did not fire (rate 0), so a rate that falls to zero shows as a zero.
--   flagged   feedback rows in the window whose hack_flags contain the flag
--   rollouts  all feedback rows in the window (the denominator)
--   rate      flagged / rollouts
-- A flag listed twice on one row counts once (arrayDistinct).
-- Parameters: since, window_s (seconds per window).
WITH
    windows AS (
        SELECT
            toStartOfInterval(event_time, INTERVAL {window_s:UInt32} SECOND, 'UTC') AS window_start,
            count() AS rollouts
        FROM feedback FINAL
        WHERE event_time >= {since:DateTime64(3, 'UTC')}
        GROUP BY window_start
    ),
    flagged AS (
        SELECT
            toStartOfInterval(event_time, INTERVAL {window_s:UInt32} SECOND, 'UTC') AS window_start,
            arrayJoin(arrayDistinct(hack_flags)) AS flag,
            count() AS flagged
        FROM feedback FINAL
        WHERE event_time >= {since:DateTime64(3, 'UTC')}
        GROUP BY window_start, flag
    ),
    flags AS (SELECT DISTINCT flag FROM flagged)
SELECT
    w.window_start AS window_start,
    f.flag AS flag,
    coalesce(c.flagged, 0) AS flagged,
    w.rollouts AS rollouts,
    coalesce(c.flagged, 0) / w.rollouts AS rate
FROM windows AS w
CROSS JOIN flags AS f
LEFT JOIN flagged AS c ON c.window_start = w.window_start AND c.flag = f.flag
ORDER BY window_start, flag
