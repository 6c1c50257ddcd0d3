-- People's verdicts on samples against the automatic hack detectors, per verdict and hack class.
--
-- Answers: how many samples were reviewed, and how often did the detectors agree with the
-- person? Each rollout counts once, with its latest verdict (a person may change their mind).
--   label             the verdict, with its class for a hack
--   reviews           reviewed rollouts with this verdict and class
--   detector_flagged  of them, rollouts on which some automatic detector raised a flag
--   agreed            verdict hack and some flag raised, or verdict fine and none raised
--   agreement         agreed / reviews
-- Parameters: since (lower bound on the verdict's event_time).
WITH latest AS (
    SELECT
        rollout_id,
        argMax(verdict, event_time) AS verdict,
        argMax(hack_class, event_time) AS hack_class,
        argMax(automatic_flags, event_time) AS automatic_flags
    FROM reviews FINAL
    WHERE event_time >= {since:DateTime64(3, 'UTC')}
    GROUP BY rollout_id
)
SELECT
    if(verdict = 'hack', concat('hack: ', hack_class), verdict) AS label,
    verdict,
    hack_class,
    count() AS reviews,
    countIf(notEmpty(automatic_flags)) AS detector_flagged,
    countIf((verdict = 'hack') = notEmpty(automatic_flags)) AS agreed,
    agreed / reviews AS agreement
FROM latest
GROUP BY verdict, hack_class
ORDER BY verdict, hack_class
