import GRDB

/// The SQLite layout, as versioned migrations run at start. Shipped migrations are frozen text.
enum SQLiteMigrations {
    static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1-receipts-postbacks") { db in
            try db.execute(sql: """
                CREATE TABLE receipts (
                    id INTEGER PRIMARY KEY,
                    received_at TEXT NOT NULL,
                    remote_address TEXT,
                    route TEXT NOT NULL,
                    body BLOB NOT NULL,
                    outcome TEXT NOT NULL,
                    reason TEXT,
                    disposition TEXT NOT NULL,
                    postback_id INTEGER
                );
                CREATE TABLE postbacks (
                    id INTEGER PRIMARY KEY,
                    dedup_key TEXT NOT NULL UNIQUE,
                    protocol TEXT NOT NULL,
                    version TEXT,
                    outcome TEXT NOT NULL,
                    reason TEXT,
                    key_id TEXT,
                    environment TEXT,
                    countable INTEGER NOT NULL,
                    received_at TEXT NOT NULL,
                    postback_identifier TEXT NOT NULL,
                    ad_network_id TEXT NOT NULL,
                    source_identifier TEXT,
                    campaign_id INTEGER,
                    advertised_item_id INTEGER NOT NULL,
                    conversion_type TEXT NOT NULL,
                    redownload INTEGER,
                    did_win INTEGER NOT NULL,
                    conversion_window INTEGER NOT NULL,
                    publisher_item_id INTEGER,
                    source_domain TEXT,
                    marketplace_id TEXT,
                    impression_type TEXT,
                    fidelity_type INTEGER,
                    conversion_value INTEGER,
                    coarse_value TEXT,
                    ad_interaction_type TEXT,
                    country_code TEXT,
                    source_digits TEXT,
                    digit_count INTEGER,
                    conversion_class TEXT,
                    interaction TEXT,
                    tier_min INTEGER NOT NULL,
                    tier_max INTEGER NOT NULL,
                    signed_json TEXT NOT NULL,
                    unsigned_json TEXT NOT NULL,
                    receipt_id INTEGER NOT NULL,
                    route TEXT NOT NULL,
                    content_hash BLOB NOT NULL,
                    duplicates INTEGER NOT NULL DEFAULT 0,
                    replays INTEGER NOT NULL DEFAULT 0
                );
                CREATE INDEX postbacks_received_at ON postbacks(received_at);
                CREATE INDEX postbacks_outcome ON postbacks(outcome) WHERE outcome = 'unverifiable';
                """)
        }
        migrator.registerMigration("v2-schemas-events-apikeys") { db in
            try db.execute(sql: """
                CREATE TABLE api_keys (
                    id INTEGER PRIMARY KEY,
                    name TEXT NOT NULL,
                    prefix TEXT NOT NULL,
                    key_hash BLOB NOT NULL UNIQUE,
                    created_at TEXT NOT NULL,
                    revoked_at TEXT
                );
                CREATE TABLE schemas (
                    id INTEGER PRIMARY KEY,
                    app TEXT NOT NULL,
                    revision INTEGER NOT NULL,
                    document TEXT NOT NULL,
                    uploaded_at TEXT NOT NULL,
                    UNIQUE (app, revision)
                );
                CREATE TABLE postback_events (
                    id INTEGER PRIMARY KEY,
                    postback_id INTEGER NOT NULL REFERENCES postbacks(id),
                    app TEXT NOT NULL,
                    schema_revision INTEGER NOT NULL,
                    schema_version INTEGER NOT NULL,
                    event_index INTEGER NOT NULL,
                    name TEXT NOT NULL,
                    count INTEGER,
                    revenue_min REAL,
                    revenue_max REAL,
                    currency TEXT,
                    properties TEXT
                );
                CREATE INDEX postback_events_postback ON postback_events(postback_id);
                ALTER TABLE postbacks ADD COLUMN decode_status TEXT;
                ALTER TABLE postbacks ADD COLUMN schema_revision INTEGER;
                ALTER TABLE postbacks ADD COLUMN schema_version INTEGER;
                ALTER TABLE postbacks ADD COLUMN revenue_min REAL;
                ALTER TABLE postbacks ADD COLUMN revenue_max REAL;
                ALTER TABLE postbacks ADD COLUMN currency TEXT;
                ALTER TABLE postbacks ADD COLUMN source_json TEXT;
                CREATE INDEX postbacks_app ON postbacks(advertised_item_id, received_at);
                """)
        }
        migrator.registerMigration("v3-analyst-views") { db in
            // Views for analysts (docs/sql.md): stable names over the storage tables. Values Apple does not sign
            // carry `_unsigned` in their names so no query mistakes them for signed ones.
            try db.execute(sql: """
                CREATE VIEW conversions AS
                SELECT p.id, p.received_at, substr(p.received_at, 1, 10) AS day, p.protocol, p.version,
                       p.outcome, p.environment, p.key_id, p.countable,
                       p.ad_network_id, p.advertised_item_id AS app, p.dedup_key, p.postback_identifier,
                       p.source_digits AS source_identifier, p.digit_count,
                       substr(p.source_digits, 1, 2) AS campaign,
                       CASE WHEN p.digit_count >= 3 THEN substr(p.source_digits, 3, 1) END AS ad_group,
                       CASE WHEN p.digit_count >= 4 THEN substr(p.source_digits, 4, 1) END AS creative,
                       p.source_json AS source_levels,
                       p.conversion_type, p.conversion_class, p.conversion_window, p.did_win, p.redownload,
                       p.interaction, p.fidelity_type, p.publisher_item_id, p.source_domain, p.marketplace_id,
                       p.tier_min, p.tier_max,
                       p.conversion_value AS conversion_value_unsigned, p.coarse_value AS coarse_value_unsigned,
                       p.ad_interaction_type AS ad_interaction_type_unsigned, p.country_code AS country_code_unsigned,
                       p.decode_status, p.schema_revision, p.schema_version,
                       p.revenue_min, p.revenue_max, (p.revenue_min + p.revenue_max) / 2.0 AS revenue_mid, p.currency,
                       p.duplicates, p.replays
                FROM postbacks p
                WHERE p.outcome IN ('verified', 'unverifiable');
                CREATE VIEW conversion_events AS
                SELECT e.id AS event_id, e.postback_id, c.received_at, c.day, c.protocol, c.environment, c.countable,
                       c.ad_network_id, c.app, c.source_identifier, c.campaign, c.ad_group, c.creative,
                       c.conversion_class, c.conversion_window, c.did_win,
                       e.schema_revision, e.schema_version, e.event_index, e.name AS event, e.count,
                       e.revenue_min, e.revenue_max, (e.revenue_min + e.revenue_max) / 2.0 AS revenue_mid, e.currency, e.properties
                FROM postback_events e JOIN conversions c ON c.id = e.postback_id;
                CREATE VIEW conversions_daily AS
                SELECT day, app, ad_network_id, protocol, environment, campaign, conversion_class, conversion_window,
                       count(*) AS postbacks,
                       sum(countable) AS counted,
                       sum(CASE WHEN countable AND did_win THEN 1 ELSE 0 END) AS counted_winning,
                       sum(CASE WHEN outcome = 'unverifiable' THEN 1 ELSE 0 END) AS unverifiable,
                       sum(duplicates) AS duplicates, sum(replays) AS replays,
                       sum(CASE WHEN countable THEN revenue_min END) AS revenue_min,
                       sum(CASE WHEN countable THEN revenue_max END) AS revenue_max
                FROM conversions
                GROUP BY day, app, ad_network_id, protocol, environment, campaign, conversion_class, conversion_window;
                """)
        }
        migrator.registerMigration("v4-event-count") { db in
            // Reports sum events per postback; keeping the count on the row avoids a lookup per postback.
            try db.execute(sql: """
                ALTER TABLE postbacks ADD COLUMN event_count INTEGER NOT NULL DEFAULT 0;
                UPDATE postbacks SET event_count = (SELECT coalesce(sum(coalesce(count, 1)), 0) FROM postback_events WHERE postback_id = postbacks.id);
                DROP VIEW conversions_daily;
                DROP VIEW conversion_events;
                DROP VIEW conversions;
                """)
            try db.execute(sql: """
                CREATE VIEW conversions AS
                SELECT p.id, p.received_at, substr(p.received_at, 1, 10) AS day, p.protocol, p.version,
                       p.outcome, p.environment, p.key_id, p.countable,
                       p.ad_network_id, p.advertised_item_id AS app, p.dedup_key, p.postback_identifier,
                       p.source_digits AS source_identifier, p.digit_count,
                       substr(p.source_digits, 1, 2) AS campaign,
                       CASE WHEN p.digit_count >= 3 THEN substr(p.source_digits, 3, 1) END AS ad_group,
                       CASE WHEN p.digit_count >= 4 THEN substr(p.source_digits, 4, 1) END AS creative,
                       p.source_json AS source_levels,
                       p.conversion_type, p.conversion_class, p.conversion_window, p.did_win, p.redownload,
                       p.interaction, p.fidelity_type, p.publisher_item_id, p.source_domain, p.marketplace_id,
                       p.tier_min, p.tier_max,
                       p.conversion_value AS conversion_value_unsigned, p.coarse_value AS coarse_value_unsigned,
                       p.ad_interaction_type AS ad_interaction_type_unsigned, p.country_code AS country_code_unsigned,
                       p.decode_status, p.schema_revision, p.schema_version,
                       p.revenue_min, p.revenue_max, (p.revenue_min + p.revenue_max) / 2.0 AS revenue_mid, p.currency,
                       p.event_count, p.duplicates, p.replays
                FROM postbacks p
                WHERE p.outcome IN ('verified', 'unverifiable');
                CREATE VIEW conversion_events AS
                SELECT e.id AS event_id, e.postback_id, c.received_at, c.day, c.protocol, c.environment, c.countable,
                       c.ad_network_id, c.app, c.source_identifier, c.campaign, c.ad_group, c.creative,
                       c.conversion_class, c.conversion_window, c.did_win,
                       e.schema_revision, e.schema_version, e.event_index, e.name AS event, e.count,
                       e.revenue_min, e.revenue_max, (e.revenue_min + e.revenue_max) / 2.0 AS revenue_mid, e.currency, e.properties
                FROM postback_events e JOIN conversions c ON c.id = e.postback_id;
                CREATE VIEW conversions_daily AS
                SELECT day, app, ad_network_id, protocol, environment, campaign, conversion_class, conversion_window,
                       count(*) AS postbacks,
                       sum(countable) AS counted,
                       sum(CASE WHEN countable AND did_win THEN 1 ELSE 0 END) AS counted_winning,
                       sum(CASE WHEN outcome = 'unverifiable' THEN 1 ELSE 0 END) AS unverifiable,
                       sum(duplicates) AS duplicates, sum(replays) AS replays,
                       sum(CASE WHEN countable THEN revenue_min END) AS revenue_min,
                       sum(CASE WHEN countable THEN revenue_max END) AS revenue_max
                FROM conversions
                GROUP BY day, app, ad_network_id, protocol, environment, campaign, conversion_class, conversion_window;
                """)
        }
        migrator.registerMigration("v5-conversion-rollup") { db in
            // A rollup of `conversions` by day and every rollup dimension, kept exact by triggers on `postbacks`, so
            // every write path (ingest, duplicate and replay counters, decode, redecode, reverify) maintains it.
            // Reports read it when their dimensions, filters and whole-day time range allow (see Reports.swift).
            // NULL dimensions are stored as '' or -1 so that the unique key treats them as equal.
            try db.execute(sql: """
                CREATE TABLE conversion_rollup (
                    day TEXT NOT NULL,
                    app INTEGER NOT NULL,
                    ad_network_id TEXT NOT NULL,
                    protocol TEXT NOT NULL,
                    outcome TEXT NOT NULL,
                    environment TEXT NOT NULL,
                    countable INTEGER NOT NULL,
                    source_digits TEXT NOT NULL,
                    digit_count INTEGER NOT NULL,
                    conversion_type TEXT NOT NULL,
                    conversion_class TEXT NOT NULL,
                    conversion_window INTEGER NOT NULL,
                    did_win INTEGER NOT NULL,
                    interaction TEXT NOT NULL,
                    country TEXT NOT NULL,
                    tier_min INTEGER NOT NULL,
                    postbacks INTEGER NOT NULL DEFAULT 0,
                    events INTEGER NOT NULL DEFAULT 0,
                    revenue_min REAL NOT NULL DEFAULT 0,
                    revenue_max REAL NOT NULL DEFAULT 0,
                    without_value INTEGER NOT NULL DEFAULT 0,
                    duplicates INTEGER NOT NULL DEFAULT 0,
                    replays INTEGER NOT NULL DEFAULT 0
                );
                CREATE UNIQUE INDEX conversion_rollup_key ON conversion_rollup (day, app, ad_network_id, protocol, outcome, environment, countable, source_digits, digit_count, conversion_type, conversion_class, conversion_window, did_win, interaction, country, tier_min);
                INSERT INTO conversion_rollup (day, app, ad_network_id, protocol, outcome, environment, countable, source_digits, digit_count, conversion_type, conversion_class, conversion_window, did_win, interaction, country, tier_min, postbacks, events, revenue_min, revenue_max, without_value, duplicates, replays)
                    SELECT substr(p.received_at, 1, 10), p.advertised_item_id, p.ad_network_id, p.protocol, p.outcome, coalesce(p.environment, ''), p.countable, coalesce(p.source_digits, ''), coalesce(p.digit_count, -1), p.conversion_type, coalesce(p.conversion_class, ''), p.conversion_window, p.did_win, coalesce(p.interaction, ''), coalesce(p.country_code, ''), p.tier_min, sum(1), sum(p.event_count), sum(coalesce(p.revenue_min, 0)), sum(coalesce(p.revenue_max, 0)), sum((p.conversion_value IS NULL AND p.coarse_value IS NULL)), sum(p.duplicates), sum(p.replays)
                    FROM postbacks p WHERE p.outcome IN ('verified', 'unverifiable') GROUP BY 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16;
                CREATE TRIGGER conversion_rollup_insert AFTER INSERT ON postbacks WHEN NEW.outcome IN ('verified', 'unverifiable')
                BEGIN
                    INSERT INTO conversion_rollup (day, app, ad_network_id, protocol, outcome, environment, countable, source_digits, digit_count, conversion_type, conversion_class, conversion_window, did_win, interaction, country, tier_min, postbacks, events, revenue_min, revenue_max, without_value, duplicates, replays) VALUES (substr(NEW.received_at, 1, 10), NEW.advertised_item_id, NEW.ad_network_id, NEW.protocol, NEW.outcome, coalesce(NEW.environment, ''), NEW.countable, coalesce(NEW.source_digits, ''), coalesce(NEW.digit_count, -1), NEW.conversion_type, coalesce(NEW.conversion_class, ''), NEW.conversion_window, NEW.did_win, coalesce(NEW.interaction, ''), coalesce(NEW.country_code, ''), NEW.tier_min, (1), (NEW.event_count), (coalesce(NEW.revenue_min, 0)), (coalesce(NEW.revenue_max, 0)), ((NEW.conversion_value IS NULL AND NEW.coarse_value IS NULL)), (NEW.duplicates), (NEW.replays)) ON CONFLICT (day, app, ad_network_id, protocol, outcome, environment, countable, source_digits, digit_count, conversion_type, conversion_class, conversion_window, did_win, interaction, country, tier_min) DO UPDATE SET postbacks = postbacks + excluded.postbacks, events = events + excluded.events, revenue_min = revenue_min + excluded.revenue_min, revenue_max = revenue_max + excluded.revenue_max, without_value = without_value + excluded.without_value, duplicates = duplicates + excluded.duplicates, replays = replays + excluded.replays;
                END;
                CREATE TRIGGER conversion_rollup_update AFTER UPDATE ON postbacks
                BEGIN
                    INSERT INTO conversion_rollup (day, app, ad_network_id, protocol, outcome, environment, countable, source_digits, digit_count, conversion_type, conversion_class, conversion_window, did_win, interaction, country, tier_min, postbacks, events, revenue_min, revenue_max, without_value, duplicates, replays)
                        SELECT substr(OLD.received_at, 1, 10), OLD.advertised_item_id, OLD.ad_network_id, OLD.protocol, OLD.outcome, coalesce(OLD.environment, ''), OLD.countable, coalesce(OLD.source_digits, ''), coalesce(OLD.digit_count, -1), OLD.conversion_type, coalesce(OLD.conversion_class, ''), OLD.conversion_window, OLD.did_win, coalesce(OLD.interaction, ''), coalesce(OLD.country_code, ''), OLD.tier_min, -(1), -(OLD.event_count), -(coalesce(OLD.revenue_min, 0)), -(coalesce(OLD.revenue_max, 0)), -((OLD.conversion_value IS NULL AND OLD.coarse_value IS NULL)), -(OLD.duplicates), -(OLD.replays)
                        WHERE OLD.outcome IN ('verified', 'unverifiable')
                        ON CONFLICT (day, app, ad_network_id, protocol, outcome, environment, countable, source_digits, digit_count, conversion_type, conversion_class, conversion_window, did_win, interaction, country, tier_min) DO UPDATE SET postbacks = postbacks + excluded.postbacks, events = events + excluded.events, revenue_min = revenue_min + excluded.revenue_min, revenue_max = revenue_max + excluded.revenue_max, without_value = without_value + excluded.without_value, duplicates = duplicates + excluded.duplicates, replays = replays + excluded.replays;
                    INSERT INTO conversion_rollup (day, app, ad_network_id, protocol, outcome, environment, countable, source_digits, digit_count, conversion_type, conversion_class, conversion_window, did_win, interaction, country, tier_min, postbacks, events, revenue_min, revenue_max, without_value, duplicates, replays)
                        SELECT substr(NEW.received_at, 1, 10), NEW.advertised_item_id, NEW.ad_network_id, NEW.protocol, NEW.outcome, coalesce(NEW.environment, ''), NEW.countable, coalesce(NEW.source_digits, ''), coalesce(NEW.digit_count, -1), NEW.conversion_type, coalesce(NEW.conversion_class, ''), NEW.conversion_window, NEW.did_win, coalesce(NEW.interaction, ''), coalesce(NEW.country_code, ''), NEW.tier_min, (1), (NEW.event_count), (coalesce(NEW.revenue_min, 0)), (coalesce(NEW.revenue_max, 0)), ((NEW.conversion_value IS NULL AND NEW.coarse_value IS NULL)), (NEW.duplicates), (NEW.replays)
                        WHERE NEW.outcome IN ('verified', 'unverifiable')
                        ON CONFLICT (day, app, ad_network_id, protocol, outcome, environment, countable, source_digits, digit_count, conversion_type, conversion_class, conversion_window, did_win, interaction, country, tier_min) DO UPDATE SET postbacks = postbacks + excluded.postbacks, events = events + excluded.events, revenue_min = revenue_min + excluded.revenue_min, revenue_max = revenue_max + excluded.revenue_max, without_value = without_value + excluded.without_value, duplicates = duplicates + excluded.duplicates, replays = replays + excluded.replays;
                END;
                CREATE TRIGGER conversion_rollup_delete AFTER DELETE ON postbacks WHEN OLD.outcome IN ('verified', 'unverifiable')
                BEGIN
                    INSERT INTO conversion_rollup (day, app, ad_network_id, protocol, outcome, environment, countable, source_digits, digit_count, conversion_type, conversion_class, conversion_window, did_win, interaction, country, tier_min, postbacks, events, revenue_min, revenue_max, without_value, duplicates, replays) VALUES (substr(OLD.received_at, 1, 10), OLD.advertised_item_id, OLD.ad_network_id, OLD.protocol, OLD.outcome, coalesce(OLD.environment, ''), OLD.countable, coalesce(OLD.source_digits, ''), coalesce(OLD.digit_count, -1), OLD.conversion_type, coalesce(OLD.conversion_class, ''), OLD.conversion_window, OLD.did_win, coalesce(OLD.interaction, ''), coalesce(OLD.country_code, ''), OLD.tier_min, -(1), -(OLD.event_count), -(coalesce(OLD.revenue_min, 0)), -(coalesce(OLD.revenue_max, 0)), -((OLD.conversion_value IS NULL AND OLD.coarse_value IS NULL)), -(OLD.duplicates), -(OLD.replays)) ON CONFLICT (day, app, ad_network_id, protocol, outcome, environment, countable, source_digits, digit_count, conversion_type, conversion_class, conversion_window, did_win, interaction, country, tier_min) DO UPDATE SET postbacks = postbacks + excluded.postbacks, events = events + excluded.events, revenue_min = revenue_min + excluded.revenue_min, revenue_max = revenue_max + excluded.revenue_max, without_value = without_value + excluded.without_value, duplicates = duplicates + excluded.duplicates, replays = replays + excluded.replays;
                END;
                """)
        }
        migrator.registerMigration("v6-attribution-records") { db in
            try db.execute(sql: """
                CREATE TABLE attribution_records (
                    id INTEGER PRIMARY KEY,
                    source TEXT NOT NULL,
                    received_at TEXT NOT NULL,
                    app TEXT,
                    install_id TEXT,
                    attribution INTEGER NOT NULL,
                    detailed INTEGER NOT NULL,
                    test_payload INTEGER NOT NULL,
                    org_id INTEGER, org_name TEXT,
                    campaign_id INTEGER, campaign_name TEXT,
                    ad_group_id INTEGER, ad_group_name TEXT,
                    keyword_id INTEGER, keyword TEXT, keyword_match_type TEXT,
                    ad_id INTEGER, creative_set_id INTEGER,
                    conversion_type TEXT, conversion_type_raw TEXT, claim_type TEXT,
                    click_date TEXT, impression_date TEXT, purchase_date TEXT, conversion_date TEXT,
                    country_or_region TEXT, supply_placement TEXT,
                    unknown_json TEXT NOT NULL,
                    body BLOB NOT NULL
                );
                CREATE INDEX attribution_records_received_at ON attribution_records(received_at);
                CREATE VIEW apple_ads_attributions AS
                SELECT id, source, received_at, substr(received_at, 1, 10) AS day, app, install_id, attribution, detailed, test_payload,
                       org_id, org_name, campaign_id, campaign_name, ad_group_id, ad_group_name, keyword_id, keyword, keyword_match_type,
                       ad_id, creative_set_id, conversion_type, claim_type, click_date, impression_date, purchase_date, conversion_date,
                       country_or_region, supply_placement
                FROM attribution_records;
                """)
        }
        migrator.registerMigration("v7-adservices-jobs") { db in
            try db.execute(sql: """
                CREATE TABLE adservices_jobs (
                    id INTEGER PRIMARY KEY,
                    token TEXT,
                    token_sha256 BLOB NOT NULL UNIQUE,
                    app TEXT,
                    install_id TEXT,
                    received_at TEXT NOT NULL,
                    token_created_at REAL NOT NULL,
                    state TEXT NOT NULL,
                    attempts INTEGER NOT NULL DEFAULT 0,
                    not_found_answers INTEGER NOT NULL DEFAULT 0,
                    server_failures INTEGER NOT NULL DEFAULT 0,
                    next_attempt_at REAL NOT NULL,
                    claim_id TEXT,
                    claimed_until REAL,
                    last_attempt_at TEXT,
                    last_answer TEXT,
                    failure_reason TEXT,
                    record_id INTEGER,
                    finished_at TEXT
                );
                CREATE INDEX adservices_jobs_due ON adservices_jobs(next_attempt_at) WHERE state IN ('pending', 'retrying');
                ALTER TABLE attribution_records ADD COLUMN job_id INTEGER;
                CREATE UNIQUE INDEX attribution_records_job ON attribution_records(job_id) WHERE job_id IS NOT NULL;
                """)
        }
        migrator.registerMigration("v8-rollup-folding") { db in
            // The per-row INSERT trigger cost about 40 µs of every stored postback. New rows are now folded into the
            // rollup in batches (`ReportRollup.fold`); `conversion_rollup_live` adds the rows not yet folded, so
            // it is always exact. Updates and deletions of folded rows still adjust the rollup by trigger; rows not yet
            // folded are read as they are when their turn comes. The delete trigger keeps `folded_through` at or below
            // the largest id, because SQLite gives a new row the largest id plus one, which must count as unfolded.
            try db.execute(sql: """
                CREATE TABLE rollup_state (id INTEGER PRIMARY KEY CHECK (id = 1), folded_through INTEGER NOT NULL);
                INSERT INTO rollup_state VALUES (1, coalesce((SELECT max(id) FROM postbacks), 0));
                DROP TRIGGER conversion_rollup_insert;
                DROP TRIGGER conversion_rollup_update;
                DROP TRIGGER conversion_rollup_delete;
                CREATE TRIGGER conversion_rollup_update AFTER UPDATE ON postbacks WHEN OLD.id <= (SELECT folded_through FROM rollup_state)
                BEGIN
                    INSERT INTO conversion_rollup (day, app, ad_network_id, protocol, outcome, environment, countable, source_digits, digit_count, conversion_type, conversion_class, conversion_window, did_win, interaction, country, tier_min, postbacks, events, revenue_min, revenue_max, without_value, duplicates, replays) SELECT substr(OLD.received_at, 1, 10), OLD.advertised_item_id, OLD.ad_network_id, OLD.protocol, OLD.outcome, coalesce(OLD.environment, ''), OLD.countable, coalesce(OLD.source_digits, ''), coalesce(OLD.digit_count, -1), OLD.conversion_type, coalesce(OLD.conversion_class, ''), OLD.conversion_window, OLD.did_win, coalesce(OLD.interaction, ''), coalesce(OLD.country_code, ''), OLD.tier_min, -(1), -(OLD.event_count), -(coalesce(OLD.revenue_min, 0)), -(coalesce(OLD.revenue_max, 0)), -((OLD.conversion_value IS NULL AND OLD.coarse_value IS NULL)), -(OLD.duplicates), -(OLD.replays) WHERE OLD.outcome IN ('verified', 'unverifiable') ON CONFLICT (day, app, ad_network_id, protocol, outcome, environment, countable, source_digits, digit_count, conversion_type, conversion_class, conversion_window, did_win, interaction, country, tier_min) DO UPDATE SET postbacks = postbacks + excluded.postbacks, events = events + excluded.events, revenue_min = revenue_min + excluded.revenue_min, revenue_max = revenue_max + excluded.revenue_max, without_value = without_value + excluded.without_value, duplicates = duplicates + excluded.duplicates, replays = replays + excluded.replays;
                    INSERT INTO conversion_rollup (day, app, ad_network_id, protocol, outcome, environment, countable, source_digits, digit_count, conversion_type, conversion_class, conversion_window, did_win, interaction, country, tier_min, postbacks, events, revenue_min, revenue_max, without_value, duplicates, replays) SELECT substr(NEW.received_at, 1, 10), NEW.advertised_item_id, NEW.ad_network_id, NEW.protocol, NEW.outcome, coalesce(NEW.environment, ''), NEW.countable, coalesce(NEW.source_digits, ''), coalesce(NEW.digit_count, -1), NEW.conversion_type, coalesce(NEW.conversion_class, ''), NEW.conversion_window, NEW.did_win, coalesce(NEW.interaction, ''), coalesce(NEW.country_code, ''), NEW.tier_min, 1, NEW.event_count, coalesce(NEW.revenue_min, 0), coalesce(NEW.revenue_max, 0), (NEW.conversion_value IS NULL AND NEW.coarse_value IS NULL), NEW.duplicates, NEW.replays WHERE NEW.outcome IN ('verified', 'unverifiable') ON CONFLICT (day, app, ad_network_id, protocol, outcome, environment, countable, source_digits, digit_count, conversion_type, conversion_class, conversion_window, did_win, interaction, country, tier_min) DO UPDATE SET postbacks = postbacks + excluded.postbacks, events = events + excluded.events, revenue_min = revenue_min + excluded.revenue_min, revenue_max = revenue_max + excluded.revenue_max, without_value = without_value + excluded.without_value, duplicates = duplicates + excluded.duplicates, replays = replays + excluded.replays;
                END;
                CREATE TRIGGER conversion_rollup_delete AFTER DELETE ON postbacks
                BEGIN
                    INSERT INTO conversion_rollup (day, app, ad_network_id, protocol, outcome, environment, countable, source_digits, digit_count, conversion_type, conversion_class, conversion_window, did_win, interaction, country, tier_min, postbacks, events, revenue_min, revenue_max, without_value, duplicates, replays) SELECT substr(OLD.received_at, 1, 10), OLD.advertised_item_id, OLD.ad_network_id, OLD.protocol, OLD.outcome, coalesce(OLD.environment, ''), OLD.countable, coalesce(OLD.source_digits, ''), coalesce(OLD.digit_count, -1), OLD.conversion_type, coalesce(OLD.conversion_class, ''), OLD.conversion_window, OLD.did_win, coalesce(OLD.interaction, ''), coalesce(OLD.country_code, ''), OLD.tier_min, -(1), -(OLD.event_count), -(coalesce(OLD.revenue_min, 0)), -(coalesce(OLD.revenue_max, 0)), -((OLD.conversion_value IS NULL AND OLD.coarse_value IS NULL)), -(OLD.duplicates), -(OLD.replays) WHERE OLD.outcome IN ('verified', 'unverifiable') AND OLD.id <= (SELECT folded_through FROM rollup_state) ON CONFLICT (day, app, ad_network_id, protocol, outcome, environment, countable, source_digits, digit_count, conversion_type, conversion_class, conversion_window, did_win, interaction, country, tier_min) DO UPDATE SET postbacks = postbacks + excluded.postbacks, events = events + excluded.events, revenue_min = revenue_min + excluded.revenue_min, revenue_max = revenue_max + excluded.revenue_max, without_value = without_value + excluded.without_value, duplicates = duplicates + excluded.duplicates, replays = replays + excluded.replays;
                    UPDATE rollup_state SET folded_through = min(folded_through, coalesce((SELECT max(id) FROM postbacks), 0));
                END;
                CREATE VIEW conversion_rollup_live AS
                SELECT day, app, ad_network_id, protocol, outcome, environment, countable, source_digits, digit_count, conversion_type, conversion_class, conversion_window, did_win, interaction, country, tier_min, postbacks, events, revenue_min, revenue_max, without_value, duplicates, replays FROM conversion_rollup
                UNION ALL
                SELECT substr(p.received_at, 1, 10), p.advertised_item_id, p.ad_network_id, p.protocol, p.outcome, coalesce(p.environment, ''), p.countable, coalesce(p.source_digits, ''), coalesce(p.digit_count, -1), p.conversion_type, coalesce(p.conversion_class, ''), p.conversion_window, p.did_win, coalesce(p.interaction, ''), coalesce(p.country_code, ''), p.tier_min, 1, p.event_count, coalesce(p.revenue_min, 0), coalesce(p.revenue_max, 0), (p.conversion_value IS NULL AND p.coarse_value IS NULL), p.duplicates, p.replays FROM postbacks p
                WHERE p.id > (SELECT folded_through FROM rollup_state) AND p.outcome IN ('verified', 'unverifiable');
                """)
        }
        migrator.registerMigration("v9-unverified-copies") { db in
            // Unverifiable copies of a stored postback (unknown-kid forgeries, for example) are counted apart from replays,
            // so nobody without Apple's key can change a counted row's numbers. Country codes are stored upper case, as
            // the report filter reads them. Frozen text: later code cannot change what this migration does.
            try db.execute(sql: """
                ALTER TABLE postbacks ADD COLUMN unverified_copies INTEGER NOT NULL DEFAULT 0;
                UPDATE postbacks SET country_code = upper(country_code) WHERE country_code IS NOT NULL AND country_code <> upper(country_code);
                DROP VIEW conversions_daily;
                DROP VIEW conversion_events;
                DROP VIEW conversions;
                CREATE VIEW conversions AS
                SELECT p.id, p.received_at, substr(p.received_at, 1, 10) AS day, p.protocol, p.version,
                       p.outcome, p.environment, p.key_id, p.countable,
                       p.ad_network_id, p.advertised_item_id AS app, p.dedup_key, p.postback_identifier,
                       p.source_digits AS source_identifier, p.digit_count,
                       substr(p.source_digits, 1, 2) AS campaign,
                       CASE WHEN p.digit_count >= 3 THEN substr(p.source_digits, 3, 1) END AS ad_group,
                       CASE WHEN p.digit_count >= 4 THEN substr(p.source_digits, 4, 1) END AS creative,
                       p.source_json AS source_levels,
                       p.conversion_type, p.conversion_class, p.conversion_window, p.did_win, p.redownload,
                       p.interaction, p.fidelity_type, p.publisher_item_id, p.source_domain, p.marketplace_id,
                       p.tier_min, p.tier_max,
                       p.conversion_value AS conversion_value_unsigned, p.coarse_value AS coarse_value_unsigned,
                       p.ad_interaction_type AS ad_interaction_type_unsigned, p.country_code AS country_code_unsigned,
                       p.decode_status, p.schema_revision, p.schema_version,
                       p.revenue_min, p.revenue_max, (p.revenue_min + p.revenue_max) / 2.0 AS revenue_mid, p.currency,
                       p.event_count, p.duplicates, p.replays, p.unverified_copies
                FROM postbacks p
                WHERE p.outcome IN ('verified', 'unverifiable');
                CREATE VIEW conversion_events AS
                SELECT e.id AS event_id, e.postback_id, c.received_at, c.day, c.protocol, c.environment, c.countable,
                       c.ad_network_id, c.app, c.source_identifier, c.campaign, c.ad_group, c.creative,
                       c.conversion_class, c.conversion_window, c.did_win,
                       e.schema_revision, e.schema_version, e.event_index, e.name AS event, e.count,
                       e.revenue_min, e.revenue_max, (e.revenue_min + e.revenue_max) / 2.0 AS revenue_mid, e.currency, e.properties
                FROM postback_events e JOIN conversions c ON c.id = e.postback_id;
                CREATE VIEW conversions_daily AS
                SELECT day, app, ad_network_id, protocol, environment, campaign, conversion_class, conversion_window,
                       count(*) AS postbacks,
                       sum(countable) AS counted,
                       sum(CASE WHEN countable AND did_win THEN 1 ELSE 0 END) AS counted_winning,
                       sum(CASE WHEN outcome = 'unverifiable' THEN 1 ELSE 0 END) AS unverifiable,
                       sum(duplicates) AS duplicates, sum(replays) AS replays, sum(unverified_copies) AS unverified_copies,
                       sum(CASE WHEN countable THEN revenue_min END) AS revenue_min,
                       sum(CASE WHEN countable THEN revenue_max END) AS revenue_max
                FROM conversions
                GROUP BY day, app, ad_network_id, protocol, environment, campaign, conversion_class, conversion_window;
                """)
        }
        migrator.registerMigration("v10-client-reported-iad") { db in
            // iAd dictionaries come from the app, not from Apple: the view says who reported each record, and a
            // submission is kept once (by install id when the app gives one, else by its exact content). The first of
            // any earlier repeats keeps the install id's key; later repeats stay as they were. Frozen text.
            try db.execute(sql: """
                ALTER TABLE attribution_records ADD COLUMN dedup_key TEXT;
                UPDATE attribution_records SET dedup_key = 'iad:' || coalesce(app, '') || ':install:' || install_id
                WHERE id IN (SELECT min(id) FROM attribution_records WHERE source = 'iad' AND install_id IS NOT NULL GROUP BY app, install_id);
                CREATE UNIQUE INDEX attribution_records_dedup ON attribution_records(dedup_key) WHERE dedup_key IS NOT NULL;
                DROP VIEW apple_ads_attributions;
                CREATE VIEW apple_ads_attributions AS
                SELECT id, source, CASE source WHEN 'iad' THEN 'client' ELSE 'apple' END AS reported_by, received_at, substr(received_at, 1, 10) AS day, app, install_id, attribution, detailed, test_payload,
                       org_id, org_name, campaign_id, campaign_name, ad_group_id, ad_group_name, keyword_id, keyword, keyword_match_type,
                       ad_id, creative_set_id, conversion_type, claim_type, click_date, impression_date, purchase_date, conversion_date,
                       country_or_region, supply_placement
                FROM attribution_records;
                """)
        }
        migrator.registerMigration("v11-exact-revenue-by-currency") { db in
            // Revenue is summed exactly and never across currencies: the rollup keys on the currency and keeps whole
            // millionths as integers, and conversions_daily groups by currency and sums millionths too. The rollup is
            // rebuilt from the rows already folded. Frozen text.
            try db.execute(sql: """
                DROP VIEW conversion_rollup_live;
                DROP VIEW conversions_daily;
                DROP TRIGGER conversion_rollup_update;
                DROP TRIGGER conversion_rollup_delete;
                DROP TABLE conversion_rollup;
                CREATE TABLE conversion_rollup (
                    day TEXT NOT NULL,
                    app INTEGER NOT NULL,
                    ad_network_id TEXT NOT NULL,
                    protocol TEXT NOT NULL,
                    outcome TEXT NOT NULL,
                    environment TEXT NOT NULL,
                    countable INTEGER NOT NULL,
                    source_digits TEXT NOT NULL,
                    digit_count INTEGER NOT NULL,
                    conversion_type TEXT NOT NULL,
                    conversion_class TEXT NOT NULL,
                    conversion_window INTEGER NOT NULL,
                    did_win INTEGER NOT NULL,
                    interaction TEXT NOT NULL,
                    country TEXT NOT NULL,
                    tier_min INTEGER NOT NULL,
                    currency TEXT NOT NULL,
                    postbacks INTEGER NOT NULL DEFAULT 0,
                    events INTEGER NOT NULL DEFAULT 0,
                    revenue_min_micros INTEGER NOT NULL DEFAULT 0,
                    revenue_max_micros INTEGER NOT NULL DEFAULT 0,
                    without_value INTEGER NOT NULL DEFAULT 0,
                    duplicates INTEGER NOT NULL DEFAULT 0,
                    replays INTEGER NOT NULL DEFAULT 0
                );
                CREATE UNIQUE INDEX conversion_rollup_key ON conversion_rollup (day, app, ad_network_id, protocol, outcome, environment, countable, source_digits, digit_count, conversion_type, conversion_class, conversion_window, did_win, interaction, country, tier_min, currency);
                INSERT INTO conversion_rollup (day, app, ad_network_id, protocol, outcome, environment, countable, source_digits, digit_count, conversion_type, conversion_class, conversion_window, did_win, interaction, country, tier_min, currency, postbacks, events, revenue_min_micros, revenue_max_micros, without_value, duplicates, replays)
                    SELECT substr(p.received_at, 1, 10), p.advertised_item_id, p.ad_network_id, p.protocol, p.outcome, coalesce(p.environment, ''), p.countable, coalesce(p.source_digits, ''), coalesce(p.digit_count, -1), p.conversion_type, coalesce(p.conversion_class, ''), p.conversion_window, p.did_win, coalesce(p.interaction, ''), coalesce(p.country_code, ''), p.tier_min, coalesce(p.currency, ''), sum(1), sum(p.event_count), sum(CAST(round(coalesce(p.revenue_min, 0) * 1000000) AS BIGINT)), sum(CAST(round(coalesce(p.revenue_max, 0) * 1000000) AS BIGINT)), sum(CASE WHEN p.conversion_value IS NULL AND p.coarse_value IS NULL THEN 1 ELSE 0 END), sum(p.duplicates), sum(p.replays)
                    FROM postbacks p WHERE p.id <= (SELECT folded_through FROM rollup_state) AND p.outcome IN ('verified', 'unverifiable') GROUP BY 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17;
                CREATE TRIGGER conversion_rollup_update AFTER UPDATE ON postbacks WHEN OLD.id <= (SELECT folded_through FROM rollup_state)
                BEGIN
                    INSERT INTO conversion_rollup (day, app, ad_network_id, protocol, outcome, environment, countable, source_digits, digit_count, conversion_type, conversion_class, conversion_window, did_win, interaction, country, tier_min, currency, postbacks, events, revenue_min_micros, revenue_max_micros, without_value, duplicates, replays) SELECT substr(OLD.received_at, 1, 10), OLD.advertised_item_id, OLD.ad_network_id, OLD.protocol, OLD.outcome, coalesce(OLD.environment, ''), OLD.countable, coalesce(OLD.source_digits, ''), coalesce(OLD.digit_count, -1), OLD.conversion_type, coalesce(OLD.conversion_class, ''), OLD.conversion_window, OLD.did_win, coalesce(OLD.interaction, ''), coalesce(OLD.country_code, ''), OLD.tier_min, coalesce(OLD.currency, ''), -(1), -(OLD.event_count), -(CAST(round(coalesce(OLD.revenue_min, 0) * 1000000) AS BIGINT)), -(CAST(round(coalesce(OLD.revenue_max, 0) * 1000000) AS BIGINT)), -(CASE WHEN OLD.conversion_value IS NULL AND OLD.coarse_value IS NULL THEN 1 ELSE 0 END), -(OLD.duplicates), -(OLD.replays) WHERE OLD.outcome IN ('verified', 'unverifiable') ON CONFLICT (day, app, ad_network_id, protocol, outcome, environment, countable, source_digits, digit_count, conversion_type, conversion_class, conversion_window, did_win, interaction, country, tier_min, currency) DO UPDATE SET postbacks = postbacks + excluded.postbacks, events = events + excluded.events, revenue_min_micros = revenue_min_micros + excluded.revenue_min_micros, revenue_max_micros = revenue_max_micros + excluded.revenue_max_micros, without_value = without_value + excluded.without_value, duplicates = duplicates + excluded.duplicates, replays = replays + excluded.replays;
                    INSERT INTO conversion_rollup (day, app, ad_network_id, protocol, outcome, environment, countable, source_digits, digit_count, conversion_type, conversion_class, conversion_window, did_win, interaction, country, tier_min, currency, postbacks, events, revenue_min_micros, revenue_max_micros, without_value, duplicates, replays) SELECT substr(NEW.received_at, 1, 10), NEW.advertised_item_id, NEW.ad_network_id, NEW.protocol, NEW.outcome, coalesce(NEW.environment, ''), NEW.countable, coalesce(NEW.source_digits, ''), coalesce(NEW.digit_count, -1), NEW.conversion_type, coalesce(NEW.conversion_class, ''), NEW.conversion_window, NEW.did_win, coalesce(NEW.interaction, ''), coalesce(NEW.country_code, ''), NEW.tier_min, coalesce(NEW.currency, ''), 1, NEW.event_count, CAST(round(coalesce(NEW.revenue_min, 0) * 1000000) AS BIGINT), CAST(round(coalesce(NEW.revenue_max, 0) * 1000000) AS BIGINT), CASE WHEN NEW.conversion_value IS NULL AND NEW.coarse_value IS NULL THEN 1 ELSE 0 END, NEW.duplicates, NEW.replays WHERE NEW.outcome IN ('verified', 'unverifiable') ON CONFLICT (day, app, ad_network_id, protocol, outcome, environment, countable, source_digits, digit_count, conversion_type, conversion_class, conversion_window, did_win, interaction, country, tier_min, currency) DO UPDATE SET postbacks = postbacks + excluded.postbacks, events = events + excluded.events, revenue_min_micros = revenue_min_micros + excluded.revenue_min_micros, revenue_max_micros = revenue_max_micros + excluded.revenue_max_micros, without_value = without_value + excluded.without_value, duplicates = duplicates + excluded.duplicates, replays = replays + excluded.replays;
                END;
                CREATE TRIGGER conversion_rollup_delete AFTER DELETE ON postbacks
                BEGIN
                    INSERT INTO conversion_rollup (day, app, ad_network_id, protocol, outcome, environment, countable, source_digits, digit_count, conversion_type, conversion_class, conversion_window, did_win, interaction, country, tier_min, currency, postbacks, events, revenue_min_micros, revenue_max_micros, without_value, duplicates, replays) SELECT substr(OLD.received_at, 1, 10), OLD.advertised_item_id, OLD.ad_network_id, OLD.protocol, OLD.outcome, coalesce(OLD.environment, ''), OLD.countable, coalesce(OLD.source_digits, ''), coalesce(OLD.digit_count, -1), OLD.conversion_type, coalesce(OLD.conversion_class, ''), OLD.conversion_window, OLD.did_win, coalesce(OLD.interaction, ''), coalesce(OLD.country_code, ''), OLD.tier_min, coalesce(OLD.currency, ''), -(1), -(OLD.event_count), -(CAST(round(coalesce(OLD.revenue_min, 0) * 1000000) AS BIGINT)), -(CAST(round(coalesce(OLD.revenue_max, 0) * 1000000) AS BIGINT)), -(CASE WHEN OLD.conversion_value IS NULL AND OLD.coarse_value IS NULL THEN 1 ELSE 0 END), -(OLD.duplicates), -(OLD.replays) WHERE OLD.outcome IN ('verified', 'unverifiable') AND OLD.id <= (SELECT folded_through FROM rollup_state) ON CONFLICT (day, app, ad_network_id, protocol, outcome, environment, countable, source_digits, digit_count, conversion_type, conversion_class, conversion_window, did_win, interaction, country, tier_min, currency) DO UPDATE SET postbacks = postbacks + excluded.postbacks, events = events + excluded.events, revenue_min_micros = revenue_min_micros + excluded.revenue_min_micros, revenue_max_micros = revenue_max_micros + excluded.revenue_max_micros, without_value = without_value + excluded.without_value, duplicates = duplicates + excluded.duplicates, replays = replays + excluded.replays;
                    UPDATE rollup_state SET folded_through = min(folded_through, coalesce((SELECT max(id) FROM postbacks), 0));
                END;
                CREATE VIEW conversion_rollup_live AS
                SELECT day, app, ad_network_id, protocol, outcome, environment, countable, source_digits, digit_count, conversion_type, conversion_class, conversion_window, did_win, interaction, country, tier_min, currency, postbacks, events, revenue_min_micros, revenue_max_micros, without_value, duplicates, replays FROM conversion_rollup
                UNION ALL
                SELECT substr(p.received_at, 1, 10), p.advertised_item_id, p.ad_network_id, p.protocol, p.outcome, coalesce(p.environment, ''), p.countable, coalesce(p.source_digits, ''), coalesce(p.digit_count, -1), p.conversion_type, coalesce(p.conversion_class, ''), p.conversion_window, p.did_win, coalesce(p.interaction, ''), coalesce(p.country_code, ''), p.tier_min, coalesce(p.currency, ''), 1, p.event_count, CAST(round(coalesce(p.revenue_min, 0) * 1000000) AS BIGINT), CAST(round(coalesce(p.revenue_max, 0) * 1000000) AS BIGINT), CASE WHEN p.conversion_value IS NULL AND p.coarse_value IS NULL THEN 1 ELSE 0 END, p.duplicates, p.replays FROM postbacks p
                WHERE p.id > (SELECT folded_through FROM rollup_state) AND p.outcome IN ('verified', 'unverifiable');
                CREATE VIEW conversions_daily AS
                SELECT day, app, ad_network_id, protocol, environment, campaign, conversion_class, conversion_window, currency,
                       count(*) AS postbacks,
                       sum(countable) AS counted,
                       sum(CASE WHEN countable AND did_win THEN 1 ELSE 0 END) AS counted_winning,
                       sum(CASE WHEN outcome = 'unverifiable' THEN 1 ELSE 0 END) AS unverifiable,
                       sum(duplicates) AS duplicates, sum(replays) AS replays, sum(unverified_copies) AS unverified_copies,
                       sum(CASE WHEN countable THEN CAST(round(revenue_min * 1000000) AS BIGINT) END) / 1000000.0 AS revenue_min,
                       sum(CASE WHEN countable THEN CAST(round(revenue_max * 1000000) AS BIGINT) END) / 1000000.0 AS revenue_max
                FROM conversions
                GROUP BY day, app, ad_network_id, protocol, environment, campaign, conversion_class, conversion_window, currency;
                """)
        }
        migrator.registerMigration("v12-names") { db in
            // Names people give: an ad network's (the registry), and campaign, ad-group and creative digits per app and
            // ad network, since each network chooses its own digits; and the names of Apple Ads campaigns, ad groups and
            // keywords read from Apple's API for AdServices records. Reports join them at read time. Frozen text.
            try db.execute(sql: """
                CREATE TABLE ad_networks (
                    ad_network_id TEXT PRIMARY KEY,
                    name TEXT NOT NULL,
                    updated_at TEXT NOT NULL
                );
                CREATE TABLE source_names (
                    app INTEGER NOT NULL,
                    ad_network_id TEXT NOT NULL,
                    level TEXT NOT NULL,
                    digits TEXT NOT NULL,
                    name TEXT NOT NULL,
                    updated_at TEXT NOT NULL,
                    PRIMARY KEY (app, ad_network_id, level, digits)
                );
                CREATE TABLE apple_ads_names (
                    org_id INTEGER NOT NULL,
                    kind TEXT NOT NULL,
                    id INTEGER NOT NULL,
                    campaign_id INTEGER NOT NULL,
                    ad_group_id INTEGER,
                    name TEXT,
                    source TEXT NOT NULL,
                    fetched_at TEXT NOT NULL,
                    PRIMARY KEY (org_id, kind, id)
                );
                """)
        }
        migrator.registerMigration("v13-intake-indexes") { db in
            // The intake report reads the receipts that did not become a postback row (copies and rejected bodies) by
            // time, and a lookup reads a postback's copies; partial indexes find them without costing the stored majority
            // anything at ingest. Frozen text.
            try db.execute(sql: """
                CREATE INDEX receipts_not_stored ON receipts(received_at) WHERE disposition <> 'stored';
                CREATE INDEX receipts_copies ON receipts(postback_id) WHERE postback_id IS NOT NULL;
                """)
        }
        migrator.registerMigration("v14-api-key-scopes") { db in
            // What each API key may do: scopes (read, schemas, admin, metrics) and the apps it is limited to (NULL:
            // all). Keys made before scopes keep every power they had. Frozen text.
            try db.execute(sql: """
                ALTER TABLE api_keys ADD COLUMN scopes TEXT NOT NULL DEFAULT 'read,schemas,admin';
                ALTER TABLE api_keys ADD COLUMN apps TEXT;
                """)
        }
        migrator.registerMigration("v15-app-registry") { db in
            // The apps an installation serves, each with its own policy: accepted ad networks (comma-separated; NULL:
            // the server's), development postbacks allowed, the currency and time zone its reports use. Frozen text.
            try db.execute(sql: """
                CREATE TABLE apps (
                    app INTEGER PRIMARY KEY,
                    name TEXT NOT NULL,
                    ad_networks TEXT,
                    allow_development INTEGER NOT NULL DEFAULT 0,
                    currency TEXT,
                    time_zone TEXT,
                    updated_at TEXT NOT NULL
                );
                """)
        }
        migrator.registerMigration("v16-forwarding") { db in
            // Forwarding: rules that relay verified postbacks to partners, and the outbox written in the same transaction
            // as the postback. An entry stays until delivered (then it is deleted and the rule's `delivered` counted) or
            // until it is dead. `tokens`/`tokens_at` are the rule's rate bucket. Frozen text.
            try db.execute(sql: """
                CREATE TABLE forward_rules (
                    name TEXT PRIMARY KEY,
                    url TEXT NOT NULL,
                    ad_network_id TEXT,
                    app INTEGER,
                    protocol TEXT,
                    environment TEXT NOT NULL DEFAULT 'production',
                    concurrency INTEGER NOT NULL DEFAULT 4,
                    rate REAL NOT NULL DEFAULT 50,
                    max_age REAL NOT NULL DEFAULT 777600,
                    timeout REAL NOT NULL DEFAULT 10,
                    tokens REAL NOT NULL DEFAULT 0,
                    tokens_at REAL NOT NULL DEFAULT 0,
                    delivered INTEGER NOT NULL DEFAULT 0,
                    last_delivered_at TEXT,
                    updated_at TEXT NOT NULL
                );
                CREATE TABLE forward_outbox (
                    id INTEGER PRIMARY KEY,
                    partner TEXT NOT NULL,
                    postback_id INTEGER NOT NULL,
                    state TEXT NOT NULL DEFAULT 'pending',
                    attempts INTEGER NOT NULL DEFAULT 0,
                    created_at TEXT NOT NULL,
                    deadline REAL NOT NULL,
                    next_attempt_at REAL NOT NULL,
                    claim_id TEXT,
                    claimed_until REAL,
                    last_attempt_at TEXT,
                    last_answer TEXT,
                    last_error TEXT,
                    UNIQUE (partner, postback_id)
                );
                CREATE INDEX forward_outbox_due ON forward_outbox(partner, next_attempt_at) WHERE state = 'pending';
                CREATE INDEX forward_outbox_dead ON forward_outbox(partner, id) WHERE state = 'dead';
                """)
        }
        migrator.registerMigration("v17-forwarding-limits") { db in
            // A rule holds at most `max_entries` outbox entries (pending and dead); while it is full (`is_full`, since
            // `full_since`) new postbacks are not queued for it, and `forward backfill` queues them once it has room.
            // Frozen text.
            try db.execute(sql: """
                ALTER TABLE forward_rules ADD COLUMN max_entries INTEGER NOT NULL DEFAULT 1000000;
                ALTER TABLE forward_rules ADD COLUMN is_full INTEGER NOT NULL DEFAULT 0;
                ALTER TABLE forward_rules ADD COLUMN full_since TEXT;
                """)
        }
        migrator.registerMigration("v18-analyst-views") { db in
            // What analysts asked of the views (issue 26): the app's name and its own days (the registered time zone;
            // SQLite has no zone database, so the server keeps each registered zone's UTC offsets in
            // `time_zone_offsets`), whether the unsigned country is known, revenue as whole millionths to add exactly,
            // the estimated install time (docs/metrics.md), and installs and re-engagements as docs/metrics.md defines
            // them in conversions_daily, whose day is the app's own. Frozen text.
            try db.execute(sql: """
                CREATE TABLE time_zone_offsets (
                    time_zone TEXT NOT NULL,
                    valid_from TEXT NOT NULL,
                    offset_seconds INTEGER NOT NULL,
                    PRIMARY KEY (time_zone, valid_from)
                );
                DROP VIEW conversions_daily;
                DROP VIEW conversion_events;
                DROP VIEW conversions;
                CREATE VIEW conversions AS
                SELECT p.id, p.received_at, substr(p.received_at, 1, 10) AS day, coalesce(a.time_zone, 'UTC') AS time_zone,
                       CASE WHEN a.time_zone IS NULL THEN substr(p.received_at, 1, 10) ELSE date(p.received_at, coalesce((SELECT o.offset_seconds FROM time_zone_offsets o WHERE o.time_zone = a.time_zone AND o.valid_from <= p.received_at ORDER BY o.valid_from DESC LIMIT 1), 0) || ' seconds') END AS local_day,
                       strftime('%Y-%m-%dT%H:%M:%fZ', p.received_at, '-' || (CASE WHEN p.protocol = 'skan' AND p.version IN ('1.0', '2.0', '2.1', '2.2', '3.0') THEN 36 WHEN p.conversion_window = 0 THEN 84 WHEN p.conversion_window = 1 THEN 252 ELSE 924 END) || ' hours') AS estimated_install_at,
                       p.protocol, p.version,
                       p.outcome, p.environment, p.key_id, p.countable, p.reason,
                       p.ad_network_id, p.advertised_item_id AS app, coalesce(a.name, CAST(p.advertised_item_id AS TEXT)) AS app_name,
                       p.dedup_key, p.postback_identifier,
                       p.source_digits AS source_identifier, p.digit_count,
                       substr(p.source_digits, 1, 2) AS campaign,
                       CASE WHEN p.digit_count >= 3 THEN substr(p.source_digits, 3, 1) END AS ad_group,
                       CASE WHEN p.digit_count >= 4 THEN substr(p.source_digits, 4, 1) END AS creative,
                       p.source_json AS source_levels,
                       p.conversion_type, p.conversion_class, p.conversion_window, p.did_win, p.redownload,
                       p.interaction, p.fidelity_type, p.publisher_item_id, p.source_domain, p.marketplace_id,
                       p.tier_min, p.tier_max,
                       p.conversion_value AS conversion_value_unsigned, p.coarse_value AS coarse_value_unsigned,
                       p.ad_interaction_type AS ad_interaction_type_unsigned, p.country_code AS country_code_unsigned,
                       CASE WHEN p.country_code IS NOT NULL THEN 1 ELSE 0 END AS country_known,
                       p.decode_status, p.schema_revision, p.schema_version,
                       p.revenue_min, p.revenue_max, (p.revenue_min + p.revenue_max) / 2.0 AS revenue_mid, p.currency,
                       CAST(round(p.revenue_min * 1000000) AS INTEGER) AS revenue_min_micros,
                       CAST(round(p.revenue_max * 1000000) AS INTEGER) AS revenue_max_micros,
                       p.event_count, p.duplicates, p.replays, p.unverified_copies
                FROM postbacks p LEFT JOIN apps a ON a.app = p.advertised_item_id
                WHERE p.outcome IN ('verified', 'unverifiable');
                CREATE VIEW conversion_events AS
                SELECT e.id AS event_id, e.postback_id, c.received_at, c.day, c.time_zone, c.local_day, c.estimated_install_at,
                       c.protocol, c.environment, c.countable,
                       c.ad_network_id, c.app, c.app_name, c.source_identifier, c.campaign, c.ad_group, c.creative,
                       c.conversion_class, c.conversion_window, c.did_win,
                       e.schema_revision, e.schema_version, e.event_index, e.name AS event, e.count,
                       e.revenue_min, e.revenue_max, (e.revenue_min + e.revenue_max) / 2.0 AS revenue_mid, e.currency,
                       CAST(round(e.revenue_min * 1000000) AS INTEGER) AS revenue_min_micros,
                       CAST(round(e.revenue_max * 1000000) AS INTEGER) AS revenue_max_micros, e.properties
                FROM postback_events e JOIN conversions c ON c.id = e.postback_id;
                CREATE VIEW conversions_daily AS
                SELECT local_day AS day, time_zone, app, app_name, ad_network_id, protocol, environment, campaign, conversion_class,
                       conversion_window, currency,
                       count(*) AS postbacks,
                       sum(countable) AS counted,
                       sum(CASE WHEN countable = 1 AND did_win = 1 AND conversion_window = 0 AND conversion_class = 'install' THEN 1 ELSE 0 END) AS installs,
                       sum(CASE WHEN countable = 1 AND did_win = 1 AND conversion_window = 0 AND conversion_class = 're-engagement' THEN 1 ELSE 0 END) AS re_engagements,
                       sum(CASE WHEN countable = 1 AND did_win = 1 THEN 1 ELSE 0 END) AS counted_winning,
                       sum(CASE WHEN outcome = 'unverifiable' THEN 1 ELSE 0 END) AS unverifiable,
                       sum(country_known) AS with_country,
                       sum(duplicates) AS duplicates, sum(replays) AS replays, sum(unverified_copies) AS unverified_copies,
                       coalesce(sum(CASE WHEN countable = 1 THEN revenue_min_micros END), 0) AS revenue_min_micros,
                       coalesce(sum(CASE WHEN countable = 1 THEN revenue_max_micros END), 0) AS revenue_max_micros,
                       coalesce(sum(CASE WHEN countable = 1 THEN revenue_min_micros END), 0) / 1000000.0 AS revenue_min,
                       coalesce(sum(CASE WHEN countable = 1 THEN revenue_max_micros END), 0) / 1000000.0 AS revenue_max
                FROM conversions
                GROUP BY local_day, time_zone, app, app_name, ad_network_id, protocol, environment, campaign, conversion_class, conversion_window, currency;
                """)
        }
        migrator.registerMigration("v19-spend-claims-rates") { db in
            // What networks claim and cost (issue 26): imports with their provenance, the rows each imported (one per
            // day, app, ad network, campaign and country; a later import of a day replaces it), and the exchange rates
            // users give. Money in whole millionths; rates as exact decimal text. A rejected body's receipt keeps who it
            // claims to be (postback or transaction id, ad network, app, source), for reconciliation. Views: spend_daily
            // (the networks' reports) and cohorts_daily (installs and revenue by estimated install day). Frozen text.
            try db.execute(sql: """
                ALTER TABLE receipts ADD COLUMN claimed_id TEXT;
                ALTER TABLE receipts ADD COLUMN claimed_ad_network TEXT;
                ALTER TABLE receipts ADD COLUMN claimed_app INTEGER;
                ALTER TABLE receipts ADD COLUMN claimed_source TEXT;
                CREATE INDEX receipts_claimed ON receipts(claimed_id) WHERE claimed_id IS NOT NULL;
                CREATE TABLE spend_imports (
                    id INTEGER PRIMARY KEY,
                    kind TEXT NOT NULL,
                    imported_at TEXT NOT NULL,
                    imported_by TEXT NOT NULL,
                    file_name TEXT,
                    file_sha256 TEXT NOT NULL,
                    format TEXT NOT NULL,
                    rows INTEGER NOT NULL,
                    replaced INTEGER NOT NULL,
                    first_day TEXT,
                    last_day TEXT
                );
                CREATE TABLE spend (
                    day TEXT NOT NULL,
                    app INTEGER NOT NULL,
                    ad_network_id TEXT NOT NULL,
                    campaign TEXT NOT NULL,
                    country TEXT NOT NULL,
                    impressions INTEGER,
                    clicks INTEGER,
                    claimed_installs INTEGER,
                    claimed_re_engagements INTEGER,
                    spend_micros INTEGER,
                    currency TEXT,
                    import_id INTEGER NOT NULL,
                    PRIMARY KEY (day, app, ad_network_id, campaign, country)
                );
                CREATE INDEX spend_app_network ON spend(app, ad_network_id, day);
                CREATE TABLE exchange_rates (
                    day TEXT NOT NULL,
                    from_currency TEXT NOT NULL,
                    to_currency TEXT NOT NULL,
                    rate TEXT NOT NULL,
                    import_id INTEGER NOT NULL,
                    PRIMARY KEY (from_currency, to_currency, day)
                );
                CREATE VIEW spend_daily AS
                SELECT s.day, s.app, coalesce(a.name, CAST(s.app AS TEXT)) AS app_name, s.ad_network_id, s.campaign, s.country,
                       s.impressions, s.clicks, s.claimed_installs, s.claimed_re_engagements, s.spend_micros,
                       s.spend_micros / 1000000.0 AS spend, s.currency, s.import_id
                FROM spend s LEFT JOIN apps a ON a.app = s.app;
                CREATE VIEW cohorts_daily AS
                SELECT substr(estimated_install_at, 1, 10) AS install_day, app, app_name, ad_network_id, coalesce(campaign, '') AS campaign, currency,
                       sum(CASE WHEN countable = 1 AND did_win = 1 AND conversion_window = 0 AND conversion_class = 'install' THEN 1 ELSE 0 END) AS installs,
                       sum(CASE WHEN countable = 1 AND did_win = 1 AND conversion_window = 0 AND conversion_class = 're-engagement' THEN 1 ELSE 0 END) AS re_engagements,
                       sum(CASE WHEN countable = 1 AND did_win = 1 AND conversion_window = 0 AND conversion_class = 'install'
                                 AND conversion_value_unsigned IS NULL AND coarse_value_unsigned IS NULL THEN 1 ELSE 0 END) AS installs_without_value,
                       sum(CASE WHEN countable = 1 AND conversion_window = 0 THEN coalesce(revenue_min_micros, 0) ELSE 0 END) AS revenue_min_micros_window_0,
                       sum(CASE WHEN countable = 1 AND conversion_window = 0 THEN coalesce(revenue_max_micros, 0) ELSE 0 END) AS revenue_max_micros_window_0,
                       sum(CASE WHEN countable = 1 AND conversion_window = 1 THEN coalesce(revenue_min_micros, 0) ELSE 0 END) AS revenue_min_micros_window_1,
                       sum(CASE WHEN countable = 1 AND conversion_window = 1 THEN coalesce(revenue_max_micros, 0) ELSE 0 END) AS revenue_max_micros_window_1,
                       sum(CASE WHEN countable = 1 AND conversion_window = 2 THEN coalesce(revenue_min_micros, 0) ELSE 0 END) AS revenue_min_micros_window_2,
                       sum(CASE WHEN countable = 1 AND conversion_window = 2 THEN coalesce(revenue_max_micros, 0) ELSE 0 END) AS revenue_max_micros_window_2
                FROM conversions
                GROUP BY substr(estimated_install_at, 1, 10), app, app_name, ad_network_id, coalesce(campaign, ''), currency;
                """)
        }
        migrator.registerMigration("v20-setup-health") { db in
            // Setup health (issue 26): an app's copy domain, and a daily count of what arrived by app, protocol, version,
            // ad network, channel, outcome and environment (ArrivalLog), filled from what is stored (copies on their
            // original's day, channel direct or forwarded: the host was not kept before).
            try db.execute(sql: """
                ALTER TABLE apps ADD COLUMN copy_domain TEXT;
                CREATE TABLE arrivals_daily (
                    day TEXT NOT NULL,
                    app INTEGER NOT NULL,
                    protocol TEXT NOT NULL,
                    version TEXT NOT NULL,
                    ad_network_id TEXT NOT NULL,
                    channel TEXT NOT NULL,
                    outcome TEXT NOT NULL,
                    environment TEXT NOT NULL,
                    writer TEXT NOT NULL,
                    arrivals INTEGER NOT NULL,
                    last_received_at TEXT NOT NULL,
                    PRIMARY KEY (day, app, protocol, version, ad_network_id, channel, outcome, environment, writer)
                );
                CREATE INDEX arrivals_daily_app ON arrivals_daily(app, day);
                INSERT INTO arrivals_daily (day, app, protocol, version, ad_network_id, channel, outcome, environment, writer, arrivals, last_received_at)
                SELECT substr(received_at, 1, 10), advertised_item_id, protocol, coalesce(version, ''), ad_network_id,
                       CASE WHEN route = 'any' THEN 'forwarded' ELSE 'direct' END, outcome, coalesce(environment, ''), 'migration',
                       count(*) + sum(duplicates + replays + unverified_copies), max(received_at)
                FROM postbacks WHERE outcome IN ('verified', 'unverifiable') AND advertised_item_id IS NOT NULL AND ad_network_id IS NOT NULL
                GROUP BY substr(received_at, 1, 10), advertised_item_id, protocol, coalesce(version, ''), ad_network_id,
                         CASE WHEN route = 'any' THEN 'forwarded' ELSE 'direct' END, outcome, coalesce(environment, '');
                INSERT INTO arrivals_daily (day, app, protocol, version, ad_network_id, channel, outcome, environment, writer, arrivals, last_received_at)
                SELECT substr(received_at, 1, 10), claimed_app, CASE WHEN route IN ('aak', 'skan') THEN route ELSE '' END, '', coalesce(claimed_ad_network, ''),
                       CASE WHEN route = 'any' THEN 'forwarded' ELSE 'direct' END, 'invalid', '', 'migration', count(*), max(received_at)
                FROM receipts WHERE disposition <> 'stored' AND disposition = 'rejected' AND outcome = 'invalid' AND claimed_app IS NOT NULL
                GROUP BY substr(received_at, 1, 10), claimed_app, CASE WHEN route IN ('aak', 'skan') THEN route ELSE '' END, coalesce(claimed_ad_network, ''),
                         CASE WHEN route = 'any' THEN 'forwarded' ELSE 'direct' END;
                """)
        }
        migrator.registerMigration("v21-exact-revenue-mid") { db in
            // A postback's and an event's revenue_mid rounded to 7 decimals, as PostgreSQL's views give it: the middle of
            // 9.99 and 99.99 is 54.99, not the binary 54.989999999999995. The same views otherwise. Frozen text.
            try db.execute(sql: """
                DROP VIEW conversion_events;
                DROP VIEW conversions;
                CREATE VIEW conversions AS
                SELECT p.id, p.received_at, substr(p.received_at, 1, 10) AS day, coalesce(a.time_zone, 'UTC') AS time_zone,
                       CASE WHEN a.time_zone IS NULL THEN substr(p.received_at, 1, 10) ELSE date(p.received_at, coalesce((SELECT o.offset_seconds FROM time_zone_offsets o WHERE o.time_zone = a.time_zone AND o.valid_from <= p.received_at ORDER BY o.valid_from DESC LIMIT 1), 0) || ' seconds') END AS local_day,
                       strftime('%Y-%m-%dT%H:%M:%fZ', p.received_at, '-' || (CASE WHEN p.protocol = 'skan' AND p.version IN ('1.0', '2.0', '2.1', '2.2', '3.0') THEN 36 WHEN p.conversion_window = 0 THEN 84 WHEN p.conversion_window = 1 THEN 252 ELSE 924 END) || ' hours') AS estimated_install_at,
                       p.protocol, p.version,
                       p.outcome, p.environment, p.key_id, p.countable, p.reason,
                       p.ad_network_id, p.advertised_item_id AS app, coalesce(a.name, CAST(p.advertised_item_id AS TEXT)) AS app_name,
                       p.dedup_key, p.postback_identifier,
                       p.source_digits AS source_identifier, p.digit_count,
                       substr(p.source_digits, 1, 2) AS campaign,
                       CASE WHEN p.digit_count >= 3 THEN substr(p.source_digits, 3, 1) END AS ad_group,
                       CASE WHEN p.digit_count >= 4 THEN substr(p.source_digits, 4, 1) END AS creative,
                       p.source_json AS source_levels,
                       p.conversion_type, p.conversion_class, p.conversion_window, p.did_win, p.redownload,
                       p.interaction, p.fidelity_type, p.publisher_item_id, p.source_domain, p.marketplace_id,
                       p.tier_min, p.tier_max,
                       p.conversion_value AS conversion_value_unsigned, p.coarse_value AS coarse_value_unsigned,
                       p.ad_interaction_type AS ad_interaction_type_unsigned, p.country_code AS country_code_unsigned,
                       CASE WHEN p.country_code IS NOT NULL THEN 1 ELSE 0 END AS country_known,
                       p.decode_status, p.schema_revision, p.schema_version,
                       p.revenue_min, p.revenue_max, round((p.revenue_min + p.revenue_max) / 2.0, 7) AS revenue_mid, p.currency,
                       CAST(round(p.revenue_min * 1000000) AS INTEGER) AS revenue_min_micros,
                       CAST(round(p.revenue_max * 1000000) AS INTEGER) AS revenue_max_micros,
                       p.event_count, p.duplicates, p.replays, p.unverified_copies
                FROM postbacks p LEFT JOIN apps a ON a.app = p.advertised_item_id
                WHERE p.outcome IN ('verified', 'unverifiable');
                CREATE VIEW conversion_events AS
                SELECT e.id AS event_id, e.postback_id, c.received_at, c.day, c.time_zone, c.local_day, c.estimated_install_at,
                       c.protocol, c.environment, c.countable,
                       c.ad_network_id, c.app, c.app_name, c.source_identifier, c.campaign, c.ad_group, c.creative,
                       c.conversion_class, c.conversion_window, c.did_win,
                       e.schema_revision, e.schema_version, e.event_index, e.name AS event, e.count,
                       e.revenue_min, e.revenue_max, round((e.revenue_min + e.revenue_max) / 2.0, 7) AS revenue_mid, e.currency,
                       CAST(round(e.revenue_min * 1000000) AS INTEGER) AS revenue_min_micros,
                       CAST(round(e.revenue_max * 1000000) AS INTEGER) AS revenue_max_micros, e.properties
                FROM postback_events e JOIN conversions c ON c.id = e.postback_id;
                """)
        }
        migrator.registerMigration("v22-schema-catalogue-version") { db in
            // A version raised by every change to `schemas` (also by another process on the same file), so a commit
            // reads one row, not the catalogue, to know whether it changed. Frozen text.
            try db.execute(sql: """
                CREATE TABLE schema_catalogue_version (one INTEGER PRIMARY KEY CHECK (one = 1), version INTEGER NOT NULL);
                INSERT INTO schema_catalogue_version (one, version) VALUES (1, 1);
                CREATE TRIGGER schema_catalogue_bump_insert AFTER INSERT ON schemas BEGIN UPDATE schema_catalogue_version SET version = version + 1; END;
                CREATE TRIGGER schema_catalogue_bump_update AFTER UPDATE ON schemas BEGIN UPDATE schema_catalogue_version SET version = version + 1; END;
                CREATE TRIGGER schema_catalogue_bump_delete AFTER DELETE ON schemas BEGIN UPDATE schema_catalogue_version SET version = version + 1; END;
                """)
        }
        migrator.registerMigration("v23-spend-staged-imports") { db in
            // A spend import is staged beside the rows readers see, in small transactions, and made current in one short
            // one (trust round 4, finding 4): rows carry their import in the key, `spend_current` names the import in
            // force for each day, app and ad network, and readers see only those rows. An import's state is staging,
            // live or failed; `progress_at` is when a staging import last wrote rows. Frozen text.
            try db.execute(sql: """
                DROP VIEW spend_daily;
                CREATE TABLE spend_staged (
                    day TEXT NOT NULL,
                    app INTEGER NOT NULL,
                    ad_network_id TEXT NOT NULL,
                    campaign TEXT NOT NULL,
                    country TEXT NOT NULL,
                    impressions INTEGER,
                    clicks INTEGER,
                    claimed_installs INTEGER,
                    claimed_re_engagements INTEGER,
                    spend_micros INTEGER,
                    currency TEXT,
                    import_id INTEGER NOT NULL,
                    PRIMARY KEY (import_id, day, app, ad_network_id, campaign, country)
                );
                INSERT INTO spend_staged (day, app, ad_network_id, campaign, country, impressions, clicks, claimed_installs,
                                          claimed_re_engagements, spend_micros, currency, import_id)
                SELECT day, app, ad_network_id, campaign, country, impressions, clicks, claimed_installs, claimed_re_engagements,
                       spend_micros, currency, import_id FROM spend;
                DROP TABLE spend;
                ALTER TABLE spend_staged RENAME TO spend;
                CREATE INDEX spend_app_network ON spend(app, ad_network_id, day);
                CREATE TABLE spend_current (
                    day TEXT NOT NULL,
                    app INTEGER NOT NULL,
                    ad_network_id TEXT NOT NULL,
                    import_id INTEGER NOT NULL,
                    PRIMARY KEY (day, app, ad_network_id)
                );
                INSERT INTO spend_current (day, app, ad_network_id, import_id)
                SELECT day, app, ad_network_id, max(import_id) FROM spend GROUP BY day, app, ad_network_id;
                ALTER TABLE spend_imports ADD COLUMN state TEXT NOT NULL DEFAULT 'live';
                ALTER TABLE spend_imports ADD COLUMN progress_at TEXT;
                CREATE VIEW spend_daily AS
                SELECT s.day, s.app, coalesce(a.name, CAST(s.app AS TEXT)) AS app_name, s.ad_network_id, s.campaign, s.country,
                       s.impressions, s.clicks, s.claimed_installs, s.claimed_re_engagements, s.spend_micros,
                       s.spend_micros / 1000000.0 AS spend, s.currency, s.import_id
                FROM spend s
                JOIN spend_current c ON c.day = s.day AND c.app = s.app AND c.ad_network_id = s.ad_network_id AND c.import_id = s.import_id
                LEFT JOIN apps a ON a.app = s.app;
                """)
        }
        migrator.registerMigration("v24-public-schema") { db in
            // Whether an app's published schema (GET /v1/schemas/{app}/published) is readable without a key (issue 47).
            // Frozen text.
            try db.execute(sql: """
                ALTER TABLE apps ADD COLUMN public_schema INTEGER NOT NULL DEFAULT 0;
                """)
        }
        migrator.registerMigration("v25-acquisition-revenue") { db in
            // cohorts_daily's revenue from install postbacks only, re-engagements' revenue in columns of its own (issue 49,
            // finding 1). Frozen text.
            try db.execute(sql: """
                DROP VIEW cohorts_daily;
                CREATE VIEW cohorts_daily AS
                SELECT substr(estimated_install_at, 1, 10) AS install_day, app, app_name, ad_network_id, coalesce(campaign, '') AS campaign, currency,
                       sum(CASE WHEN countable = 1 AND did_win = 1 AND conversion_window = 0 AND conversion_class = 'install' THEN 1 ELSE 0 END) AS installs,
                       sum(CASE WHEN countable = 1 AND did_win = 1 AND conversion_window = 0 AND conversion_class = 're-engagement' THEN 1 ELSE 0 END) AS re_engagements,
                       sum(CASE WHEN countable = 1 AND did_win = 1 AND conversion_window = 0 AND conversion_class = 'install'
                                 AND conversion_value_unsigned IS NULL AND coarse_value_unsigned IS NULL THEN 1 ELSE 0 END) AS installs_without_value,
                       sum(CASE WHEN countable = 1 AND conversion_class = 'install' AND conversion_window = 0 THEN coalesce(revenue_min_micros, 0) ELSE 0 END) AS revenue_min_micros_window_0,
                       sum(CASE WHEN countable = 1 AND conversion_class = 'install' AND conversion_window = 0 THEN coalesce(revenue_max_micros, 0) ELSE 0 END) AS revenue_max_micros_window_0,
                       sum(CASE WHEN countable = 1 AND conversion_class = 'install' AND conversion_window = 1 THEN coalesce(revenue_min_micros, 0) ELSE 0 END) AS revenue_min_micros_window_1,
                       sum(CASE WHEN countable = 1 AND conversion_class = 'install' AND conversion_window = 1 THEN coalesce(revenue_max_micros, 0) ELSE 0 END) AS revenue_max_micros_window_1,
                       sum(CASE WHEN countable = 1 AND conversion_class = 'install' AND conversion_window = 2 THEN coalesce(revenue_min_micros, 0) ELSE 0 END) AS revenue_min_micros_window_2,
                       sum(CASE WHEN countable = 1 AND conversion_class = 'install' AND conversion_window = 2 THEN coalesce(revenue_max_micros, 0) ELSE 0 END) AS revenue_max_micros_window_2,
                       sum(CASE WHEN countable = 1 AND conversion_class = 're-engagement' THEN coalesce(revenue_min_micros, 0) ELSE 0 END) AS re_engagement_revenue_min_micros,
                       sum(CASE WHEN countable = 1 AND conversion_class = 're-engagement' THEN coalesce(revenue_max_micros, 0) ELSE 0 END) AS re_engagement_revenue_max_micros
                FROM conversions
                GROUP BY substr(estimated_install_at, 1, 10), app, app_name, ad_network_id, coalesce(campaign, ''), currency;
                """)
        }
        migrator.registerMigration("v26-delivery-templates") { db in
            // What a forwarding rule sends (issue 48): a delivery template by name (`original`, Apple's body byte for
            // byte, or an enriched JSON body), templates a network adds without a release, and one header per rule
            // whose value is a partner's secret, kept in a table of its own that only delivery reads. Frozen text.
            try db.execute(sql: """
                ALTER TABLE forward_rules ADD COLUMN template TEXT NOT NULL DEFAULT 'original';
                ALTER TABLE forward_rules ADD COLUMN header_name TEXT;
                CREATE TABLE forward_templates (
                    name TEXT PRIMARY KEY,
                    body TEXT NOT NULL,
                    updated_at TEXT NOT NULL
                );
                CREATE TABLE forward_secrets (
                    rule TEXT PRIMARY KEY,
                    value TEXT NOT NULL,
                    updated_at TEXT NOT NULL
                );
                """)
        }
        migrator.registerMigration("v27-cohorts-local-day") { db in
            // cohorts_daily's install_day is the estimated install day in the app's registered zone (time_zone, the
            // last column), as performance counts an app's days; it was the UTC day (issue 49, finding 2). Frozen text.
            try db.execute(sql: """
                DROP VIEW cohorts_daily;
                CREATE VIEW cohorts_daily AS
                SELECT install_day, app, app_name, ad_network_id, coalesce(campaign, '') AS campaign, currency,
                       sum(CASE WHEN countable = 1 AND did_win = 1 AND conversion_window = 0 AND conversion_class = 'install' THEN 1 ELSE 0 END) AS installs,
                       sum(CASE WHEN countable = 1 AND did_win = 1 AND conversion_window = 0 AND conversion_class = 're-engagement' THEN 1 ELSE 0 END) AS re_engagements,
                       sum(CASE WHEN countable = 1 AND did_win = 1 AND conversion_window = 0 AND conversion_class = 'install'
                                 AND conversion_value_unsigned IS NULL AND coarse_value_unsigned IS NULL THEN 1 ELSE 0 END) AS installs_without_value,
                       sum(CASE WHEN countable = 1 AND conversion_class = 'install' AND conversion_window = 0 THEN coalesce(revenue_min_micros, 0) ELSE 0 END) AS revenue_min_micros_window_0,
                       sum(CASE WHEN countable = 1 AND conversion_class = 'install' AND conversion_window = 0 THEN coalesce(revenue_max_micros, 0) ELSE 0 END) AS revenue_max_micros_window_0,
                       sum(CASE WHEN countable = 1 AND conversion_class = 'install' AND conversion_window = 1 THEN coalesce(revenue_min_micros, 0) ELSE 0 END) AS revenue_min_micros_window_1,
                       sum(CASE WHEN countable = 1 AND conversion_class = 'install' AND conversion_window = 1 THEN coalesce(revenue_max_micros, 0) ELSE 0 END) AS revenue_max_micros_window_1,
                       sum(CASE WHEN countable = 1 AND conversion_class = 'install' AND conversion_window = 2 THEN coalesce(revenue_min_micros, 0) ELSE 0 END) AS revenue_min_micros_window_2,
                       sum(CASE WHEN countable = 1 AND conversion_class = 'install' AND conversion_window = 2 THEN coalesce(revenue_max_micros, 0) ELSE 0 END) AS revenue_max_micros_window_2,
                       sum(CASE WHEN countable = 1 AND conversion_class = 're-engagement' THEN coalesce(revenue_min_micros, 0) ELSE 0 END) AS re_engagement_revenue_min_micros,
                       sum(CASE WHEN countable = 1 AND conversion_class = 're-engagement' THEN coalesce(revenue_max_micros, 0) ELSE 0 END) AS re_engagement_revenue_max_micros,
                       time_zone
                FROM (SELECT c.*, CASE WHEN c.time_zone = 'UTC' THEN substr(c.estimated_install_at, 1, 10)
                             ELSE date(c.estimated_install_at, coalesce((SELECT o.offset_seconds FROM time_zone_offsets o WHERE o.time_zone = c.time_zone
                                 AND o.valid_from <= c.estimated_install_at ORDER BY o.valid_from DESC LIMIT 1), 0) || ' seconds') END AS install_day
                      FROM conversions c) AS zoned
                GROUP BY install_day, time_zone, app, app_name, ad_network_id, coalesce(campaign, ''), currency;
                """)
        }
        migrator.registerMigration("v28-advertisers") { db in
            // Advertisers: a name and its apps (an app belongs to one advertiser at most); a key made for an advertiser
            // covers the advertiser's apps as they are when it is used (issue 48, item 4). Frozen text.
            try db.execute(sql: """
                CREATE TABLE advertisers (
                    name TEXT PRIMARY KEY,
                    updated_at TEXT NOT NULL
                );
                CREATE TABLE advertiser_apps (
                    app INTEGER PRIMARY KEY,
                    advertiser TEXT NOT NULL REFERENCES advertisers(name) ON DELETE CASCADE
                );
                CREATE INDEX advertiser_apps_by_advertiser ON advertiser_apps (advertiser);
                ALTER TABLE api_keys ADD COLUMN advertiser TEXT;
                """)
        }
        migrator.registerMigration("v29-source-mappings") { db in
            // Dated source-identifier mappings, as the SKAN standard's mapping API gives them: an identifier of an app and
            // ad network means a campaign (ad group, creative) from one UTC day to another, optionally in one country
            // or publisher (issue 48, item 5). Frozen text.
            try db.execute(sql: """
                CREATE TABLE source_mappings (
                    id INTEGER PRIMARY KEY,
                    app INTEGER NOT NULL,
                    ad_network_id TEXT NOT NULL,
                    source_identifier TEXT NOT NULL,
                    country TEXT,
                    publisher TEXT,
                    valid_from TEXT NOT NULL,
                    valid_to TEXT,
                    campaign_id TEXT NOT NULL,
                    campaign_name TEXT,
                    ad_group_id TEXT,
                    ad_group_name TEXT,
                    creative_id TEXT,
                    creative_name TEXT,
                    updated_at TEXT NOT NULL
                );
                CREATE INDEX source_mappings_lookup ON source_mappings (app, ad_network_id, source_identifier, valid_from);
                CREATE UNIQUE INDEX source_mappings_unique ON source_mappings (app, ad_network_id, source_identifier, coalesce(country, ''), coalesce(publisher, ''), valid_from);
                """)
        }
        migrator.registerMigration("v30-exchange-rates-view") { db in
            // The imported exchange rates as SQL reads them: each pair's rate with the days it is in force, as reports
            // convert (the rate of the amount's day, else the latest before; issue 49, deliverable 2). Frozen text.
            try db.execute(sql: """
                CREATE VIEW exchange_rates_daily AS
                SELECT from_currency, to_currency, day AS valid_from,
                       lead(day) OVER (PARTITION BY from_currency, to_currency ORDER BY day) AS valid_until,
                       rate, import_id
                FROM exchange_rates;
                """)
        }
        migrator.registerMigration("v31-alerts") { db in
            // Alert rules with what each remembers between checks (firing since when, the last digest's day) and its
            // deliveries, and the outbox of alerts to deliver: one row per occurrence (UNIQUE rule and key) holding the
            // alert as JSON (the rule's format is made from it when sent), until delivered (deleted, the rule's
            // `delivered` counted) or dead (issue 49, deliverable 6). Frozen text.
            try db.execute(sql: """
                CREATE TABLE alert_rules (
                    name TEXT PRIMARY KEY,
                    kind TEXT NOT NULL,
                    url TEXT NOT NULL,
                    format TEXT NOT NULL,
                    app INTEGER,
                    ad_network_id TEXT,
                    partner TEXT,
                    hours REAL,
                    threshold REAL,
                    minimum INTEGER NOT NULL,
                    hour INTEGER NOT NULL,
                    time_zone TEXT NOT NULL,
                    currency TEXT,
                    updated_at TEXT NOT NULL,
                    firing INTEGER NOT NULL DEFAULT 0,
                    firing_since TEXT,
                    last_digest_day TEXT,
                    last_checked_at TEXT,
                    last_summary TEXT,
                    delivered INTEGER NOT NULL DEFAULT 0,
                    dropped INTEGER NOT NULL DEFAULT 0,
                    last_delivered_at TEXT,
                    last_answer TEXT,
                    last_error TEXT
                );
                CREATE TABLE alert_outbox (
                    id INTEGER PRIMARY KEY,
                    rule TEXT NOT NULL,
                    event_key TEXT NOT NULL,
                    state TEXT NOT NULL DEFAULT 'pending',
                    body BLOB NOT NULL,
                    attempts INTEGER NOT NULL DEFAULT 0,
                    created_at TEXT NOT NULL,
                    deadline REAL NOT NULL,
                    next_attempt_at REAL NOT NULL,
                    claim_id TEXT,
                    claimed_until REAL,
                    last_attempt_at TEXT,
                    last_answer TEXT,
                    last_error TEXT,
                    UNIQUE (rule, event_key)
                );
                CREATE INDEX alert_outbox_due ON alert_outbox(next_attempt_at) WHERE state = 'pending';
                CREATE INDEX alert_outbox_rule ON alert_outbox(rule, state, id);
                """)
        }
        migrator.registerMigration("v32-forward-outbox-claimed") { db in
            // A partner's live claims by when they lapse: what each claim counts against the partner's concurrency
            // walked every pending entry of the partner before, so draining a backlog cost its square (issue 48).
            // Frozen text.
            try db.execute(sql: """
                CREATE INDEX forward_outbox_claimed ON forward_outbox(partner, claimed_until) WHERE state = 'pending';
                """)
        }
        return migrator
    }
}
