-- What the sample browser's filters offer for one config: its bug patterns and the range of its policy versions.
-- Parameters: config_id.
SELECT
    arraySort(groupUniqArray(bug_pattern)) AS bug_patterns,
    min(policy_version) AS version_min,
    max(policy_version) AS version_max
FROM advantages
WHERE config_id = {config_id:String}
