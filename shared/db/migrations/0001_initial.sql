-- memoryd initial schema (DESIGN.md "Storage"). Idempotent: safe to run on a database
-- that already has it.
CREATE EXTENSION IF NOT EXISTS vector;

CREATE TABLE IF NOT EXISTS memories (
    id                  uuid PRIMARY KEY,
    owner               text NOT NULL,
    session_id          text,
    type                text NOT NULL CHECK (type IN ('factual','episodic','procedural','semantic','pattern','summary')),
    key                 text,
    content             text NOT NULL,
    metadata            jsonb NOT NULL DEFAULT '{}'::jsonb,
    source              text NOT NULL CHECK (source IN ('chat_turn','rule','llm','api','sleep','import')),
    scope               text NOT NULL DEFAULT 'apiKey' CHECK (scope IN ('apiKey','session','global')),
    created_at          timestamptz NOT NULL DEFAULT now(),
    updated_at          timestamptz NOT NULL DEFAULT now(),
    last_accessed_at    timestamptz,
    expires_at          timestamptz,
    state               text NOT NULL DEFAULT 'active' CHECK (state IN ('active','summary','archived')),
    full_content        text,
    content_hash        text NOT NULL,
    embedding_signature text,
    needs_reindex       boolean NOT NULL DEFAULT true,
    tsv                 tsvector GENERATED ALWAYS AS (to_tsvector('english'::regconfig, content)) STORED
);
CREATE UNIQUE INDEX IF NOT EXISTS memories_owner_key ON memories (owner, key) WHERE key IS NOT NULL;
CREATE INDEX IF NOT EXISTS memories_owner_created ON memories (owner, created_at DESC);
CREATE INDEX IF NOT EXISTS memories_owner_session ON memories (owner, session_id);
CREATE INDEX IF NOT EXISTS memories_tsv ON memories USING gin (tsv);
CREATE INDEX IF NOT EXISTS memories_needs_reindex ON memories (owner) WHERE needs_reindex;
CREATE INDEX IF NOT EXISTS memories_global ON memories (created_at) WHERE scope = 'global';
CREATE INDEX IF NOT EXISTS memories_expires ON memories (expires_at) WHERE expires_at IS NOT NULL;

-- Raw chat turns already stored, per owner and session, by role and content hash.
CREATE TABLE IF NOT EXISTS turn_hashes (
    owner       text NOT NULL,
    session_key text NOT NULL,          -- session_id, or '' when the event had none
    role        text NOT NULL,
    hash        text NOT NULL,
    memory_id   uuid REFERENCES memories (id) ON DELETE SET NULL,
    PRIMARY KEY (owner, session_key, role, hash)
);

-- Tier 1 vectors: one row per memory and embedding signature. Search uses a partial
-- HNSW index per active signature (created by the embed service, cast to its dimension).
CREATE TABLE IF NOT EXISTS memory_embeddings (
    memory_id   uuid NOT NULL REFERENCES memories (id) ON DELETE CASCADE,
    signature   text NOT NULL,
    owner       text NOT NULL,
    dim         integer NOT NULL,
    embedding   vector NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (memory_id, signature)
);
CREATE INDEX IF NOT EXISTS memory_embeddings_owner ON memory_embeddings (signature, owner);

-- Processed chat events (idempotency by event id).
CREATE TABLE IF NOT EXISTS events (
    event_id     text NOT NULL,
    owner        text NOT NULL,
    session_id   text,
    processed_at timestamptz NOT NULL DEFAULT now(),
    turns_stored integer NOT NULL DEFAULT 0,
    no_memory    boolean NOT NULL DEFAULT false,
    PRIMARY KEY (owner, event_id)
);

