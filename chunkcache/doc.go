// Package chunkcache is the loader's local cache of immutable objects
// (chunks, and any other content-addressed object), bounded in bytes, least
// recently used out first, shared by the processes of one machine.
//
// # Basics
//
// Keys are storage keys ("chunks/ab/ab12..."). loch names objects by the
// XXH3-128 of their bytes, so the bytes under a key never change, snapshots
// and branches that hold the same chunk share its cache entry, and nothing
// is ever invalidated. Open a Disk cache in a directory and use it from any
// number of goroutines and processes:
//
//	c, err := chunkcache.Open("/local/ssd/loch-cache", 100<<30, nil)
//	...
//	defer c.Close()
//	data, ok, err := c.Get(ctx, key)
//	if !ok {
//		data = fetch(key)
//		_ = c.Put(ctx, key, data) // errors wrapping ErrCacheWrite may be ignored
//	}
//
// Memory is the same in a process's memory. Both implement Cache and pass
// the conformance suite in package chunkcachetest.
//
// # Verification
//
// When a key's last segment is a content hash (32 lowercase hex digits),
// Put refuses data that does not hash to it (ErrCorrupt) and Disk.Get hashes
// what it read: a file that does not match (a flipped bit, a file cut short
// by a machine crash) is removed and reported as a miss, never returned. The
// check runs at the speed of XXH3 (see the benchmarks); Options.NoVerify turns
// it off. Objects under other keys are not verified.
//
// Both caches also read part of an object (RangeReader: one pread for
// Disk). A hash covers the whole object, so range reads are not verified
// by the cache: the caller checks what it reads (loch checks chunk headers
// and blocks against their CRC-32C checksums, and on a mismatch calls Get,
// which verifies the whole file and drops it if it is damaged). A Disk file
// shorter than the range asked for, under a content-hash key, is dropped
// as one cut short.
//
// # Disk layout
//
// A Disk cache's directory holds:
//
//	objects/<key>   one file per object, at the path its key names; loch's
//	                chunk keys fan out over 256 directories by their first
//	                two hex digits ("chunks/ab/ab12...")
//	tmp/put-*       temporary files of Puts in progress
//	state           16 bytes: "LCC1", 4 zero bytes, then the recorded total
//	                length of the objects (int64, little-endian)
//	users.lock      empty; every open Disk holds a shared flock on it
//	locks/<hhh>     empty; a user filling a missing object holds an
//	                exclusive flock on the file its key's XXH3 picks
//	                (3 hex digits, 4096 files, made as needed): its turn
//	                (Filler)
//
// Put writes a temporary file, then renames it into objects/ (atomic: a
// reader sees the whole object or none). Directories are created as needed
// and never removed. Keys are checked with ValidateKey before any I/O, so a
// key cannot name a path outside objects/.
//
// # Recency
//
// An object's recency is its file's modification time. Put sets it; a hit
// sets it to now if it is at least Options.TouchInterval old (default one
// second), so a hot object costs at most one metadata write per interval and
// eviction is least-recently-used to within that interval (exact with a
// negative interval). Eviction takes the files with the oldest times first:
// a directory scan keeps the 1024 least recently used as candidates, and a
// candidate whose time changed since the scan is skipped, as it is then more
// recent than any candidate left; when the candidates run out the next
// eviction scans again.
//
// # Size accounting and the bound
//
// The state file records the total length T of the objects. Every change to
// objects/ (rename into place, eviction, removal of a corrupt file) and to T
// happens while holding an exclusive flock on the state file, so processes
// take turns; Gets take no lock. A Put adds its length to T before its
// rename and subtracts evicted lengths after their removal, so a process
// that dies at any point leaves T at least the true total. Removing a
// corrupt file clears T (its recorded length is unknown), and the next
// operation under the lock recounts before it uses T. Scans recount T
// exactly: when eviction runs out of candidates, when T is cleared or
// unreadable, and at an Open that finds no other user.
//
// Let S be the total length of the files in objects/ (lengths, not disk
// blocks; directories and the two small files not counted). Provided only
// this package changes the directory and every process uses the same
// budget B:
//
//   - Whenever no process holds the state lock, S ≤ T, and after each Put
//     T ≤ B. In particular, once a Put returns while no other Put is in
//     progress, S ≤ B exactly.
//   - Each Put in progress also holds at most one temporary file of its
//     object's length, from before it takes the lock until its rename; so at
//     any instant, objects/ and tmp/ hold at most B plus the lengths of the
//     objects being Put (B + P·C for P concurrent Puts of chunks of at most C
//     bytes).
//   - A process killed during a Put may leave one such temporary file. It is
//     removed by the next Open that finds no other user, or by a scan or
//     Open once it is Options.StaleTempAge old (default 15 minutes). Killed
//     between its rename and its eviction, it leaves S ≤ T ≤ B plus its
//     object's length, until the next Put or Open evicts.
//
// A Put of an object larger than B is refused (ErrCacheWrite).
//
// # Sharing between processes
//
// Eviction unlinks files, which does not disturb a process that has one open
// (on Unix, the data stays until it is closed); a Get that comes after finds
// nothing, a miss (a ReadRange, within one TouchInterval: see Open files). Concurrent Puts of one key store it once: the rename
// happens under the lock after checking that the key is absent. A Get racing
// with an eviction may have its recency mark lost; it still gets its bytes.
// Users that miss one key at the same time take turns at fetching and
// putting it (FillTurn, see Filler), so that a node's processes fetch each
// object from its origin once.
//
// # Open files
//
// A Disk handle keeps the files of the objects it reads by range open
// (read-only, at most Options.OpenFiles, default 256, the least recently
// read closed first), so that a range read of a held object is one pread,
// without the open, stat and close around it. This is sound because an
// object's bytes never change: the Cache contract requires it of every
// key, and every key loch caches names content (chunks, fts/ and vectors/
// objects are named by the XXH3-128 of their bytes, docs/format.md §1);
// Put never overwrites a cached key (the rename
// happens only while the key is absent), and a file is only ever removed
// (eviction, a corrupt file), never written in place. A held file is
// therefore either the object at its path or an unlinked file with the
// same bytes.
//
// A handle closes a held file when it removes the object itself (eviction,
// a corrupt file), when a read finds the file shorter than at its open, and
// at Close. Another process's eviction it notices when the object's recency
// mark is due (at most once per TouchInterval a hit stats the path): if the
// path is gone or names another file, the held file is closed and the path
// opened again, so a range read misses an object another process evicted
// at most one TouchInterval late (at once with a negative interval), and
// until then reads the evicted object's unchanged bytes. An unlinked file
// keeps its disk space while it is held: besides the bound below, each
// handle may hold up to OpenFiles objects that other processes evicted,
// each until the handle reads it again, has read OpenFiles others since,
// or closes. Get does not use the held files (it reads whole objects,
// which it hashes).
//
// # Caveats
//
//   - The directory must be on a local file system with flock(2) (ext4,
//     xfs, btrfs, tmpfs); Disk is not available where flock is not (Open
//     fails with errors.ErrUnsupported). Recency is as fine as the file
//     system's modification times (nanoseconds on those four).
//   - Files are made 0644 and directories 0755: one user owns the cache.
//   - Put does not fsync. After a machine crash, objects with content-hash
//     keys are verified on Get; others may be damaged.
//   - A key cannot be both an object and a prefix of another ("a" and "a/b"):
//     the second Put fails with ErrCacheWrite, as in a local storage.Store.
//   - An Open that finds no other user walks the whole directory.
package chunkcache
