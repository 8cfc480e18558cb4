import GRDB

/// The database layout, as versioned migrations run at start.
enum StoreSchema {
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
            try db.execute(sql: Self.conversionsView)
            try db.execute(sql: Self.eventsAndDailyViews)
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
            try db.execute(sql: Self.conversionsView.replacingOccurrences(of: "p.duplicates, p.replays", with: "p.event_count, p.duplicates, p.replays"))
            try db.execute(sql: Self.eventsAndDailyViews)
        }
        return migrator
    }

    /// The `conversions` view as migration v3 made it (v4 adds `event_count`).
    static let conversionsView = """
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
                """

    /// The views built on `conversions`.
    static let eventsAndDailyViews = """
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
                """
}