-- Runtime settings: owner '*' holds the global values, any other owner overrides them.
CREATE TABLE IF NOT EXISTS settings (
    owner      text PRIMARY KEY,
    "values"   jsonb NOT NULL DEFAULT '{}'::jsonb,
    updated_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE IF NOT EXISTS memory_vec_meta (
    store               text PRIMARY KEY,   -- 'pgvector' | 'qdrant'
    active_dim          integer,
    embedding_signature text,
    pending_signature   text,
    last_reset_at       timestamptz,
    updated_at          timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE IF NOT EXISTS dream_runs (
    id          uuid PRIMARY KEY,
    owner       text NOT NULL,
    run_type    text NOT NULL DEFAULT 'sleep',
    status      text NOT NULL CHECK (status IN ('queued','running','ok','noop','degraded','refreshed','aborted','failed')),
    reason      text,
    started_at  timestamptz,
    finished_at timestamptz,
    phases      jsonb NOT NULL DEFAULT '{}'::jsonb,
    counters    jsonb NOT NULL DEFAULT '{}'::jsonb,
    receipt     text,
    created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX IF NOT EXISTS dream_runs_owner ON dream_runs (owner, created_at DESC);

CREATE TABLE IF NOT EXISTS conflict_reviewed (
    owner      text NOT NULL,
    memory_a   uuid NOT NULL,
    memory_b   uuid NOT NULL,
    judged_at  timestamptz NOT NULL,
    outcome    text NOT NULL,
    run_id     uuid,
    PRIMARY KEY (owner, memory_a, memory_b),
    CHECK (memory_a < memory_b)
);

CREATE TABLE IF NOT EXISTS differentiated_pairs (
    owner        text NOT NULL,
    memory_a     uuid NOT NULL,
    memory_b     uuid NOT NULL,
    hash_a       text NOT NULL,
    hash_b       text NOT NULL,
    distinctions text NOT NULL DEFAULT '',
    run_id       uuid,
    created_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (owner, memory_a, memory_b),
    CHECK (memory_a < memory_b)
);

CREATE TABLE IF NOT EXISTS conflict_pending (
    id         uuid PRIMARY KEY,
    owner      text NOT NULL,
    memory_a   uuid NOT NULL,
    memory_b   uuid NOT NULL,
    reason     text NOT NULL DEFAULT '',
    run_id     uuid,
    created_at timestamptz NOT NULL DEFAULT now(),
    resolved_at timestamptz
);
CREATE INDEX IF NOT EXISTS conflict_pending_owner ON conflict_pending (owner) WHERE resolved_at IS NULL;

CREATE TABLE IF NOT EXISTS entities (
    id         uuid PRIMARY KEY,
    owner      text NOT NULL,
    name       text NOT NULL,
    normalized text NOT NULL,
    kind       text NOT NULL DEFAULT 'thing',
    metadata   jsonb NOT NULL DEFAULT '{}'::jsonb,
    mentions   integer NOT NULL DEFAULT 1,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    UNIQUE (owner, normalized)
);

CREATE TABLE IF NOT EXISTS entity_relations (
    id         uuid PRIMARY KEY,
    owner      text NOT NULL,
    source_id  uuid NOT NULL REFERENCES entities (id) ON DELETE CASCADE,
    target_id  uuid NOT NULL REFERENCES entities (id) ON DELETE CASCADE,
    relation   text NOT NULL,
    metadata   jsonb NOT NULL DEFAULT '{}'::jsonb,
    run_id     uuid,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX IF NOT EXISTS entity_relations_unique
    ON entity_relations (owner, source_id, target_id, relation)
    WHERE relation <> 'affective_context';
CREATE INDEX IF NOT EXISTS entity_relations_owner ON entity_relations (owner, relation);

-- Entity mentions per memory (feeds co-occurrence for relation completion).
CREATE TABLE IF NOT EXISTS entity_mentions (
    entity_id uuid NOT NULL REFERENCES entities (id) ON DELETE CASCADE,
    memory_id uuid NOT NULL REFERENCES memories (id) ON DELETE CASCADE,
    PRIMARY KEY (entity_id, memory_id)
);

CREATE TABLE IF NOT EXISTS content_history (
    id          bigserial PRIMARY KEY,
    memory_id   uuid NOT NULL REFERENCES memories (id) ON DELETE CASCADE,
    owner       text NOT NULL,
    old_content text NOT NULL,
    reason      text NOT NULL,
    run_id      uuid,
    changed_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX IF NOT EXISTS content_history_memory ON content_history (memory_id);

CREATE TABLE IF NOT EXISTS llm_audit_logs (
    id                bigserial PRIMARY KEY,
    owner             text NOT NULL,
    operation         text NOT NULL,
    model             text,
    prompt_tokens     integer NOT NULL DEFAULT 0,
    completion_tokens integer NOT NULL DEFAULT 0,
    status            text NOT NULL,
    error             text,
    created_at        timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX IF NOT EXISTS llm_audit_owner_day ON llm_audit_logs (owner, created_at);
