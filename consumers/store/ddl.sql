-- One table per topic payload (schemas/*.avsc); columns mirror the Avro fields.
--
-- Conventions shared by every table:
--   * event_time DateTime64(3, 'UTC') is the Avro created_at_ms.
--   * _topic/_partition/_offset are the Kafka coordinates the event was read from
--     (defaults when a row did not come from Kafka); _inserted_at is the load time.
--   * ReplacingMergeTree collapses rows with the same ORDER BY key. Every key ends in
--     event_id, and a replayed event carries the same values in the leading columns, so a
--     batch written twice is one row per event after dedup. Dedup runs at merge time:
--     queries that must count exact rows read with FINAL. Insert deduplication tokens are
--     not used because chDB does not apply them reliably; ReplacingMergeTree + FINAL is
--     the one rule on both backends.
--   * The key leads with the columns the drift queries filter and group by, so those
--     scans read contiguous ranges. Monthly partitions keep merges and retention cheap;
--     the partition is a function of event_time, so copies of an event share it.
--   * Avro float -> Float32, double -> Float64, int -> Int32, long -> Int64; enum-like
--     strings are LowCardinality(String).

CREATE TABLE IF NOT EXISTS tasks
(
    event_id         String,
    schema_version   Int32,
    event_time       DateTime64(3, 'UTC'),
    task_id          String,
    function_id      String,
    source           LowCardinality(String),
    split            LowCardinality(String),
    description      String,
    entry_point      String,
    reference_code   String,
    buggy_code       String,
    test_setup_code  String,
    test_imports     Array(String),
    tests            Array(String),
    bug_pattern      LowCardinality(String),
    difficulty       Float32,
    seed             Int64,
    error_context    String,
    visible_tests    Array(String),
    _topic           LowCardinality(String) DEFAULT '',
    _partition       Int32 DEFAULT -1,
    _offset          Int64 DEFAULT -1,
    _inserted_at     DateTime64(3, 'UTC') DEFAULT now64(3)
)
ENGINE = ReplacingMergeTree
PARTITION BY toYYYYMM(event_time)
-- corpus and pattern first: task mix per corpus/pattern is what analysis slices by
ORDER BY (source, bug_pattern, task_id, event_id);

CREATE TABLE IF NOT EXISTS rollouts
(
    event_id                 String,
    schema_version           Int32,
    event_time               DateTime64(3, 'UTC'),
    rollout_id               String,
    group_id                 String,
    task_id                  String,
    sample_index             Int32,
    group_size               Int32,
    policy_version           Int64,
    generator_id             LowCardinality(String),
    prompt_template_version  LowCardinality(String),
    prompt_token_ids         Array(Int32),
    completion_token_ids     Array(Int32),
    behaviour_logprobs       Array(Float32),
    completion_text          String,
    finish_reason            LowCardinality(String),
    temperature              Float32,
    top_p                    Float32,
    top_k                    Int32,
    max_new_tokens           Int32,
    sampling_seed            Int64,
    _topic                   LowCardinality(String) DEFAULT '',
    _partition               Int32 DEFAULT -1,
    _offset                  Int64 DEFAULT -1,
    _inserted_at             DateTime64(3, 'UTC') DEFAULT now64(3)
)
ENGINE = ReplacingMergeTree
PARTITION BY toYYYYMM(event_time)
-- generation throughput and lag are read per policy version over time
ORDER BY (policy_version, event_time, event_id);

-- test_outcomes is an Array of named Tuples: the Avro array of TestOutcome records maps
-- onto it field by field, clickhouse-connect writes Python dicts into named tuples on
-- both backends, and SQL reads it with ARRAY JOIN test_outcomes AS o ... o.passed.
CREATE TABLE IF NOT EXISTS feedback
(
    event_id                String,
    schema_version          Int32,
    event_time              DateTime64(3, 'UTC'),
    rollout_id              String,
    group_id                String,
    task_id                 String,
    bug_pattern             LowCardinality(String),
    difficulty              Float32,
    sample_index            Int32,
    group_size              Int32,
    policy_version          Int64,
    evaluator_version       LowCardinality(String),
    repeats                 Int32,
    tests_total             Int32,
    tests_passed            Int32,
    pass_fraction_runs      Array(Float32),
    test_outcomes           Array(Tuple(
                                index Int32,
                                passed Bool,
                                error_kind LowCardinality(String),
                                message String,
                                runtime_ms Float32)),
    error_kind              LowCardinality(String),
    error_message           String,
    runtime_ms              Float32,
    tree_edit_distance      Float32,
    tree_edit_distance_raw  Int32,
    style_class             LowCardinality(String),
    flake8_codes            Array(LowCardinality(String)),
    hack_flags              Array(LowCardinality(String)),
    cyclomatic_complexity   Int32,
    fixed_pattern           LowCardinality(String),
    adversarial_mismatches  Int32,
    adversarial_checked     Int32,
    rename_passed           Nullable(Bool),
    prompt_token_ids        Array(Int32),
    completion_token_ids    Array(Int32),
    behaviour_logprobs      Array(Float32),
    finish_reason           LowCardinality(String),
    completion_text         String,
    rename_checked          Bool,
    exec_line_coverage      Float32,
    exec_tracer_use         Bool,
    environment_failure     Bool,
    evaluation_attempts     Int32,
    flaky                   Bool,
    adversarial_skip_reason LowCardinality(String),
    _topic                  LowCardinality(String) DEFAULT '',
    _partition              Int32 DEFAULT -1,
    _offset                 Int64 DEFAULT -1,
    _inserted_at            DateTime64(3, 'UTC') DEFAULT now64(3)
)
ENGINE = ReplacingMergeTree
PARTITION BY toYYYYMM(event_time)
-- drift: pass rate / hack rate per bug pattern, per policy version, per time window
ORDER BY (bug_pattern, policy_version, event_time, event_id);

-- Every advantages.<config_id> stream lands here; config_id tells them apart.
CREATE TABLE IF NOT EXISTS advantages
(
    event_id              String,
    schema_version        Int32,
    event_time            DateTime64(3, 'UTC'),
    config_id             LowCardinality(String),
    rollout_id            String,
    feedback_event_id     String,
    group_id              String,
    task_id               String,
    bug_pattern           LowCardinality(String),
    sample_index          Int32,
    group_size            Int32,
    group_members         Int32,
    group_complete        Bool,
    policy_version        Int64,
    reward_raw            Float32,
    components            Map(LowCardinality(String), Float32),
    weights               Map(LowCardinality(String), Float32),
    reward_enhanced       Float32,
    reward_normalised     Float32,
    advantage             Float32,
    ema_baseline          Float32,
    global_count          Int64,
    global_mean           Float32,
    global_std            Float32,
    group_mean            Float32,
    group_std             Float32,
    warmup                Bool,
    norm_mode             LowCardinality(String),
    norm_centre           Float32,
    norm_scale            Float32,
    excluded              Bool,
    hack_flags            Array(LowCardinality(String)),
    prompt_token_ids      Array(Int32),
    completion_token_ids  Array(Int32),
    behaviour_logprobs    Array(Float32),
    finish_reason         LowCardinality(String),
    _topic                LowCardinality(String) DEFAULT '',
    _partition            Int32 DEFAULT -1,
    _offset               Int64 DEFAULT -1,
    _inserted_at          DateTime64(3, 'UTC') DEFAULT now64(3)
)
ENGINE = ReplacingMergeTree
PARTITION BY toYYYYMM(event_time)
-- two reshaping configs side by side after a replay: config first, then version and time
ORDER BY (config_id, policy_version, event_time, event_id);

CREATE TABLE IF NOT EXISTS policy
(
    event_id        String,
    schema_version  Int32,
    event_time      DateTime64(3, 'UTC'),
    version         Int64,
    learner_step    Int64,
    location        String,
    sha256          String,
    base_model      LowCardinality(String),
    config_id       LowCardinality(String),
    _topic          LowCardinality(String) DEFAULT '',
    _partition      Int32 DEFAULT -1,
    _offset         Int64 DEFAULT -1,
    _inserted_at    DateTime64(3, 'UTC') DEFAULT now64(3)
)
ENGINE = ReplacingMergeTree
PARTITION BY toYYYYMM(event_time)
-- looked up by version (which checkpoint produced policy N)
ORDER BY (version, event_id);

CREATE TABLE IF NOT EXISTS metrics
(
    event_id        String,
    schema_version  Int32,
    event_time      DateTime64(3, 'UTC'),
    source          LowCardinality(String),
    step            Int64,
    config_id       LowCardinality(String),
    `values`        Map(String, Float64),
    labels          Map(String, String),
    _topic          LowCardinality(String) DEFAULT '',
    _partition      Int32 DEFAULT -1,
    _offset         Int64 DEFAULT -1,
    _inserted_at    DateTime64(3, 'UTC') DEFAULT now64(3)
)
ENGINE = ReplacingMergeTree
PARTITION BY toYYYYMM(event_time)
-- curves are read per source (learner, reshape, ...) and config, in step order
ORDER BY (source, config_id, step, event_id);

-- key/value hold the raw Kafka bytes (Avro framing is not UTF-8): select hex(value)
-- to read them as text.
CREATE TABLE IF NOT EXISTS dead_letters
(
    event_id          String,
    schema_version    Int32,
    event_time        DateTime64(3, 'UTC'),
    source_topic      LowCardinality(String),
    source_partition  Int32,
    source_offset     Int64,
    consumer          LowCardinality(String),
    key               Nullable(String),
    value             Nullable(String),
    error_type        LowCardinality(String),
    error_message     String,
    _topic            LowCardinality(String) DEFAULT '',
    _partition        Int32 DEFAULT -1,
    _offset           Int64 DEFAULT -1,
    _inserted_at      DateTime64(3, 'UTC') DEFAULT now64(3)
)
ENGINE = ReplacingMergeTree
PARTITION BY toYYYYMM(event_time)
-- triage is per source topic, newest first
ORDER BY (source_topic, event_time, event_id);

-- A person's verdicts on samples (dashboard review); code_fingerprint ties a verdict to
-- every rollout whose code has the same syntax tree up to local names.
CREATE TABLE IF NOT EXISTS reviews
(
    event_id          String,
    schema_version    Int32,
    event_time        DateTime64(3, 'UTC'),
    rollout_id        String,
    config_id         LowCardinality(String),
    task_id           String,
    bug_pattern       LowCardinality(String),
    policy_version    Int64,
    verdict           LowCardinality(String),
    hack_class        LowCardinality(String),
    code_fingerprint  String,
    automatic_flags   Array(LowCardinality(String)),
    reviewer          String,
    note              String,
    _topic            LowCardinality(String) DEFAULT '',
    _partition        Int32 DEFAULT -1,
    _offset           Int64 DEFAULT -1,
    _inserted_at      DateTime64(3, 'UTC') DEFAULT now64(3)
)
ENGINE = ReplacingMergeTree
PARTITION BY toYYYYMM(event_time)
-- read per fingerprint (is this code a reviewed hack?) and per rollout (its verdicts)
ORDER BY (code_fingerprint, rollout_id, event_id);
