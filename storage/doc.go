// Package storage is loch's object-storage layer: a flat key space of
// objects (Store) over a local directory, a memory bucket, Amazon S3 or an
// S3-compatible store such as MinIO, Google Cloud Storage or Azure Blob
// Storage, all named by one URL form (see Open).
//
// # Basics
//
// Open a store by URL, use it from any number of goroutines, close it:
//
//	st, err := storage.Open(ctx, "s3://bucket/datasets/cifar")
//	...
//	defer st.Close()
//	err = st.PutIfAbsent(ctx, "refs/main", commitID)
//
// Objects are written whole: Put replaces atomically and PutIfAbsent
// creates atomically or fails with ErrExists, with respect to every other
// writer, other processes and machines included; this is what loch's
// commits build on. On the local backend PutIfAbsent is a hard link of a
// synced temporary file (atomic across processes); on S3 it is a
// conditional PUT (If-None-Match: *), on GCS a generation-0 precondition,
// on Azure If-None-Match: *.
//
// Sub gives a view of the keys below a prefix of a store, itself a Store
// (a catalog's tables are datasets on such views of the catalog's root).
//
// # Keys
//
// Keys are relative, '/'-separated and checked before any I/O (see
// ValidateKey): no empty, "." or ".." segments, no backslashes, no control
// characters; a key can never escape the store's root. Invalid keys give
// errors wrapping ErrInvalidKey.
//
// # Errors
//
// Failures are *Error values naming the operation, the store's URL and the
// key, wrapping one of the sentinels when it applies: ErrNotFound (a
// missing object, or a missing bucket, said so), ErrExists, ErrPermission
// (missing or refused credentials), ErrInvalidURL, ErrInvalidKey,
// ErrTransient. Branch with errors.Is. ErrNotFound, ErrExists and
// ErrPermission are loch's shared sentinels (internal/base, re-exported as
// loch.ErrNotFound, ...), and ErrInvalidURL and ErrInvalidKey match
// loch.ErrInvalidArgument, so the engine passes these errors on without
// translating them. Messages never hold credentials.
//
// # Retries
//
// The store Open returns retries transient failures (timeouts, throttling,
// HTTP 5xx, reset and refused connections, truncated reads) with capped
// exponential backoff and full jitter, within a RetryPolicy, and counts
// the retries and the time spent retrying (see RetryStore, RetryStats and
// RetryCounter). The policy bounds retries by time: by default an
// operation keeps trying for 60 s from its first failure (Budget), so
// that a server restart or a failover of up to 30 s, start-up included,
// costs a stall, not a failed job; $LOCH_STORAGE_RETRY_BUDGET,
// Settings.RetryBudget or WithRetryPolicy change it, and MaxAttempts
// ($LOCH_STORAGE_ATTEMPTS) bounds the count as well. Not found, exists,
// permission and invalid key or URL are never retried. A put-if-absent
// whose reply was lost is told apart from a lost race by reading the
// object back (see RetryStore), which keeps commits exactly-once. The
// cloud SDKs' own retries are turned off, so the policy is the only one
// in force.
//
// # Integrity
//
// A store moves bytes; it does not check them. The objects loch stores
// carry their own checks, made by their readers (docs/format.md §1):
// metadata, vector and index objects hash to their names or end in a
// CRC-32C, chunks have a header and block checksums, and chunkcache hashes
// what it caches. So on S3 the SDK does not checksum responses
// (ResponseChecksumValidation is WhenRequired: it would compute a CRC-32
// of every whole-object GET that was stored with one, about 6% of the CPU
// of a full-shuffle epoch filling a cache, only to repeat loch's checks).
// Uploads keep the SDK's default, a checksum the server verifies before it
// stores the object (the URL parameter request_checksum_calculation=
// when_required turns it off, for servers that refuse it): a corruption
// in transit is then refused at once instead of found by the next reader,
// after the writer's copy is gone.
//
// # Testing
//
// NewFaulty wraps a store to inject transient failures and latency,
// deterministically from a seed. Package storagetest holds the conformance
// suite every Store passes; internal/testserver runs MinIO,
// fake-gcs-server and Azurite for tests.
//
// # Caveats
//
//   - A local directory cannot hold both "a" and "a/b" as objects, as an
//     object store can.
//   - mem:// buckets live for the life of the process, shared by name.
//   - On S3, objects of 16 MiB and more are uploaded in parts; the AWS
//     transfer manager then logs (through the standard log package) a
//     PutIfAbsent that found the key present.
package storage
