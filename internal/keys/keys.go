// Package keys is the object layout of a loch dataset, specified in
// docs/format.md §1: it makes and parses every key below a dataset's root,
// as Pebble's MakeFilename and ParseFilename do for its files. No other
// code spells a key.
//
//	_loch/dataset          the dataset marker
//	_loch/leases/<id>      a writer's lease (format 1.9)
//	_loch/expired/<id>     the marker of a commit collected by retention (format 1.9)
//	log/<seq>              root entries (seq: 20 decimal digits)
//	log/_latest            the latest-entry hint
//	commits/<id>           commits
//	manifests/<hash>       manifests
//	fragments/<hash>       fragments
//	extensions/<hash>      fragment extensions
//	deletions/<hash>       deletion vectors
//	chunks/<h2>/<hash>     chunks (h2: the hash's first two hex digits)
//	selections/<hash>      saved selections (format 1.2)
//	indexes/<commit id>/<uid>.<metric>
//	                       vector index descriptors (format 1.5)
//	vectors/<hash>         vector index centroids and lists (format 1.5)
//
// and of a catalog (§6), beside them under the same root:
//
//	_catalog/log/<seq>     catalog entries
//	_catalog/log/_latest   the latest-entry hint
//	tables/<dir>/          one table: a dataset rooted there
//
// Ids and hashes are 32 lowercase hex digits.
package keys

import (
	"fmt"
	"strconv"
	"strings"
)

// Kind is the kind of object a key names.
type Kind uint8

// The kinds of objects.
const (
	Invalid Kind = iota
	Marker
	Log
	Latest
	Commit
	Manifest
	Fragment
	Extension
	Deletion
	Chunk
	Selection
	Index   // a vector index descriptor, indexes/<commit id>/<uid>.<metric> (format 1.5)
	Vectors // a vector index's centroids or list, vectors/<hash> (format 1.5)
	Lease   // a writer's lease, _loch/leases/<id> (format 1.9)
	Expired // the marker of a commit collected by retention, _loch/expired/<commit id> (format 1.9)
	Text    // a full-text index's segment, fts/<hash> (format 1.11)
)

// Fixed keys and the prefix of the log.
const (
	MarkerKey = "_loch/dataset"
	LatestKey = "log/_latest"
	LogPrefix = "log/"
	// LeasePrefix and ExpiredPrefix hold writers' leases and the
	// markers of commits collected by retention (docs/format.md §5.1,
	// §5.2).
	LeasePrefix   = "_loch/leases/"
	ExpiredPrefix = "_loch/expired/"
)

// The catalog's keys (docs/format.md §6).
const (
	CatalogLogPrefix = "_catalog/log/"
	TablesPrefix     = "tables/"
)

// CatalogFolder reports whether name is one of the folders a catalog's
// root reserves: the first element of CatalogLogPrefix or TablesPrefix. A
// dataset or catalog there would mix its keys with the catalog's.
func CatalogFolder(name string) bool {
	return name+"/" == TablesPrefix || strings.HasPrefix(CatalogLogPrefix, name+"/")
}

// hintName is the last segment of a log's latest-entry hint.
const hintName = "_latest"

// IDLen is the length of an object id or content hash in hex digits.
const IDLen = 32

var dirs = [...]string{Commit: "commits", Manifest: "manifests", Fragment: "fragments",
	Extension: "extensions", Deletion: "deletions", Chunk: "chunks", Selection: "selections",
	Index: "indexes", Vectors: "vectors", Text: "fts"}

// Hashed lists the kinds named by an id, in the order gc deletes them.
var Hashed = []Kind{Selection, Index, Commit, Manifest, Fragment, Extension, Deletion, Chunk, Vectors, Text}

// ContentAddressed reports whether an object of kind k is named by its
// content hash (docs/format.md §1): every hashed kind but Index, whose id
// is a commit's.
func (k Kind) ContentAddressed() bool { return k.Dir() != "" && k != Index }

// Dir is the directory of a hashed kind ("commits", ..., "chunks"), its
// name in reports; "" for other kinds.
func (k Kind) Dir() string {
	if int(k) < len(dirs) {
		return dirs[k]
	}
	return ""
}

// Prefix is the prefix of every key of a hashed kind ("commits/", ...,
// "chunks/"); "" for other kinds.
func (k Kind) Prefix() string {
	if d := k.Dir(); d != "" {
		return d + "/"
	}
	return ""
}

func (k Kind) String() string {
	switch k {
	case Marker:
		return "marker"
	case Log:
		return "log"
	case Latest:
		return "latest"
	case Lease:
		return "lease"
	case Expired:
		return "expired"
	}
	if d := k.Dir(); d != "" {
		return d
	}
	return fmt.Sprintf("Kind(%d)", uint8(k))
}

// Make returns the key of the object of hashed kind k with the given id.
// It panics on a kind that is not hashed (a broken invariant); the id is
// not checked (see ValidID).
func Make(k Kind, id string) string {
	switch {
	case k == Chunk && len(id) >= 2:
		return "chunks/" + id[:2] + "/" + id
	case k.Dir() != "" && k != Chunk:
		return k.Prefix() + id
	}
	panic(fmt.Sprintf("keys: Make(%v, %q)", k, id))
}

