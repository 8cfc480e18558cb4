import Foundation
import GRDB

/// Online copies of an SQLite store, safe while receivers write to it: SQLite's backup API reads one consistent
/// snapshot (a read transaction, which in WAL mode never blocks writers) into a new file.
public struct StoreBackup: Sendable {
    let engine: any DatabaseEngine

    /// Why a backup could not be made.
    public enum Failure: Error, CustomStringConvertible {
        /// The store is on PostgreSQL, whose own tools do this.
        case postgres
        /// Something is already at the target path.
        case targetExists(String)
        /// The copy failed SQLite's integrity check.
        case damaged(String)
        /// The file could not be written where asked.
        case cannotWrite(String, reason: String)
        /// The temporary file beside the target exists (an earlier backup that did not finish?).
        case partialExists(String)

        public var description: String {
            switch self {
            case .postgres: "backup copies SQLite databases; for PostgreSQL use pg_dump --format=custom or continuous archiving (docs/operations.md)"
            case .targetExists(let path): "\(path) exists; choose a new file name (a backup never overwrites anything)"
            case .damaged(let answer): "the copy failed SQLite's integrity check (\(answer)); it was removed"
            case .cannotWrite(let path, let reason): "cannot write \(path): \(reason); choose a directory you can write to"
            case .partialExists(let path): "\(path) exists (an earlier backup that did not finish?); remove it or choose another name"
            }
        }
    }

    /// What a backup wrote.
    public struct Summary: Sendable {
        /// Bytes in the backup file.
        public let bytes: Int
        /// Stored postbacks in the backup.
        public let postbacks: Int
    }

    /// Copies the database into a new file at `path` (written beside it under a temporary name, checked with
    /// `PRAGMA integrity_check`, then renamed into place), calling `progress` with pages done and pages in all.
    public func write(to path: String, progress: @escaping @Sendable (_ done: Int, _ total: Int) -> Void) throws -> Summary {
        guard let sqlite = engine as? SQLiteEngine else { throw Failure.postgres }
        // lstat, not stat: a symbolic link is something at the path, even when it points nowhere.
        var status = stat()
        guard lstat(path, &status) != 0 else { throw Failure.targetExists(path) }
        let partial = path + ".partial"
        // What an earlier backup left may be someone's; it is never silently replaced.
        guard lstat(partial, &status) != 0 else { throw Failure.partialExists(partial) }
        do {
            let target = try DatabaseQueue(path: partial)
            try sqlite.pool.backup(to: target, pagesPerStep: 1024) { step in progress(step.completedPageCount, step.totalPageCount) }
            let (check, postbacks) = try target.read { db in
                (try String.fetchOne(db, sql: "PRAGMA integrity_check") ?? "", try Int.fetchOne(db, sql: "SELECT count(*) FROM postbacks") ?? 0)
            }
            try target.close()
            guard check == "ok" else { throw Failure.damaged(check) }
            // A hard link never replaces what appeared at the path meanwhile (rename would).
            guard link(partial, path) == 0 else {
                throw errno == EEXIST ? Failure.targetExists(path) : Failure.cannotWrite(path, reason: String(cString: strerror(errno)))
            }
            unlink(partial)
            let bytes = (try FileManager.default.attributesOfItem(atPath: path)[.size] as? NSNumber)?.intValue ?? 0
            return Summary(bytes: bytes, postbacks: postbacks)
        } catch {
            for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: partial + suffix) }
            if error is Failure { throw error }
            throw Failure.cannotWrite(path, reason: (error as? DatabaseError)?.message ?? "\(error)")
        }
    }
}
