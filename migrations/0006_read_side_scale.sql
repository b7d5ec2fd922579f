-- Recall at scale (issue 16).
--
-- Vector search per bank: the global HNSW index answered "nearest of all banks", so a filtered
-- scan of one bank came back short or wrong, and pgvector 0.6 has no iterative scan to fix it.
-- Small banks are scanned exactly (bank btree); a bank above a size gets a partial HNSW index
-- of its own, built CONCURRENTLY by the maintenance step (store/vector_indexes.py) and listed
-- here once it is valid. Dropping the global index also spares every insert its HNSW update.
DROP INDEX IF EXISTS memory_units_embedding_hnsw;

CREATE TABLE IF NOT EXISTS bank_vector_indexes (
    bank_id         text PRIMARY KEY,
    index_name      text NOT NULL UNIQUE,
    facts_at_build  integer NOT NULL,
    built_at        timestamptz NOT NULL DEFAULT now()
);

-- Keyword statistics of a big bank, refreshed by the same maintenance step: document
-- frequency per lexeme and the bank's mean document length, so the keyword arm can score the
-- facts of its rarest terms first instead of every fact that shares a word with the query.
CREATE TABLE IF NOT EXISTS bank_keyword_stats (
    bank_id       text PRIMARY KEY,
    facts         integer NOT NULL,
    refreshed_at  timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE IF NOT EXISTS bank_lexemes (
    bank_id  text NOT NULL,
    lexeme   text NOT NULL,
    df       integer NOT NULL,
    PRIMARY KEY (bank_id, lexeme)
);

-- Links per bank and type, kept by statement triggers: `/stats` (polled by `tempr ingest
-- --wait`) read them with count(*) over memory_links, which has no bank index (330 ms at
-- 4.6 M links). One aggregate per statement, not per row.
CREATE TABLE IF NOT EXISTS bank_link_counts (
    bank_id    text NOT NULL,
    link_type  text NOT NULL,
    n          bigint NOT NULL,
    PRIMARY KEY (bank_id, link_type)
);

CREATE OR REPLACE FUNCTION bank_link_counts_add() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO bank_link_counts AS c (bank_id, link_type, n)
    SELECT bank_id, link_type, count(*) FROM new_links GROUP BY bank_id, link_type
    ORDER BY bank_id, link_type  -- one lock order for concurrent writers
    ON CONFLICT (bank_id, link_type) DO UPDATE SET n = c.n + excluded.n;
    RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION bank_link_counts_remove() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE bank_link_counts c SET n = c.n - d.n
    FROM (SELECT bank_id, link_type, count(*) AS n FROM old_links GROUP BY bank_id, link_type) d
    WHERE c.bank_id = d.bank_id AND c.link_type = d.link_type;
    RETURN NULL;
END $$;

DROP TRIGGER IF EXISTS memory_links_count_insert ON memory_links;
CREATE TRIGGER memory_links_count_insert AFTER INSERT ON memory_links
    REFERENCING NEW TABLE AS new_links FOR EACH STATEMENT EXECUTE FUNCTION bank_link_counts_add();
DROP TRIGGER IF EXISTS memory_links_count_delete ON memory_links;
CREATE TRIGGER memory_links_count_delete AFTER DELETE ON memory_links
    REFERENCING OLD TABLE AS old_links FOR EACH STATEMENT EXECUTE FUNCTION bank_link_counts_remove();

INSERT INTO bank_link_counts (bank_id, link_type, n)
SELECT bank_id, link_type, count(*) FROM memory_links GROUP BY bank_id, link_type
ON CONFLICT (bank_id, link_type) DO UPDATE SET n = excluded.n;

-- Facts per bank and type, kept the same way: recall reads the bank's size on every query
-- (count(*) over 100k index entries is ~10 ms of a 60 ms budget), `/stats` and the
-- maintenance step read them too.
CREATE TABLE IF NOT EXISTS bank_fact_counts (
    bank_id    text NOT NULL,
    fact_type  text NOT NULL,
    n          bigint NOT NULL,
    PRIMARY KEY (bank_id, fact_type)
);

CREATE OR REPLACE FUNCTION bank_fact_counts_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO bank_fact_counts AS c (bank_id, fact_type, n)
    SELECT bank_id, fact_type, count(*) FROM new_units GROUP BY bank_id, fact_type
    ORDER BY bank_id, fact_type
    ON CONFLICT (bank_id, fact_type) DO UPDATE SET n = c.n + excluded.n;
    RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION bank_fact_counts_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE bank_fact_counts c SET n = c.n - d.n
    FROM (SELECT bank_id, fact_type, count(*) AS n FROM old_units GROUP BY bank_id, fact_type) d
    WHERE c.bank_id = d.bank_id AND c.fact_type = d.fact_type;
    RETURN NULL;
END $$;

-- An update moves a fact between types only when its type changed (upserts rewrite rows).
CREATE OR REPLACE FUNCTION bank_fact_counts_update() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO bank_fact_counts AS c (bank_id, fact_type, n)
    SELECT bank_id, fact_type, sum(d) FROM (
        SELECT n.bank_id, n.fact_type, 1 AS d FROM new_units n JOIN old_units o USING (id)
        WHERE n.fact_type IS DISTINCT FROM o.fact_type OR n.bank_id IS DISTINCT FROM o.bank_id
        UNION ALL
        SELECT o.bank_id, o.fact_type, -1 FROM new_units n JOIN old_units o USING (id)
        WHERE n.fact_type IS DISTINCT FROM o.fact_type OR n.bank_id IS DISTINCT FROM o.bank_id
    ) moved
    GROUP BY bank_id, fact_type HAVING sum(d) <> 0
    ORDER BY bank_id, fact_type
    ON CONFLICT (bank_id, fact_type) DO UPDATE SET n = c.n + excluded.n;
    RETURN NULL;
END $$;

DROP TRIGGER IF EXISTS memory_units_count_insert ON memory_units;
CREATE TRIGGER memory_units_count_insert AFTER INSERT ON memory_units
    REFERENCING NEW TABLE AS new_units FOR EACH STATEMENT EXECUTE FUNCTION bank_fact_counts_insert();
DROP TRIGGER IF EXISTS memory_units_count_delete ON memory_units;
CREATE TRIGGER memory_units_count_delete AFTER DELETE ON memory_units
    REFERENCING OLD TABLE AS old_units FOR EACH STATEMENT EXECUTE FUNCTION bank_fact_counts_delete();
DROP TRIGGER IF EXISTS memory_units_count_update ON memory_units;
CREATE TRIGGER memory_units_count_update AFTER UPDATE ON memory_units
    REFERENCING OLD TABLE AS old_units NEW TABLE AS new_units
    FOR EACH STATEMENT EXECUTE FUNCTION bank_fact_counts_update();

INSERT INTO bank_fact_counts (bank_id, fact_type, n)
SELECT bank_id, fact_type, count(*) FROM memory_units GROUP BY bank_id, fact_type
ON CONFLICT (bank_id, fact_type) DO UPDATE SET n = excluded.n;
