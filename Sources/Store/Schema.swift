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
        return migrator
    }
}