// MakeLease returns the key of the lease of the writer whose stage has
// nonce id.
func MakeLease(id string) string { return LeasePrefix + id }

// MakeExpired returns the key of the marker of commit id, collected by
// version retention.
func MakeExpired(id string) string { return ExpiredPrefix + id }

// MakeLog returns the key of root entry seq.
func MakeLog(seq uint64) string { return MakeLogIn(LogPrefix, seq) }

// MakeLogIn returns the key of entry seq of the sequence-numbered log
// under prefix (LogPrefix or CatalogLogPrefix): the prefix and seq in 20
// zero-padded decimal digits.
func MakeLogIn(prefix string, seq uint64) string { return fmt.Sprintf("%s%020d", prefix, seq) }

// LatestIn returns the key of the latest-entry hint of the log under
// prefix (LatestKey for LogPrefix).
func LatestIn(prefix string) string { return prefix + hintName }

// ParseLogIn returns the sequence number of an entry key of the log under
// prefix.
func ParseLogIn(prefix, key string) (uint64, bool) {
	rest, ok := strings.CutPrefix(key, prefix)
	if !ok || len(rest) != 20 {
		return 0, false
	}
	seq, err := strconv.ParseUint(rest, 10, 64)
	return seq, err == nil
}

// MakeTable returns the root (a prefix ending in '/') of the table in
// directory dir of a catalog.
func MakeTable(dir string) string { return TablesPrefix + dir + "/" }

// Parse reports the kind of object key names and its id: the hex id of a
// hashed kind, the decimal sequence number of a log entry, "" for the
// marker and the hint. A key of no kind gives ok false.
func Parse(key string) (k Kind, id string, ok bool) {
	switch key {
	case MarkerKey:
		return Marker, "", true
	case LatestKey:
		return Latest, "", true
	}
	for _, m := range [...]struct {
		prefix string
		kind   Kind
	}{{LeasePrefix, Lease}, {ExpiredPrefix, Expired}} {
		if id, ok := strings.CutPrefix(key, m.prefix); ok {
			if !ValidID(id) {
				return Invalid, "", false
			}
			return m.kind, id, true
		}
	}
	dir, rest, found := strings.Cut(key, "/")
	if !found {
		return Invalid, "", false
	}
	if dir == "log" {
		if _, err := strconv.ParseUint(rest, 10, 64); err != nil || len(rest) != 20 {
			return Invalid, "", false
		}
		return Log, rest, true
	}
	for _, k := range Hashed {
		if dirs[k] != dir {
			continue
		}
		if k == Index { // <commit id>/<uid>.<metric>
			if _, _, _, ok := ParseIndex(key); !ok {
				return Invalid, "", false
			}
			return Index, rest, true
		}
		if k == Chunk {
			h2, hash, found := strings.Cut(rest, "/")
			if !found || !ValidID(hash) || h2 != hash[:2] {
				return Invalid, "", false
			}
			return Chunk, hash, true
		}
		if !ValidID(rest) {
			return Invalid, "", false
		}
		return k, rest, true
	}
	return Invalid, "", false
}

// MakeIndex returns the key of the descriptor of the vector index of
// column uid for metric at commit id (docs/format.md §2.8):
// indexes/<commit id>/<uid>.<metric>.
func MakeIndex(commit string, uid int, metric string) string {
	return Index.Prefix() + commit + "/" + strconv.Itoa(uid) + "." + metric
}

// ParseIndex splits the key of a vector index's descriptor into its commit
// id, column uid (decimal, no leading zeros) and metric (lowercase letters
// and digits; which metrics exist is package vindex's). ok is false for
// any other key.
func ParseIndex(key string) (commit string, uid int, metric string, ok bool) {
	rest, found := strings.CutPrefix(key, Index.Prefix())
	if !found {
		return "", 0, "", false
	}
	commit, name, found := strings.Cut(rest, "/")
	u, metric, dot := strings.Cut(name, ".")
	if !found || !dot || !ValidID(commit) || metric == "" || !isLower(metric) || u == "" || !isDigits(u) {
		return "", 0, "", false
	}
	n, err := strconv.Atoi(u)
	if err != nil || strconv.Itoa(n) != u {
		return "", 0, "", false
	}
	return commit, n, metric, true
}

// ParseLog returns the sequence number of a root entry's key.
func ParseLog(key string) (uint64, bool) {
	k, id, ok := Parse(key)
	if !ok || k != Log {
		return 0, false
	}
	seq, err := strconv.ParseUint(id, 10, 64)
	return seq, err == nil
}

// ValidID reports whether s is an object id: 32 lowercase hex digits.
func ValidID(s string) bool { return len(s) == IDLen && IsHex(s) }

// IsHex reports whether s is made of lowercase hex digits only.
func IsHex(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

func isDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

func isLower(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < 'a' || c > 'z') && (c < '0' || c > '9') {
			return false
		}
	}
	return true
}
