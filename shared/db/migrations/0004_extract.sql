-- Extraction runs per chat event (owner, event_id): what the extract service did with
-- an ExtractJob. A redelivered job whose LLM pass already succeeded does not call the
-- LLM again (no second bill, no differently worded duplicates). Idempotent.
CREATE TABLE IF NOT EXISTS extract_runs (
    owner        text NOT NULL,
    event_id     text NOT NULL,
    rule_facts   integer NOT NULL DEFAULT 0,
    llm_facts    integer NOT NULL DEFAULT 0,
    llm_status   text NOT NULL,          -- ok | unavailable | bad_reply | budget | error | off
    runs         integer NOT NULL DEFAULT 1,
    processed_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (owner, event_id)
);
